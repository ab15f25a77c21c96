/**
 * No rule can hurt another (issue 21, docs/runtime.md §1.10 and §8), on the real server as a child process with two
 * rule workers and the local Mosquitto: a rule calling a JavaScript function that loops shares its worker with ten
 * rules reading a SHARED MQTT stream (their ids are picked so that the placement puts them on its worker), and a
 * burst of records reaches the looping rule while the stream is fed at 200 messages a second. The looping function
 * may hold the worker for its time limit once; then its rule stops, and the records queued behind the first one are
 * not evaluated. Before, each of them held the worker for the whole limit in turn, half a minute for this burst,
 * while the broker dropped what it could not queue for the worker's connection (Mosquitto keeps 1,000 messages a
 * client): the neighbours lost messages.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEddyProcess } from '../helpers/eddy-process.js';
import { publisher, subscriber, uniqueTopic, until } from '../connectors/helpers.js';
import { placeById } from '../../src/workers/placement.js';

type J = Record<string, unknown>;

const WORKERS = 2;
const NEIGHBOURS = 10;
/** records for the looping rule, published together: each would hold the worker for the script's 1 s limit */
const BURST = 30;
/** messages of the shared stream, at {@link RATE} a second (10 s) */
const MESSAGES = 2000;
const RATE = 200;

test('a looping JavaScript function holds its worker once: ten rules on that worker deliver every message', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-isolation-neighbours-'));
  const eddy = await startEddyProcess(home, { KUIPER__BASIC__WORKERS: String(WORKERS) });
  const topic = uniqueTopic('neighbours');
  const sub = await subscriber(`${topic}/out/+`);
  const pub = await publisher();
  try {
    const created = async (path: string, body: J): Promise<void> => {
      const r = await eddy.req('POST', path, body);
      assert.equal(r.status, 201, r.text);
    };
    await created('/udf/javascript', {
      id: 'spin',
      description: 'never returns',
      script: 'function spin(x) { while (true) {} return x; }',
      isAgg: false,
    });
    await created('/streams', { sql: `CREATE STREAM jsin (n BIGINT) WITH (DATASOURCE="${topic}/js", FORMAT="json")` });
    await created('/rules', { id: 'looping', sql: 'SELECT spin(n) AS n FROM jsin', actions: [{ nop: {} }] });
    const worker = ((await eddy.req('GET', '/rules/looping/status')).json() as J).worker;
    assert.equal(typeof worker, 'number', 'the looping rule runs on a worker');

    await created('/streams', {
      sql: `CREATE STREAM shared (n BIGINT) WITH (DATASOURCE="${topic}/shared", FORMAT="json", SHARED="true")`,
    });
    // the placement is a hash of the rule id over the workers: these ids land on the looping rule's worker
    const ids: string[] = [];
    for (let k = 0; ids.length < NEIGHBOURS; k++) if (placeById(`nb${k}`, WORKERS) === worker) ids.push(`nb${k}`);
    for (const id of ids)
      await created('/rules', {
        id,
        sql: 'SELECT n FROM shared',
        actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out/${id}`, sendSingle: true } }],
      });
    for (const id of ids) {
      const st = (await eddy.req('GET', `/rules/${id}/status`)).json() as J;
      assert.equal(st.worker, worker, `${id} shares the looping rule's worker: ${JSON.stringify(st)}`);
    }

    for (let n = 0; n < BURST; n++) await pub.publishAsync(`${topic}/js`, JSON.stringify({ n }), { qos: 1 });
    // paced by the clock: message n leaves at n / RATE s
    const t0 = performance.now();
    for (let n = 0; n < MESSAGES; n++) {
      const due = t0 + (n * 1000) / RATE - performance.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      await pub.publishAsync(`${topic}/shared`, JSON.stringify({ n }), { qos: 1 });
    }
    const total = NEIGHBOURS * MESSAGES;
    await until(() => sub.messages.length >= total, 60_000, `${total} rows`).catch(() => undefined);
    const got = new Map<string, Set<number>>(ids.map((id) => [id, new Set()]));
    for (const m of sub.messages)
      got.get(m.topic.slice(m.topic.lastIndexOf('/') + 1))?.add((JSON.parse(m.text) as J).n as number);
    const short = ids.filter((id) => got.get(id)?.size !== MESSAGES).map((id) => `${id}: ${got.get(id)?.size ?? 0}`);
    assert.deepEqual(short, [], `rules that missed messages (of ${MESSAGES})`);

    // the looping rule stopped, saying why; its neighbours run on
    const looping = (await eddy.req('GET', '/rules/looping/status')).json() as J;
    assert.equal(looping.status, 'stopped');
    assert.match(String(looping.message), /javascript function spin ran past its time limit of 1000 ms/);
    for (const id of ids) assert.equal(((await eddy.req('GET', `/rules/${id}/status`)).json() as J).status, 'running');
  } finally {
    await pub.endAsync();
    await sub.close();
    await eddy.stop();
    rmSync(home, { recursive: true, force: true });
  }
});
