/**
 * One hot topic over several workers (docs/runtime.md §1.10): on a single server a stateless rule with `parallelism`
 * N runs N instances, each on the next worker, fed by an MQTT shared subscription (`$share/<rule id>/<topic>`): every
 * message is processed by one instance, once, and the instances' counters add up in the rule's status.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { publisher, subscriber, uniqueTopic, until } from '../connectors/helpers.js';
import { status } from './helpers.js';

test('parallelism 2 on one server: two instances on the two workers share the topic; each message comes out once', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('parallel');
  const sub = await subscriber(`${topic}/out`);
  const pub = await publisher();
  try {
    let r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM par (n BIGINT) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'par',
      sql: 'SELECT n FROM par WHERE n >= 0',
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out`, sendSingle: true } }],
      options: { parallelism: 2 },
    });
    assert.equal(r.status, 201, r.text);
    const count = 200;
    for (let n = 0; n < count; n++) await pub.publishAsync(`${topic}/in`, JSON.stringify({ n }), { qos: 1 });
    await until(() => sub.messages.length >= count, 30_000, `${count} rows`);
    await new Promise((res) => setTimeout(res, 500));
    const ns = sub.messages.map((m) => (JSON.parse(m.text) as { n: number }).n);
    // through a shared subscription each message reaches one instance: no row twice
    assert.equal(ns.length, count, `${ns.length} rows for ${count} messages`);
    assert.equal(new Set(ns).size, count);
    const st = await status(s, 'par');
    assert.equal(st.source_par_0_records_in_total, count, 'the instances count together');
    // one instance on each worker
    const pool = s.app.workers!;
    assert.deepEqual(pool.openOn(0), ['par']);
    assert.deepEqual(pool.openOn(1), ['par']);
  } finally {
    await pub.endAsync();
    await sub.close();
    await s.dispose();
  }
});
