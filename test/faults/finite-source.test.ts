/**
 * A finite source drains (docs/runtime.md §1.3): a `file` source read once into a rest sink whose target answers
 * slowly; every row that passes the WHERE reaches the target before the rule stops, and the status says that the
 * rule finished because its source ended, not that somebody cancelled it. Eddy runs as a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEddyProcess } from '../helpers/eddy-process.js';
import { waitFor } from '../helpers/process.js';

test('file source read once into a slow rest sink: every row is delivered, then the rule says its source ended', async () => {
  const received: unknown[] = [];
  // each answer takes a while, so that rows are still being sent when the file has been read
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () =>
      setTimeout(() => {
        received.push(JSON.parse(body));
        res.writeHead(200).end('ok');
      }, 300),
    );
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const addr = http.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const home = mkdtempSync(join(tmpdir(), 'eddy-faults-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'eddy-finite-'));
  const rows = Array.from({ length: 40 }, (_, i) => JSON.stringify({ i, temperature: i % 3 === 0 ? 20 : 60 }));
  writeFileSync(join(dataDir, 'rows.txt'), rows.join('\n') + '\n');
  const eddy = await startEddyProcess(home);
  try {
    let r = await eddy.req('PUT', '/metadata/sources/file/confKeys/lines', { fileType: 'lines', path: dataDir });
    assert.ok(r.status < 300, r.text);
    r = await eddy.req('POST', '/streams', {
      sql: 'CREATE STREAM finite () WITH (TYPE="file", CONF_KEY="lines", DATASOURCE="rows.txt", FORMAT="json")',
    });
    assert.equal(r.status, 201, r.text);
    r = await eddy.req('POST', '/rules', {
      id: 'finite',
      sql: 'SELECT i FROM finite WHERE temperature > 50',
      actions: [{ rest: { url: `http://127.0.0.1:${port}/in`, method: 'post', sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    let status: { status?: string; message?: string } = {};
    await waitFor(
      async () => {
        status = (await eddy.req('GET', '/rules/finite/status')).json() as typeof status;
        return status.status === 'stopped';
      },
      60_000,
      'the rule to finish',
      100,
    );
    const expected = rows
      .map((l) => JSON.parse(l) as { i: number; temperature: number })
      .filter((x) => x.temperature > 50)
      .map((x) => ({ i: x.i }));
    assert.deepEqual(received, expected);
    assert.equal(status.message, 'Stopped: finished, its source ended and every record was delivered.');
  } finally {
    await eddy.stop();
    await new Promise((resolve) => http.close(resolve));
    rmSync(home, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  }
});
