/**
 * A node cut off from the backend (docs/cluster.md §3.4), on each backend: node a reaches NATS (or Redis) through a TCP
 * proxy, b and c directly. Node a runs (by placement) a stateful qos 1 rule that checkpoints several times a second.
 * When the proxy cuts a off, a stops its
 * rules before its lease can expire (before b or c take them over), and no checkpoint a writes lands after its
 * successor fenced the rule's state — the test watches the state's head in the backend itself, every write of it, with
 * its writer and epoch. Nothing published meanwhile is lost.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { keyOf, type ClusterBackend, type Watch } from '../../src/cluster/backend.js';
import { openNatsBackend } from '../../src/cluster/nats-backend.js';
import { openRedisBackend } from '../../src/cluster/redis-backend.js';
import { rank } from '../../src/cluster/placement.js';
import { startNatsServer, type TestNatsServer } from '../helpers/nats-server.js';
import { startBroker, type TestBroker } from '../helpers/mosquitto.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcpproxy.js';
import { Collector, Publisher, probeThrough } from '../helpers/faults.js';
import { waitFor } from '../helpers/process.js';
import { silentLogger } from '../helpers/cluster-backends.js';
import {
  placement,
  startClusterNode,
  stopCluster,
  waitAllRunning,
  type ClusterNode,
  type ClusterSpec,
} from '../helpers/cluster-nodes.js';

let nats: TestNatsServer;
let broker: TestBroker;
const LEASE_MS = 3000;

before(async () => {
  [nats, broker] = await Promise.all([startNatsServer(), startBroker()]);
});

after(async () => {
  await Promise.all([nats?.stop(), broker?.stop()]);
});

/** One write of the state head: its writer and epoch. */
interface HeadWrite {
  node: string;
  epoch: number;
}

for (const backend of ['nats', 'redis'] as const) {
  describe(`partition on ${backend}`, () => {
    let proxy: TcpProxy;
    const nodes: ClusterNode[] = [];
    let observer: ClusterBackend | undefined;
    let headWatch: Watch | undefined;
    const name = `part${backend}${randomUUID().slice(0, 8)}`;

    before(async () => {
      proxy = await startTcpProxy(backend === 'nats' ? nats.port : 6379);
    });

    after(async () => {
      await headWatch?.stop();
      await observer?.close();
      await stopCluster(nodes);
      await proxy?.close();
    });

    test('a node cut off from the backend stops its rules before its lease expires, and never writes after its successor', async () => {
      const spec: ClusterSpec = {
        backend,
        name,
        natsUrls: nats.url,
        leaseTimeoutMs: LEASE_MS,
        env: { MQTT_SOURCE__DEFAULT__SERVER: broker.url },
      };
      const a = await startClusterNode(
        spec,
        'a',
        undefined,
        backend === 'nats'
          ? { KUIPER__CLUSTER__NATS__SERVERS: `nats://127.0.0.1:${proxy.port}` }
          : { KUIPER__STORE__REDIS__PORT: String(proxy.port) },
      );
      nodes.push(a, await startClusterNode(spec, 'b'), await startClusterNode(spec, 'c'));
      // a rule that placement gives to a while all three are alive
      const rule = Array.from({ length: 50 }, (_, i) => `windowed${i}`).find(
        (id) => rank(id, ['a', 'b', 'c'])[0] === 'a',
      )!;
      const topic = `${name}/n`;
      let r = await a.req('POST', '/streams', { sql: `CREATE STREAM pin () WITH (DATASOURCE="${topic}/in")` });
      assert.equal(r.status, 201, r.text);
      await waitFor(async () => (await nodes[2].req('GET', '/streams')).text.includes('pin'), 10_000, 'the stream');
      r = await a.req('POST', '/rules', {
        id: rule,
        sql: 'SELECT collect(n) AS ns, collect(probe) AS probes FROM pin WHERE temperature > 50 GROUP BY TumblingWindow(ss, 1)',
        actions: [{ mqtt: { server: broker.url, topic: `${topic}/out`, qos: 1, sendSingle: true } }],
        options: { qos: 1, checkpointInterval: 200 },
      });
      assert.equal(r.status, 201, r.text);
      assert.equal((await waitAllRunning(nodes[1], [rule], 30_000)).get(rule)?.node, 'a');

      // every write of the rule's state head, as the backend reports them
      observer =
        backend === 'nats'
          ? await openNatsBackend({ name, servers: [nats.url], replicas: 1, logger: silentLogger })
          : await openRedisBackend({ name, host: '127.0.0.1', port: 6379, logger: silentLogger });
      const writes: HeadWrite[] = [];
      const headKey = keyOf(rule, 'h');
      headWatch = observer.table('state').watch(keyOf(rule), (c) => {
        if (c.key !== headKey || c.value === undefined) return;
        const head = JSON.parse(c.value) as { e: number; n: string };
        writes.push({ node: head.n, epoch: head.e });
      });
      await headWatch.ready;

      const collector = await Collector.start(broker.url, `${topic}/out`);
      const publisher = await Publisher.start(broker.url);
      try {
        await probeThrough(publisher, collector, `${topic}/in`);
        await waitFor(() => writes.some((w) => w.node === 'a'), 20_000, 'a to write checkpoints');

        const sent = 2000;
        const publishing = publisher.run(`${topic}/in`, sent, 250);
        await waitFor(() => collector.distinct >= 300, 60_000, 'messages through the rule', 20);
        proxy.cut();
        const cutAt = Date.now();
        let stoppedAt = 0;
        let takenAt = 0;
        let taker = '';
        await waitFor(
          async () => {
            if (stoppedAt === 0 && (await placement(a)).get(rule)?.node !== 'a') stoppedAt = Date.now();
            if (takenAt === 0) {
              const p = (await placement(nodes[1])).get(rule);
              if (p && p.status === 'Running' && p.node !== 'a' && p.node !== '') {
                takenAt = Date.now();
                taker = p.node;
              }
            }
            return stoppedAt > 0 && takenAt > 0;
          },
          30_000,
          'a to stop the rule and another node to take it',
          50,
        );
        console.log(
          `${backend}: cut at 0; a stopped its rule after ${stoppedAt - cutAt} ms; ${taker} ran it after ${takenAt - cutAt} ms`,
        );
        assert.ok(stoppedAt < takenAt, 'a stopped the rule before another node took it over');
        await waitFor(() => writes.some((w) => w.node === taker), 20_000, 'the successor to write the state');
        proxy.restore();
        await publishing;
        // a is back: whatever it writes from now on comes with a new lease
        await waitFor(async () => (await placement(a)).get(rule)?.status === 'Running', 30_000, 'a to see the rule');
        await waitFor(() => collector.distinct >= sent, 60_000, 'every message at the sink', 100);
        const result = collector.result(sent);
        console.log(`${backend} partition: ${JSON.stringify(result)}; head writes: ${writes.length}`);
        assert.equal(result.lost, 0);

        // the fence: epochs never go back, and a wrote nothing under its old epoch once its successor had fenced
        for (let i = 1; i < writes.length; i++) assert.ok(writes[i].epoch >= writes[i - 1].epoch, 'epochs only grow');
        const first = writes.findIndex((w) => w.node === taker);
        const successorEpoch = writes[first].epoch;
        const late = writes.slice(first).filter((w) => w.node === 'a' && w.epoch <= successorEpoch);
        assert.deepEqual(late, [], 'a wrote under its old epoch after its successor took over');
      } finally {
        await publisher.close();
        await collector.close();
      }
    });
  });
}
