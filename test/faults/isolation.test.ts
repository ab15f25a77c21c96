/**
 * No rule can hurt another, no input can hurt the engine (docs/runtime.md §1.6, §1.10), tried on the real server as a
 * child process with two rule workers and the local Mosquitto:
 * - a rule whose SQL is megabytes of CASE branches is refused at once with a 400, and `/ping` stays quick meanwhile;
 * - a rule calling a JavaScript function that loops runs on a worker: the main thread keeps answering, each call is
 *   cut at the script time limit and counted as the rule's exception, and a neighbour rule delivers everything;
 * - a qos 1 rule receives what is published the instant `POST /rules` answered, on a warm worker too.
 * The memory bounds are tried in isolation-memory.test.ts.
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
