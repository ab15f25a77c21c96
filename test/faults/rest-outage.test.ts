/**
 * A rest sink whose target answers 503 for a while (docs/runtime.md §3.5): with `enableCache`, every row is kept and
 * resent in order once the target accepts again; nothing is lost. Eddy runs as a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBroker } from '../helpers/mosquitto.js';
import { startEddyProcess } from '../helpers/eddy-process.js';
import { Publisher } from '../helpers/faults.js';
import { waitFor } from '../helpers/process.js';

test('rest sink target answering 503 for a while, with the cache: every row arrives, in order', async (t) => {
  const count = 2000;
  const accepted: number[] = [];
  let refused = 0;
  let probes = 0;
  let failing = false;
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (failing) {
        refused++;
        res.writeHead(503).end('unavailable');
        return;
      }
      const row = JSON.parse(body) as { n?: number | null };
      if (typeof row.n === 'number') accepted.push(row.n);
      else probes++;
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const addr = http.address();
  const httpPort = typeof addr === 'object' && addr ? addr.port : 0;
  const broker = await startBroker();
  const home = mkdtempSync(join(tmpdir(), 'eddy-faults-'));
  const eddy = await startEddyProcess(home, { MQTT_SOURCE__DEFAULT__SERVER: broker.url });
  const publisher = await Publisher.start(broker.url);
  try {
    let r = await eddy.req('POST', '/streams', {
      sql: 'CREATE STREAM restin () WITH (DATASOURCE="faults/rest/in", FORMAT="json")',
    });
    assert.equal(r.status, 201, r.text);
    r = await eddy.req('POST', '/rules', {
      id: 'restout',
      sql: 'SELECT n FROM restin WHERE temperature > 50',
      actions: [
        {
          rest: {
            url: `http://127.0.0.1:${httpPort}/in`,
            method: 'post',
            sendSingle: true,
            enableCache: true,
            resendInterval: 0,
          },
        },
      ],
    });
    assert.equal(r.status, 201, r.text);
    // the rule reports running before it subscribed: numbered rows start once a probe went through
    await waitFor(
      () => {
        if (probes > 0) return true;
        publisher.probe('faults/rest/in');
        return false;
      },
      60_000,
      'the rule to subscribe',
      200,
    );
    const publishing = publisher.run('faults/rest/in', count, 1000);
    await waitFor(() => accepted.length >= count / 3, 60_000, 'a third of the rows');
    failing = true;
    await sleep(2000);
    failing = false;
    await publishing;
    await waitFor(() => new Set(accepted).size >= count, 120_000, 'every row at the target');
    const distinct = new Set(accepted).size;
    t.diagnostic(
      `sent ${count}, delivered ${distinct}, answered 503: ${refused}, duplicates ${accepted.length - distinct}`,
    );
    assert.ok(refused > 0, 'the target refused rows for a while');
    assert.equal(distinct, count);
    for (let i = 1; i < accepted.length; i++)
      assert.ok(accepted[i] > accepted[i - 1], `in order at ${i}: ${accepted[i - 1]} then ${accepted[i]}`);
  } finally {
    await publisher.close();
    await eddy.stop();
    await broker.stop();
    await new Promise((resolve) => http.close(resolve));
    rmSync(home, { recursive: true, force: true });
  }
});
