/**
 * Memory bounds (docs/runtime.md §1.10), tried on the real server as a child process with two rule workers and the
 * local Mosquitto: a rule whose windows outgrow its `memoryLimit` is stopped with a status saying so while its
 * neighbour on the same worker delivers every message; a worker out of heap (`basic.workerMemoryLimit`) is replaced,
 * the rule filling it stopped, its neighbour opened again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEddyProcess, type EddyProcess } from '../helpers/eddy-process.js';
import { publisher, subscriber, uniqueTopic, until } from '../connectors/helpers.js';

type J = Record<string, unknown>;

async function withEddy(fn: (eddy: EddyProcess) => Promise<void>): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'eddy-isolation-'));
  const eddy = await startEddyProcess(home, { KUIPER__BASIC__WORKERS: '2' });
  try {
    await fn(eddy);
  } finally {
    await eddy.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

async function untilAsync(cond: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Publishes `make(i)` to `topic` every `everyMs` until `stop()` says so (at most `max` messages); how many it sent. */
async function publishUntil(
  topic: string,
  make: (i: number) => string,
  stop: () => Promise<boolean>,
  max: number,
  everyMs = 5,
): Promise<number> {
  const pub = await publisher();
  try {
    let i = 0;
    for (; i < max; i++) {
      await pub.publishAsync(topic, make(i), { qos: 1 });
      if (i % 20 === 19 && (await stop())) return i + 1;
      await new Promise((res) => setTimeout(res, everyMs));
    }
    return i;
  } finally {
    await pub.endAsync();
  }
}

async function ruleStatus(eddy: EddyProcess, id: string): Promise<J> {
  return (await eddy.req('GET', `/rules/${id}/status`)).json() as J;
}

/** A neighbour rule on the same worker as `id`, forwarding `n` of `stream` to `out`. */
async function neighbourOn(eddy: EddyProcess, id: string, stream: string, out: string): Promise<string> {
  const worker = (await ruleStatus(eddy, id)).worker;
  for (let i = 0; i < 50; i++) {
    const nid = `nb${i}_${id}`;
    const r = await eddy.req('POST', '/rules', {
      id: nid,
      sql: `SELECT n FROM ${stream}`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: out, sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    if ((await ruleStatus(eddy, nid)).worker === worker) return nid;
    await eddy.req('DELETE', `/rules/${nid}`);
  }
  throw new Error('no neighbour on the same worker');
}

test('a rule whose window outgrows its memoryLimit is stopped with a status saying so; its neighbour delivers every message', async () => {
  await withEddy(async (eddy) => {
    const topic = uniqueTopic('memlimit');
    const sub = await subscriber(`${topic}/out`);
    try {
      let r = await eddy.req('POST', '/streams', {
        sql: `CREATE STREAM memin (n BIGINT, pad STRING) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
      });
      assert.equal(r.status, 201, r.text);
      r = await eddy.req('POST', '/rules', {
        id: 'hoarder',
        sql: 'SELECT count(*) AS c FROM memin GROUP BY TUMBLINGWINDOW(hh, 1)',
        actions: [{ nop: {} }],
        options: { memoryLimit: 2_000_000 },
      });
      assert.equal(r.status, 201, r.text);
      const neighbour = await neighbourOn(eddy, 'hoarder', 'memin', `${topic}/out`);
      const pad = 'x'.repeat(100_000);
      const sent = await publishUntil(
        `${topic}/in`,
        (n) => JSON.stringify({ n, pad }),
        async () => (await ruleStatus(eddy, 'hoarder')).status !== 'running',
        400,
      );
      const st = await ruleStatus(eddy, 'hoarder');
      assert.equal(st.status, 'stopped', JSON.stringify(st).slice(0, 300));
      assert.match(String(st.message), /memoryLimit of 2000000 bytes/);
      await until(() => sub.messages.length >= sent, 30_000, `the neighbour's ${sent} rows`);
      assert.equal(new Set(sub.messages.map((m) => (JSON.parse(m.text) as J).n)).size, sent);
      assert.equal((await ruleStatus(eddy, neighbour)).status, 'running');
    } finally {
      await sub.close();
    }
  });
});

test('a worker out of memory is replaced: the rule filling it is stopped saying so, its neighbour opens again and delivers', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-isolation-'));
  const eddy = await startEddyProcess(home, {
    KUIPER__BASIC__WORKERS: '2',
    KUIPER__BASIC__WORKERMEMORYLIMIT: '160',
  });
  const topic = uniqueTopic('workeroom');
  const sub = await subscriber(`${topic}/out`);
  try {
    let r = await eddy.req('POST', '/streams', {
      sql: `CREATE STREAM oomin (n BIGINT) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await eddy.req('POST', '/rules', {
      id: 'filler',
      sql: 'SELECT count(*) AS c FROM oomin GROUP BY TUMBLINGWINDOW(hh, 1)',
      actions: [{ nop: {} }],
      // no bound of its own: only the worker's heap limit stops it
      options: { memoryLimit: 0 },
    });
    assert.equal(r.status, 201, r.text);
    const neighbour = await neighbourOn(eddy, 'filler', 'oomin', `${topic}/out`);
    // many small arrays: the shape of allocation a worker's heap limit ends cleanly (nodejs/node#47224 is the other)
    const floats = Array.from({ length: 5000 }, (_, i) => i + 0.5);
    await publishUntil(
      `${topic}/in`,
      (n) => JSON.stringify({ n, floats }),
      async () => (await ruleStatus(eddy, 'filler')).status !== 'running',
      5000,
      2,
    );
    const st = await ruleStatus(eddy, 'filler');
    assert.equal(st.status, 'stopped', JSON.stringify(st).slice(0, 300));
    assert.match(String(st.message), /ran out of memory/);
    // the neighbour runs again on the new worker and delivers what comes now
    await untilAsync(
      async () => (await ruleStatus(eddy, neighbour)).status === 'running',
      30_000,
      'the neighbour running',
    );
    const pub = await publisher();
    try {
      const before = sub.messages.length;
      for (let n = 0; n < 50 && sub.messages.length === before; n++) {
        await pub.publishAsync(`${topic}/in`, JSON.stringify({ n: 1_000_000 + n }), { qos: 1 });
        await new Promise((res) => setTimeout(res, 300));
      }
      assert.ok(sub.messages.length > before, 'the neighbour delivers after the replacement');
    } finally {
      await pub.endAsync();
    }
  } finally {
    await sub.close();
    await eddy.stop();
    rmSync(home, { recursive: true, force: true });
  }
});
