/**
 * A crashed rule worker at qos 1 (docs/runtime.md §1.9, §1.10): an MQTT → MQTT rule runs on a worker thread while
 * numbered messages arrive at a steady rate; the worker is crashed mid-stream, the pool replaces it and the rule opens
 * again on the new worker from its last checkpoint. The broker (this test's own, sessions of absent clients kept)
 * redelivers what was not acknowledged: no number may be missing at the sink; duplicates are allowed and reported.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startBroker, type TestBroker } from '../helpers/mosquitto.js';
import { Collector, Publisher } from '../helpers/faults.js';
import { waitFor } from '../helpers/process.js';

const COUNT = 3000;
const RATE = 500;

test('a worker crashed under load at qos 1 is replaced and its rule reopens there: nothing lost', async (t) => {
  const broker: TestBroker = await startBroker();
  let s: TestServer | undefined;
  let collector: Collector | undefined;
  let publisher: Publisher | undefined;
  try {
    s = await startTestServer({
      env: { KUIPER__BASIC__WORKERS: '2', MQTT_SOURCE__DEFAULT__SERVER: broker.url, MQTT_SOURCE__DEFAULT__QOS: '1' },
    });
    const server = s;
    const pool = server.app.workers!;
    const id = 'replace_qos1';
    const inTopic = `wk/${id}/in`;
    const outTopic = `wk/${id}/out`;
    let r = await server.req('POST', '/streams', {
      sql: `CREATE STREAM st_${id} () WITH (DATASOURCE="${inTopic}", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await server.req('POST', '/rules', {
      id,
      sql: `SELECT * FROM st_${id} WHERE temperature > 50`,
      actions: [{ mqtt: { server: broker.url, topic: outTopic, qos: 1, sendSingle: true } }],
      options: { qos: 1, checkpointInterval: 1000 },
    });
    assert.equal(r.status, 201, r.text);
    const slot = pool.place(id);

    collector = await Collector.start(broker.url, outTopic);
    publisher = await Publisher.start(broker.url);
    const c = collector;
    const p = publisher;
    // the rule reports running before its subscription is in place: numbered messages start once a probe went through
    await waitFor(
      () => {
        if (c.probes > 0) return true;
        p.probe(inTopic);
        return false;
      },
      60_000,
      'a probe through the rule',
      200,
    );
    const publishing = publisher.run(inTopic, COUNT, RATE);
    // the crash strikes under load, once about a third has gone through (past at least one checkpoint)
    await waitFor(() => c.distinct >= COUNT / 3, 120_000, 'a third of the messages at the sink', 20);
    const crashedAt = c.distinct;
    pool.crash(slot);
    await waitFor(() => (pool.replaced[slot] ?? 0) === 1, 15_000, 'the replacement');
    await publishing;
    // everything arrives, or the sink goes quiet for long enough to call the rest lost
    let last = -1;
    let since = Date.now();
    const end = Date.now() + 120_000;
    while (c.distinct < COUNT && Date.now() < end) {
      if (c.total !== last) {
        last = c.total;
        since = Date.now();
      } else if (Date.now() - since > 20_000) break;
      await sleep(100);
    }
    const res = c.result(COUNT);
    const st = (await server.req('GET', `/rules/${id}/status`)).json() as { status?: string };
    const summary = `sent ${res.sent}, delivered ${res.delivered}, lost ${res.lost}, duplicates ${res.duplicates}, crash after ${crashedAt}, status ${st.status}, first lost [${c.missing(COUNT).join(',')}]`;
    t.diagnostic(summary);
    assert.equal(res.lost, 0, summary);
    assert.equal(res.foreign, 0, summary);
    assert.equal(st.status, 'running', summary);
    assert.equal(pool.replaced[slot], 1, summary);
  } finally {
    await publisher?.close().catch(() => undefined);
    await collector?.close().catch(() => undefined);
    await s?.dispose().catch(() => undefined);
    await broker.stop().catch(() => undefined);
  }
});
