/**
 * Cluster mode on a JetStream cluster of three nats-servers joined by routes, every bucket replicated three times
 * (`cluster.nats.replicas: 3`, docs/cluster.md §2), under a qos 1 MQTT → MQTT load: one NATS server is killed with
 * SIGKILL and the Eddy nodes go on — definitions written afterwards reach every node and rules are placed — then the
 * Eddy node running the loaded rule is killed too: its rules move to the others, and no message is lost.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startNatsCluster, type TestNatsCluster } from '../helpers/nats-server.js';
import { startBroker, type TestBroker } from '../helpers/mosquitto.js';
import { Collector, Publisher, probeThrough } from '../helpers/faults.js';
import { waitFor } from '../helpers/process.js';
import { startCluster, stopCluster, waitAllRunning, type ClusterNode } from '../helpers/cluster-nodes.js';

let natsCluster: TestNatsCluster;
let broker: TestBroker;
let nodes: ClusterNode[] = [];
const name = `nc${randomUUID().slice(0, 8)}`;

before(async () => {
  [natsCluster, broker] = await Promise.all([startNatsCluster(), startBroker()]);
  nodes = await startCluster(
    {
      backend: 'nats',
      name,
      natsUrls: natsCluster.urls,
      replicas: 3,
      // a replicated bucket re-elects its leader after a server dies: the lease outlasts that on a loaded machine
      leaseTimeoutMs: 5000,
      env: { MQTT_SOURCE__DEFAULT__SERVER: broker.url },
    },
    ['a', 'b', 'c'],
  );
});

after(async () => {
  await stopCluster(nodes);
  await Promise.all([natsCluster?.stop(), broker?.stop()]);
});

test('with one of three NATS servers killed, writes reach every node, rules of a killed node move, nothing is lost', async () => {
  const [a, b, c] = nodes;
  const topic = `${name}/n`;
  let r = await a.req('POST', '/streams', { sql: `CREATE STREAM m () WITH (DATASOURCE="${topic}/in")` });
  assert.equal(r.status, 201, r.text);
  await waitFor(async () => (await b.req('GET', '/streams')).text.includes('"m"'), 10_000, 'the stream on b');
  r = await b.req('POST', '/rules', {
    id: 'numbered',
    sql: 'SELECT * FROM m WHERE temperature > 50',
    actions: [{ mqtt: { server: broker.url, topic: `${topic}/out`, qos: 1, sendSingle: true } }],
    options: { qos: 1, checkpointInterval: 1000 },
  });
  assert.equal(r.status, 201, r.text);
  const first = Array.from({ length: 6 }, (_, i) => `before${i}`);
  for (const id of first) {
    r = await b.req('POST', '/rules', { id, sql: 'SELECT * FROM m', actions: [{ nop: {} }] });
    assert.equal(r.status, 201, r.text);
  }
  await waitAllRunning(c, ['numbered', ...first], 30_000);
  const collector = await Collector.start(broker.url, `${topic}/out`);
  const publisher = await Publisher.start(broker.url);
  try {
    await probeThrough(publisher, collector, `${topic}/in`);
    const sent = 4000;
    const publishing = publisher.run(`${topic}/in`, sent, 250);
    await waitFor(() => collector.distinct >= 500, 60_000, 'messages through the rule', 20);

    await natsCluster.servers[0].kill();
    // JetStream elects new leaders for the buckets the killed server led; writes succeed again once it has
    const later = Array.from({ length: 6 }, (_, i) => `after${i}`);
    for (const id of later)
      await waitFor(
        async () => {
          const res = await c.req('POST', '/rules', { id, sql: 'SELECT * FROM m', actions: [{ nop: {} }] });
          return res.status === 201 || /already exists/.test(res.text);
        },
        30_000,
        `rule ${id} to be created`,
        250,
      );
    const placed = await waitAllRunning(a, ['numbered', ...first, ...later], 60_000);
    for (const n of nodes)
      await waitFor(async () => (await n.req('GET', '/rules')).text.includes('after5'), 10_000, `rules on ${n.id}`);

    // the Eddy node running the loaded rule dies too: its rules move to the two others
    const victim = nodes.find((n) => n.id === placed.get('numbered')?.node)!;
    const survivor = nodes.find((n) => n !== victim)!;
    const moved = [...placed].filter(([, p]) => p.node === victim.id).map(([id]) => id);
    await victim.kill9();
    await waitAllRunning(survivor, moved, 60_000, victim.id);
    await publishing;
    await waitFor(() => collector.distinct >= sent, 60_000, 'every message at the sink', 100);
    const result = collector.result(sent);
    console.log(`nats cluster: ${JSON.stringify(result)}`);
    assert.equal(result.lost, 0);
  } finally {
    await publisher.close();
    await collector.close();
  }
});
