/**
 * `POST /data/import?stop=1` on a real server process: it answers, exits with status 100 about a second later, and
 * the next start serves the imported data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestServer } from '../helpers/server.js';
import { uid } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('a full import with stop=1 answers, then the server exits with status 100; the data is there at the next start', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-stop-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      EDDY_HOME: home,
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__CONSOLELOG: 'false',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no start within 60 s: ${out}`)), 60000);
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = /REST API on (http:\/\/\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.once('exit', () => reject(new Error(`exited before serving: ${out}`)));
    });
    const stream = uid('stop_s');
    const bundle = { streams: { [stream]: `CREATE STREAM ${stream} () WITH (DATASOURCE="stop/${stream}")` } };
    const res = await fetch(`${url}/data/import?stop=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: JSON.stringify(bundle) }),
    });
    // timed from the answer's arrival, before reading it (slow on a loaded machine)
    const started = Date.now();
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(((await res.json()) as { ErrorMsg: string }).ErrorMsg, '');
    assert.equal(await exited, 100);
    assert.ok(Date.now() - started >= 500, 'the exit comes after the answer, not with it');

    const again = await startTestServer({ home });
    try {
      assert.deepEqual((await again.req('GET', '/streams')).json(), [stream]);
    } finally {
      await again.stop();
    }
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }
});
