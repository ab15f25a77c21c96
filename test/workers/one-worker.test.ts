/**
 * One worker is still a worker (docs/runtime.md §1.10): the real server as a child process with `basic.workers: 1`
 * runs a rule on worker 0, not on the thread of the REST API. A rule whose one record holds that worker is reported
 * by the API meanwhile (`workerStatus`), stopped past `basic.ruleEvalLimit` with a status naming it, and its
 * neighbour opens again on the replacement worker and delivers. `basic.workers: none` is the explicit way back to
 * every rule on the main thread.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEddyProcess, type EddyProcess } from '../helpers/eddy-process.js';
import { startTestServer } from '../helpers/server.js';
import { publisher, subscriber, uniqueTopic } from '../connectors/helpers.js';
import { feed, status, type J } from './helpers.js';

/** A request that gives up after 30 s, so a server whose one thread is held fails the test instead of hanging it. */
async function ask(eddy: EddyProcess, path: string): Promise<{ status: number; body: J }> {
  const r = await fetch(eddy.url + path, { signal: AbortSignal.timeout(30_000) });
  const text = await r.text();
  return { status: r.status, body: (text.startsWith('{') ? JSON.parse(text) : { text }) as J };
}

async function statusUntil(eddy: EddyProcess, id: string, what: string, ok: (st: J) => boolean): Promise<J> {
  const end = Date.now() + 60_000;
  for (;;) {
    const r = await ask(eddy, `/rules/${id}/status`);
    assert.equal(r.status, 200);
    if (ok(r.body)) return r.body;
    assert.ok(Date.now() < end, `${what}; the last status: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

test('basic.workers 1: a rule runs on worker 0; one holding that worker is reported and stopped while the API answers, its neighbour delivers again', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-one-worker-'));
  const eddy = await startEddyProcess(home, { KUIPER__BASIC__WORKERS: '1', KUIPER__BASIC__RULEEVALLIMIT: '1000' });
  const topic = uniqueTopic('one');
  const sub = await subscriber(`${topic}/out`);
  const pub = await publisher();
  let passed = false;
  try {
    const create = async (path: string, body: J) => {
      const r = await eddy.req('POST', path, body);
      assert.equal(r.status, 201, r.text);
    };
    await create('/streams', {
      sql: `CREATE STREAM onein (n BIGINT, temperature FLOAT) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
    });
    await create('/rules', {
      id: 'light',
      sql: 'SELECT n FROM onein WHERE temperature > 50',
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out`, sendSingle: true } }],
    });
    await feed(topic, () => sub.messages.length, 1);
    // the rule runs on the one worker: its status names it
    const light = await statusUntil(eddy, 'light', 'the status names the worker', (st) => st.worker !== undefined);
    assert.equal(light.status, 'running');
    assert.equal(light.worker, 0);

    // each column checksums a 50-million-character string: seconds of synchronous work for one record
    await create('/streams', {
      sql: `CREATE STREAM oneheavy (s STRING) WITH (DATASOURCE="${topic}/heavy", FORMAT="json")`,
    });
    const columns = Array.from({ length: 30 }, (_, i) => `crc32(lpad(s, ${50_000_000 + i})) AS c${i}`).join(', ');
    await create('/rules', { id: 'heavy', sql: `SELECT ${columns} FROM oneheavy`, actions: [{ nop: {} }] });
    assert.equal((await statusUntil(eddy, 'heavy', 'the heavy rule runs', (st) => st.worker === 0)).status, 'running');

    // while the heavy record holds the worker, the API answers and says so
    const publishing = setInterval(() => void pub.publishAsync(`${topic}/heavy`, JSON.stringify({ s: 'x' })), 300);
    try {
      const held = await statusUntil(
        eddy,
        'light',
        'the API reports the held worker',
        (st) => st.workerStatus !== undefined,
      );
      assert.equal(held.workerStatus, 'worker 0 is not answering its heartbeat');
      assert.equal((await ask(eddy, '/ping')).status, 200);
      const list = await ask(eddy, '/rules');
      assert.equal(list.status, 200);
      // past the limit the heavy rule is stopped with a status naming it, and the worker is replaced
      const stopped = await statusUntil(eddy, 'heavy', 'the heavy rule is stopped', (st) => st.status === 'stopped');
      assert.match(
        String(stopped.message),
        /^Stopped: rule heavy was stopped: evaluating one record in op_\d+_project .* took more than 1000 ms \(basic\.ruleEvalLimit\)\.$/,
      );
    } finally {
      clearInterval(publishing);
    }
    // the neighbour opened again on the new worker 0 and delivers
    const before = sub.messages.length;
    await feed(topic, () => sub.messages.length, before + 2, 1000);
    const after = await statusUntil(eddy, 'light', 'the neighbour runs again', (st) => st.workerStatus === undefined);
    assert.deepEqual([after.status, after.worker], ['running', 0]);
    passed = true;
  } finally {
    await pub.endAsync();
    await sub.close();
    // a server whose one thread is held by heavy records would take minutes to stop
    await (passed ? eddy.stop() : eddy.kill9());
    rmSync(home, { recursive: true, force: true });
  }
});

test('basic.workers none: no worker pool, the rule runs on the main thread (its status names no worker)', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: 'none' } });
  const topic = uniqueTopic('none');
  const sub = await subscriber(`${topic}/out`);
  try {
    assert.equal(s.app.workers, undefined);
    let r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM nonein (n BIGINT, temperature FLOAT) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'inproc',
      sql: 'SELECT n FROM nonein WHERE temperature > 50',
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out`, sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    await feed(topic, () => sub.messages.length, 1);
    const st = await status(s, 'inproc');
    assert.equal(st.status, 'running');
    assert.equal('worker' in st, false);
  } finally {
    await sub.close();
    await s.dispose();
  }
});
