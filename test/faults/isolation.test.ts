/**
 * No rule can hurt another, no input can hurt the engine (docs/runtime.md §1.6, §1.10), tried on the real server as a
 * child process with two rule workers and the local Mosquitto:
 * - a rule whose SQL is megabytes of CASE branches is refused at once with a 400, and `/ping` stays quick meanwhile;
 * - a rule calling a JavaScript function that loops runs on a worker: the main thread keeps answering, each call is
 *   cut at the script time limit and counted as the rule's exception, and a neighbour rule delivers everything;
 * - a qos 1 rule receives what is published the instant `POST /rules` answered, on a warm worker too.
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

/** `/ping` round trips (ms) measured while `during` runs. */
async function pingsDuring(eddy: EddyProcess, during: Promise<unknown>): Promise<number[]> {
  let done = false;
  void during.finally(() => (done = true));
  const times: number[] = [];
  while (!done) {
    const t0 = performance.now();
    const r = await eddy.req('GET', '/ping');
    times.push(performance.now() - t0);
    assert.equal(r.status, 200);
    await new Promise((res) => setTimeout(res, 20));
  }
  return times;
}

async function untilAsync(cond: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

test('a CASE with 100,000 WHEN branches is refused with a 400 at once; /ping is not held meanwhile', async () => {
  await withEddy(async (eddy) => {
    const topic = uniqueTopic('bigcase');
    let r = await eddy.req('POST', '/streams', {
      sql: `CREATE STREAM bigcase (a BIGINT) WITH (DATASOURCE="${topic}", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    const whens = Array.from({ length: 100_000 }, (_, i) => `WHEN a = ${i} THEN ${i}`).join(' ');
    const sql = `SELECT CASE ${whens} ELSE -1 END AS v FROM bigcase`;
    assert.ok(sql.length > 2_000_000);
    const create = eddy.req('POST', '/rules', { id: 'bigcase', sql, actions: [{ nop: {} }] });
    const pings = await pingsDuring(eddy, create);
    r = await create;
    assert.equal(r.status, 400, r.text);
    const body = r.json() as J;
    assert.match(String(body.message), /SQL is limited to 262144 characters/);
    // the answer does not echo megabytes of SQL back
    assert.ok(r.text.length < 1000, `${r.text.length} characters of error`);
    assert.ok(Math.max(...pings) < 2000, `ping times ${JSON.stringify(pings.map(Math.round))}`);
    // under the size limit, more than 1,000 branches are refused by the parser, again with a 400
    const some = Array.from({ length: 1001 }, (_, i) => `WHEN a = ${i} THEN ${i}`).join(' ');
    r = await eddy.req('POST', '/rules', {
      id: 'somecase',
      sql: `SELECT CASE ${some} END AS v FROM bigcase`,
      actions: [{ nop: {} }],
    });
    assert.equal(r.status, 400, r.text.slice(0, 300));
    assert.match(r.text, /more than 1000 WHEN branches/);
    assert.equal((await eddy.req('GET', '/rules/bigcase')).status, 404);
  });
});

test('a looping JavaScript function runs on a worker: /ping stays quick, each call is cut and counted, a neighbour delivers all', async () => {
  await withEddy(async (eddy) => {
    const topic = uniqueTopic('jsloop');
    const sub = await subscriber(`${topic}/out`);
    const pub = await publisher();
    try {
      let r = await eddy.req('POST', '/udf/javascript', {
        id: 'spin',
        description: 'never returns',
        script: 'function spin(x) { while (true) {} return x; }',
        isAgg: false,
      });
      assert.equal(r.status, 201, r.text);
      r = await eddy.req('POST', '/streams', {
        sql: `CREATE STREAM jsin (n BIGINT) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
      });
      assert.equal(r.status, 201, r.text);
      r = await eddy.req('POST', '/rules', {
        id: 'looping',
        sql: 'SELECT spin(n) AS n FROM jsin',
        actions: [{ nop: {} }],
      });
      assert.equal(r.status, 201, r.text);
      r = await eddy.req('POST', '/rules', {
        id: 'neighbour',
        sql: 'SELECT n FROM jsin',
        actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out`, sendSingle: true } }],
      });
      assert.equal(r.status, 201, r.text);
      const st = (await eddy.req('GET', '/rules/looping/status')).json() as J;
      assert.equal(typeof st.worker, 'number', `the looping rule runs on a worker: ${JSON.stringify(st)}`);

      // 5 records a second for 6 s: on the main thread each would hold it for the script's 1 s limit
      const count = 30;
      const feeding = (async () => {
        for (let n = 0; n < count; n++) {
          await pub.publishAsync(`${topic}/in`, JSON.stringify({ n }), { qos: 1 });
          await new Promise((res) => setTimeout(res, 200));
        }
      })();
      const pings = await pingsDuring(eddy, feeding);
      assert.ok(median(pings) < 500, `ping median ${median(pings)} ms of ${pings.length}`);
      await until(() => sub.messages.length >= count, 30_000, `the neighbour's ${count} rows`);
      const ns = new Set(sub.messages.map((m) => (JSON.parse(m.text) as J).n));
      assert.equal(ns.size, count);
      // the calls were cut at the time limit and counted against the looping rule
      let looping: J = {};
      await untilAsync(
        async () => {
          looping = (await eddy.req('GET', '/rules/looping/status')).json() as J;
          return Object.entries(looping).some(([k, v]) => k.endsWith('_exceptions_total') && Number(v) > 0);
        },
        30_000,
        'an exception counted against the looping rule',
      );
      const last = Object.entries(looping).find(([k, v]) => k.endsWith('_last_exception') && v !== '');
      assert.match(String(last?.[1]), /timed out|time/i, JSON.stringify(looping));
    } finally {
      await pub.endAsync();
      await sub.close();
    }
  });
});

test('a qos 1 rule receives what is published the instant POST /rules answered, 20 times, warm worker included', async () => {
  await withEddy(async (eddy) => {
    const base = uniqueTopic('instant');
    const sub = await subscriber(`${base}/+/out`);
    const pub = await publisher();
    try {
      for (let i = 0; i < 20; i++) {
        const topic = `${base}/${i}`;
        let r = await eddy.req('POST', '/streams', {
          sql: `CREATE STREAM instant${i} (n BIGINT) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
        });
        assert.equal(r.status, 201, r.text);
        r = await eddy.req('POST', '/rules', {
          id: `instant${i}`,
          sql: `SELECT n FROM instant${i}`,
          actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out`, qos: 1, sendSingle: true } }],
          options: { qos: 1 },
        });
        assert.equal(r.status, 201, r.text);
        await pub.publishAsync(`${topic}/in`, JSON.stringify({ n: i }), { qos: 1 });
      }
      await until(() => new Set(sub.messages.map((m) => m.topic)).size >= 20, 30_000, 'a row from each rule').catch(
        () => undefined,
      );
      const missed = Array.from({ length: 20 }, (_, i) => i).filter(
        (i) => !sub.messages.some((m) => m.topic === `${base}/${i}/out`),
      );
      assert.deepEqual(missed, [], `rules that missed their first message: ${missed.join(', ')}`);
    } finally {
      await pub.endAsync();
      await sub.close();
    }
  });
});

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
