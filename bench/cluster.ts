/**
 * Cluster figures (docs/cluster.md, issue targets), on a nats-server and a Mosquitto of the benchmark's own:
 *  1. failover: 3 nodes, 60 MQTT → MQTT rules at qos 1 (one input topic each), 1,000 numbered msg/s spread over them
 *     through Mosquitto; the node owning the most rules is killed with SIGKILL: time from the kill until every rule
 *     runs again on the others, lost and duplicates (target ≤ 15 s, 0 lost);
 *  2. balance: 300 rules over 3 nodes, the largest share; a 4th node joins: the share of rules that moved (targets
 *     ≤ 40 %, ≤ 30 %);
 *  3. overhead: one node in cluster mode and one without, fed by one publisher (MQTT → MQTT filter, QoS 0, 5k msg/s),
 *     CPU per message of each in interleaved rounds (target ≤ 1.10×);
 *  4. control plane: 3 nodes, 1,000 rules: p99 of `GET /rules` and `GET /rules/{id}/status` asked of random nodes
 *     (two in three of the status requests are forwarded to the rule's node) (target ≤ 100 ms).
 * Runs on request only (`npm run bench -- cluster`, about five minutes); `--quick` shortens it; `EDDY_BENCH_ONLY`
 * (`failover`, `balance`, `overhead`, `control`, comma-separated) runs some parts only.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt, { type MqttClient } from 'mqtt';
import { startNatsServer, type TestNatsServer } from '../test/helpers/nats-server.js';
import { startBroker, type TestBroker } from '../test/helpers/mosquitto.js';
import { Collector } from '../test/helpers/faults.js';
import { waitFor } from '../test/helpers/process.js';
import { startEddyProcess, type EddyProcess } from '../test/helpers/eddy-process.js';
import {
  placement,
  startCluster,
  startClusterNode,
  stopCluster,
  type ClusterNode,
  type ClusterSpec,
} from '../test/helpers/cluster-nodes.js';
import {
  QUICK,
  counter,
  demoPassing,
  machineLoad,
  percentile,
  publishDemo,
  spread,
  startEddy,
} from './helpers/procs.js';

type Figures = Record<string, string | number>;

/** Waits until every one of `ids` is listed running by `n`, on a node other than `not`. */
async function allRunning(n: ClusterNode, ids: readonly string[], not: string, deadlineMs: number): Promise<void> {
  let missing: string[] = [];
  try {
    await waitFor(
      async () => {
        const p = await placement(n);
        missing = ids.filter((id) => p.get(id)?.status !== 'Running' || p.get(id)?.node === not || !p.get(id)?.node);
        return missing.length === 0;
      },
      deadlineMs,
      'the rules to run',
      100,
    );
  } catch (err) {
    const p = await placement(n);
    const sample = missing.slice(0, 5).map((id) => `${id}: ${JSON.stringify(p.get(id))}`);
    throw new Error(`${(err as Error).message}: ${missing.length} not running, e.g. ${sample.join('; ')}`);
  }
}

/** Creates a rule on `n`, trying again while the node is too busy to answer. */
async function createRule(n: ClusterNode, body: Record<string, unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const r = await n.req('POST', '/rules', body).catch((err: unknown) => ({ status: 0, text: String(err) }));
    if (r.status === 201 || /already exists/.test(r.text)) return;
    if (attempt >= 5) throw new Error(`create rule ${String(body.id)}: ${r.status} ${r.text}`);
    await sleep(500);
  }
}

/** `EDDY_BENCH_ONLY=failover,balance,overhead,control` runs those parts only. */
const ONLY = (process.env.EDDY_BENCH_ONLY ?? '').split(',').filter((x) => x !== '');
const wanted = (part: string): boolean => ONLY.length === 0 || ONLY.includes(part);

/** Numbered messages `{n, temperature}` at QoS 1, message n to topic `<prefix><n % topics>`. */
async function publishSpread(url: string, prefix: string, topics: number, count: number, rate: number): Promise<void> {
  const c: MqttClient = await mqtt.connectAsync(url, { clean: true });
  const t0 = Date.now();
  let sent = 0;
  const acks: Promise<unknown>[] = [];
  while (sent < count) {
    const due = Math.min(count, Math.floor(((Date.now() - t0) * rate) / 1000) + 1);
    for (; sent < due; sent++)
      acks.push(c.publishAsync(`${prefix}${sent % topics}`, JSON.stringify({ n: sent, temperature: 60 }), { qos: 1 }));
    await sleep(10);
  }
  await Promise.all(acks);
  await c.endAsync();
}

async function failover(nats: TestNatsServer, broker: TestBroker, out: Figures): Promise<void> {
  const name = `bfo${randomUUID().slice(0, 8)}`;
  const spec: ClusterSpec = {
    backend: 'nats',
    name,
    natsUrls: nats.url,
    leaseTimeoutMs: 10_000,
    env: { MQTT_SOURCE__DEFAULT__SERVER: broker.url, KUIPER__BASIC__WORKERS: '0' },
  };
  const nodes = await startCluster(spec, ['a', 'b', 'c']);
  const rules = Array.from({ length: 60 }, (_, i) => `fo${i}`);
  const collector = await Collector.start(broker.url, `${name}/out`);
  try {
    const [a] = nodes;
    for (const [i, id] of rules.entries()) {
      await a.req('POST', '/streams', { sql: `CREATE STREAM s${i} () WITH (DATASOURCE="${name}/in/${i}")` });
      await createRule(a, {
        id,
        sql: `SELECT * FROM s${i} WHERE temperature > 50`,
        actions: [{ mqtt: { server: broker.url, topic: `${name}/out`, qos: 1, sendSingle: true } }],
        options: { qos: 1, checkpointInterval: 1000 },
      });
    }
    await allRunning(a, rules, '', 120_000);
    // every rule's subscription is in place once a probe through each came out
    const probe = await mqtt.connectAsync(broker.url);
    await waitFor(
      async () => {
        for (let i = 0; i < rules.length; i++)
          await probe.publishAsync(`${name}/in/${i}`, JSON.stringify({ probe: true, temperature: 60 }), { qos: 1 });
        await sleep(500);
        return collector.probes >= rules.length;
      },
      120_000,
      'a probe through every rule',
      0,
    );
    await probe.endAsync();
    const placed = await placement(a);
    const counts = new Map<string, number>();
    for (const p of placed.values()) counts.set(p.node, (counts.get(p.node) ?? 0) + 1);
    const [victimId, owned] = [...counts].sort((x, y) => y[1] - x[1])[0];
    const victim = nodes.find((n) => n.id === victimId)!;
    const survivor = nodes.find((n) => n.id !== victimId)!;
    const sent = QUICK ? 15_000 : 30_000;
    const publishing = publishSpread(broker.url, `${name}/in/`, rules.length, sent, 1000);
    await waitFor(() => collector.distinct >= sent / 3, 120_000, 'a third at the sinks', 20);
    const killedAt = Date.now();
    await victim.kill9();
    await allRunning(survivor, rules, victimId, 60_000);
    const tookMs = Date.now() - killedAt;
    await publishing;
    let last = -1;
    let since = Date.now();
    await waitFor(
      () => {
        if (collector.distinct >= sent) return true;
        if (collector.total !== last) [last, since] = [collector.total, Date.now()];
        return Date.now() - since > 15_000;
      },
      180_000,
      'the sinks to settle',
      100,
    );
    const result = collector.result(sent);
    out['failover: rules on the killed node (of 60)'] = owned;
    out['failover: kill -9 → every rule running again (leaseTimeout 10 s)'] = `${(tookMs / 1000).toFixed(1)} s`;
    out['failover: 1,000 msg/s at qos 1, messages sent / lost / duplicates'] =
      `${result.sent} / ${result.lost} / ${result.duplicates}`;
  } finally {
    await collector.close();
    await stopCluster(nodes);
  }
}

async function balance(nats: TestNatsServer, out: Figures): Promise<void> {
  const spec: ClusterSpec = { backend: 'nats', name: `bb${randomUUID().slice(0, 8)}`, natsUrls: nats.url };
  const nodes = await startCluster(spec, ['a', 'b', 'c']);
  try {
    const [a] = nodes;
    await a.req('POST', '/streams', { sql: 'CREATE STREAM m () WITH (TYPE="memory", DATASOURCE="bench/m")' });
    const rules = Array.from({ length: 300 }, (_, i) => `bal${i}`);
    for (const id of rules) await createRule(a, { id, sql: 'SELECT * FROM m', actions: [{ nop: {} }] });
    await allRunning(a, rules, '', 120_000);
    const before = await placement(a);
    const shares = ['a', 'b', 'c'].map((n) => [...before.values()].filter((p) => p.node === n).length);
    out['balance: 300 rules over 3 nodes (a / b / c)'] = shares.join(' / ');
    out['balance: largest share'] = `${((Math.max(...shares) / rules.length) * 100).toFixed(1)} %`;
    const d = await startClusterNode(spec, 'd');
    nodes.push(d);
    await waitFor(
      async () => {
        const p = await placement(a);
        return rules.every((id) => p.get(id)?.status === 'Running') && [...p.values()].some((x) => x.node === 'd');
      },
      120_000,
      'the 4th node to take its share',
      200,
    );
    await sleep(3000);
    const after = await placement(a);
    const moved = rules.filter((id) => before.get(id)?.node !== after.get(id)?.node).length;
    out['balance: a 4th node joins, rules moved'] = `${moved} (${((moved / rules.length) * 100).toFixed(1)} %)`;
  } finally {
    await stopCluster(nodes);
  }
}

async function overhead(nats: TestNatsServer, out: Figures): Promise<void> {
  const rounds = QUICK ? 2 : 4;
  // EDDY_BENCH_RATE changes the rate (a node's fixed background work weighs less per message at a higher one)
  const rate = Number(process.env.EDDY_BENCH_RATE) || 5000;
  const total = QUICK ? rate * 2 : rate * 4;
  const ratios: number[] = [];
  const us: Record<'cluster' | 'single', number[]> = { cluster: [], single: [] };
  for (let i = 0; i < rounds; i++) {
    const tag = `bench/cl/${process.pid}/${i}`;
    const inTopic = `${tag}/in`;
    // one node in cluster mode, one without, fed by the same publisher at the same time (workers: the default)
    const [cl, single] = await Promise.all([
      startEddy({
        KUIPER__CLUSTER__BACKEND: 'nats',
        KUIPER__CLUSTER__NAME: `bov${randomUUID().slice(0, 8)}`,
        KUIPER__CLUSTER__NODEID: 'solo',
        KUIPER__CLUSTER__NATS__SERVERS: nats.url,
      }),
      startEddy(),
    ]);
    const outs = await Promise.all([counter(`${tag}/cluster`), counter(`${tag}/single`)]);
    try {
      for (const [eddy, which] of [
        [cl, 'cluster'],
        [single, 'single'],
      ] as const) {
        let r = await eddy.req('POST', '/streams', {
          sql: `CREATE STREAM demo () WITH (DATASOURCE="${inTopic}", FORMAT="json")`,
        });
        if (r.status !== 201) throw new Error(r.text);
        r = await eddy.req('POST', '/rules', {
          id: 'mq',
          sql: 'SELECT * FROM demo WHERE temperature > 50',
          actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${tag}/${which}`, qos: 0 } }],
        });
        if (r.status !== 201) throw new Error(r.text);
      }
      // both rules run (the cluster node once it took the rule's lease) before anything is measured
      await waitFor(
        async () =>
          (await cl.req('GET', '/rules/mq/status')).text.includes('"running"') &&
          (await single.req('GET', '/rules/mq/status')).text.includes('"running"'),
        60_000,
        'both rules to run',
      );
      const warm = rate / 2;
      await publishDemo([inTopic], rate, warm);
      await Promise.all(outs.map((o) => o.settle(demoPassing(warm))));
      const base = outs.map((o) => o.count());
      const c0 = await Promise.all([cl.cpuUs(), single.cpuUs()]);
      await publishDemo([inTopic], rate, total);
      await Promise.all(outs.map((o, k) => o.settle(base[k] + demoPassing(total))));
      const c1 = await Promise.all([cl.cpuUs(), single.cpuUs()]);
      const [clUs, singleUs] = [(c1[0] - c0[0]) / total, (c1[1] - c0[1]) / total];
      us.cluster.push(clUs);
      us.single.push(singleUs);
      ratios.push(clUs / singleUs);
    } finally {
      await Promise.all([cl.close(), single.close(), ...outs.map((o) => o.close())]);
    }
  }
  out['overhead: CPU µs/message, node in cluster mode'] = spread(us.cluster);
  out['overhead: CPU µs/message, node without cluster mode'] = spread(us.single);
  out[`overhead: cluster / single (per-round ratios, ${rate / 1000}k msg/s MQTT→MQTT)`] = spread(ratios);
}

async function controlPlane(nats: TestNatsServer, out: Figures): Promise<void> {
  const spec: ClusterSpec = { backend: 'nats', name: `bcp${randomUUID().slice(0, 8)}`, natsUrls: nats.url };
  const nodes = await startCluster(spec, ['a', 'b', 'c']);
  // the peer: a single server with the same 1,000 rules, asked alternately, so that the machine's load weighs on both
  const peerHome = mkdtempSync(join(tmpdir(), 'eddy-bench-peer-'));
  // rules on the main thread, as on the cluster's nodes (test/helpers/cluster-nodes.ts)
  const peer = await startEddyProcess(peerHome, { KUIPER__BASIC__WORKERS: 'none' });
  try {
    const [a, , c] = nodes;
    // how soon a definition written on one node is read on another (polled every 2 ms)
    const reach: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await a.req('POST', '/streams', { sql: `CREATE STREAM reach${i} () WITH (TYPE="memory", DATASOURCE="x")` });
      while ((await c.req('GET', `/streams/reach${i}`)).status !== 200) await sleep(2);
      reach.push(performance.now() - t0);
    }
    out['propagation: a stream created on one node, read on another, p50 / max (20)'] =
      `${percentile(reach, 50).toFixed(1)} / ${Math.max(...reach).toFixed(1)} ms`;
    await a.req('POST', '/streams', { sql: 'CREATE STREAM m () WITH (TYPE="memory", DATASOURCE="bench/cp")' });
    await peer.req('POST', '/streams', { sql: 'CREATE STREAM m () WITH (TYPE="memory", DATASOURCE="bench/cp")' });
    const rules = Array.from({ length: 1000 }, (_, i) => `cp${i}`);
    for (const id of rules) await peer.req('POST', '/rules', { id, sql: 'SELECT * FROM m', actions: [{ nop: {} }] });
    const t0 = Date.now();
    for (let i = 0; i < rules.length; i += 8)
      await Promise.all(
        rules
          .slice(i, i + 8)
          .map((id, k) => createRule(nodes[(i + k) % 3], { id, sql: 'SELECT * FROM m', actions: [{ nop: {} }] })),
      );
    await allRunning(a, rules, '', 300_000);
    out['control plane: 1,000 rules created (any node) until all run'] = `${((Date.now() - t0) / 1000).toFixed(1)} s`;
    const timed = async (n: EddyProcess, path: string): Promise<number> => {
      const s = performance.now();
      const r = await n.req('GET', path);
      if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
      return performance.now() - s;
    };
    const list: number[] = [];
    const status: number[] = [];
    const peerList: number[] = [];
    const peerStatus: number[] = [];
    const samples = QUICK ? 100 : 300;
    for (let i = 0; i < samples; i++) {
      const n = nodes[i % 3];
      const rule = rules[Math.floor(Math.random() * rules.length)];
      list.push(await timed(n, '/rules'));
      peerList.push(await timed(peer, '/rules'));
      status.push(await timed(n, `/rules/${rule}/status`));
      peerStatus.push(await timed(peer, `/rules/${rule}/status`));
    }
    const p = (xs: number[]) => `${percentile(xs, 50).toFixed(1)} / ${percentile(xs, 99).toFixed(1)} ms`;
    out['control plane: GET /rules p50 / p99 (3 nodes, 1,000 rules)'] = p(list);
    out['control plane: GET /rules p50 / p99, single server, same rules (asked alternately)'] = p(peerList);
    out['control plane: GET /rules/{id}/status p50 / p99 (forwarded 2 in 3)'] = p(status);
    out['control plane: GET /rules/{id}/status p50 / p99, single server'] = p(peerStatus);
  } finally {
    await stopCluster(nodes);
    await peer.stop();
    rmSync(peerHome, { recursive: true, force: true });
  }
}

export async function run(): Promise<Figures> {
  const out: Figures = { 'machine load (1-min average) at start': await machineLoad() };
  const [nats, broker] = await Promise.all([startNatsServer(), startBroker()]);
  try {
    if (wanted('failover')) {
      await failover(nats, broker, out);
      out['machine load after failover'] = await machineLoad();
    }
    if (wanted('balance')) await balance(nats, out);
    if (wanted('overhead')) {
      await overhead(nats, out);
      out['machine load after overhead'] = await machineLoad();
    }
    if (wanted('control')) await controlPlane(nats, out);
    out['machine load at end'] = await machineLoad();
  } finally {
    await Promise.all([nats.stop(), broker.stop()]);
  }
  return out;
}
