/**
 * Cluster mode on a JetStream cluster of three nats-servers joined by routes, every bucket replicated three times
 * (`cluster.nats.replicas: 3`, docs/cluster.md §2): one NATS server is killed with SIGKILL, and the Eddy nodes go on —
 * definitions written afterwards reach every node, rules are placed, and when an Eddy node is killed too its rules
 * move to the others.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startNatsCluster, type TestNatsCluster } from '../helpers/nats-server.js';
import { waitFor } from '../helpers/process.js';
import { startCluster, stopCluster, waitAllRunning, type ClusterNode } from '../helpers/cluster-nodes.js';

let natsCluster: TestNatsCluster;
let nodes: ClusterNode[] = [];
const name = `nc${randomUUID().slice(0, 8)}`;

before(async () => {
  natsCluster = await startNatsCluster();
  nodes = await startCluster(
    // a replicated bucket re-elects its leader after a server dies: the lease outlasts that on a loaded machine
    { backend: 'nats', name, natsUrls: natsCluster.urls, replicas: 3, leaseTimeoutMs: 5000 },
    ['a', 'b', 'c'],
  );
});

after(async () => {
  await stopCluster(nodes);
  await natsCluster?.stop();
});

test('with one of three NATS servers killed, writes reach every node and rules of a killed node move', async () => {
  const [a, b, c] = nodes;
  let r = await a.req('POST', '/streams', { sql: 'CREATE STREAM m () WITH (DATASOURCE="m", TYPE="memory")' });
  assert.equal(r.status, 201, r.text);
  await waitFor(async () => (await b.req('GET', '/streams')).text.includes('"m"'), 10_000, 'the stream on b');
  const first = Array.from({ length: 6 }, (_, i) => `before${i}`);
  for (const id of first) {
    r = await b.req('POST', '/rules', { id, sql: 'SELECT * FROM m', actions: [{ nop: {} }] });
    assert.equal(r.status, 201, r.text);
  }
  await waitAllRunning(c, first, 30_000);

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
  const placed = await waitAllRunning(a, [...first, ...later], 60_000);
  for (const n of nodes)
    await waitFor(async () => (await n.req('GET', '/rules')).text.includes('after5'), 10_000, `rules on ${n.id}`);

  // an Eddy node dies too: its rules move to the two others
  const victim = nodes.find((n) => [...placed.values()].some((p) => p.node === n.id))!;
  const survivor = nodes.find((n) => n !== victim)!;
  const moved = [...placed].filter(([, p]) => p.node === victim.id).map(([id]) => id);
  await victim.kill9();
  await waitAllRunning(survivor, moved, 60_000, victim.id);
});
