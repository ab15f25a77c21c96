/**
 * `npm start` as an operator sees it: the banner names the addresses really bound, the home, the store and the log
 * outputs, and with `basic.consoleLog` the console shows readable lines, not JSON.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;

async function waitFor<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('npm start prints the real addresses and readable console logs', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-start-'));
  const child = spawn(process.execPath, [join(root, 'scripts/start.mjs')], {
    env: {
      ...process.env,
      EDDY_HOME: home,
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__CONSOLELOG: 'true',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  try {
    const url = await waitFor('the banner', () => /REST API on (http:\/\/127\.0\.0\.1:(\d+))/.exec(out)?.[1]);
    await waitFor('the whole banner', () => (/ logs +console/.test(out) ? true : undefined));
    assert.notEqual(new URL(url).port, '0');
    assert.match(out, new RegExp(`home +${home.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.match(out, /store +sqlite .*sqliteKV\.db/);
    assert.match(out, new RegExp(`web console +${url}/console/`));
    assert.equal((await fetch(`${url}/ping`)).status, 200);

    const name = `start_${process.pid}`;
    let res = await fetch(`${url}/streams`, {
      method: 'POST',
      body: JSON.stringify({
        sql: `CREATE STREAM ${name} () WITH (TYPE="httppush", DATASOURCE="/${name}", FORMAT="json")`,
      }),
    });
    assert.equal(res.status, 201, await res.text());
    res = await fetch(`${url}/rules`, {
      method: 'POST',
      body: JSON.stringify({ id: name, sql: `SELECT * FROM ${name}`, actions: [{ log: {} }] }),
    });
    assert.equal(res.status, 201, await res.text());
    const dataUrl = await waitFor(
      'the data server',
      () => /data server listening on 127\.0\.0\.1:(\d+)/.exec(out)?.[1],
    );
    await waitFor('the pushed message in the log', async () => {
      await fetch(`http://127.0.0.1:${dataUrl}/${name}`, { method: 'POST', body: '{"temperature":51}' }).catch(
        () => undefined,
      );
      return out.includes('{"temperature":51}') ? true : undefined;
    });
    const line = out.split('\n').find((l) => l.includes('{"temperature":51}'))!;
    assert.match(line, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z INFO +\\[rule=${name}\\] `));
    assert.ok(!out.split('\n').some((l) => l.startsWith('{"level"')), 'no JSON line on the console');
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    rmSync(home, { recursive: true, force: true });
  }
});
