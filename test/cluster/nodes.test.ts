/**
 * Three Eddy nodes as child processes sharing one nats-server (docs/cluster.md): every definition written on one node
 * is read on every node, each rule runs on exactly one node (its owner, by placement), any node answers for any rule
 * (commands and status forwarded to the owner), pinned rules and rules of one SHARED stream are placed as asked, and
 * a stateless rule with `parallelism` runs on several nodes sharing its topic through the broker.
 */
import { after, before, test } from 'node:test';
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startNatsServer, type TestNatsServer } from '../helpers/nats-server.js';
import { startBroker, type TestBroker } from '../helpers/mosquitto.js';
import { Collector, Publisher, probeThrough } from '../helpers/faults.js';
import { waitFor } from '../helpers/process.js';
import { placement, startCluster, stopCluster, waitAllRunning, type ClusterNode } from '../helpers/cluster-nodes.js';

let nats: TestNatsServer;
let broker: TestBroker;
let nodes: ClusterNode[] = [];
const name = `nodes${randomUUID().slice(0, 8)}`;

before(async () => {
  [nats, broker] = await Promise.all([startNatsServer(), startBroker()]);
  nodes = await startCluster(
    {
      backend: 'nats',
      name,
      natsUrls: nats.url,
      // Prometheus on the REST port (both 0: ephemeral), to read each node's series
      env: {
        MQTT_SOURCE__DEFAULT__SERVER: broker.url,
        KUIPER__BASIC__PROMETHEUS: 'true',
        KUIPER__BASIC__PROMETHEUSPORT: '0',
      },
    },
    ['a', 'b', 'c'],
  );
});

after(async () => {
  await stopCluster(nodes);
  await Promise.all([nats?.stop(), broker?.stop()]);
});

const node = (id: string): ClusterNode => nodes.find((n) => n.id === id)!;

async function created(n: ClusterNode, path: string, body: unknown): Promise<void> {
  const r = await n.req('POST', path, body);
  assert.equal(r.status, 201, `${path}: ${r.text}`);
}

test('rules created on one node run each on exactly one node and are listed alike on every node', async () => {
  await created(node('a'), '/streams', {
    sql: `CREATE STREAM placed () WITH (DATASOURCE="${name}/placed", FORMAT="json")`,
  });
  for (const n of nodes)
    await waitFor(async () => (await n.req('GET', '/streams')).text.includes('placed'), 10_000, 'the stream');
  const ids = Array.from({ length: 12 }, (_, i) => `p${i}`);
  for (const id of ids) await created(node('a'), '/rules', { id, sql: 'SELECT * FROM placed', actions: [{ nop: {} }] });
  const seen = await Promise.all(nodes.map((n) => waitAllRunning(n, ids, 30_000)));
  // every node lists the same owner (each publishes the status of its own rules every second)
  await waitFor(
    async () => {
      const views = await Promise.all(nodes.map((n) => placement(n)));
      return ids.every((id) => views.every((v) => v.get(id)?.node === views[0].get(id)?.node));
    },
    10_000,
    'every node to list the same owners',
  );
  const owners = seen[0];
  assert.ok(new Set(ids.map((id) => owners.get(id)?.node)).size >= 2, 'the rules are spread over the nodes');
  const view = (await node('b').req('GET', '/cluster')).json() as {
    backend: string;
    nodes: Array<{ id: string; rest: string; alive: boolean; lastSeen: number; rules: string[] }>;
  };
  assert.equal(view.backend, 'nats');
  assert.deepEqual(
    view.nodes.map((n) => n.id),
    ['a', 'b', 'c'],
  );
  const held = view.nodes.flatMap((n) => n.rules.filter((r) => ids.includes(r)));
  assert.deepEqual([...held].sort(), [...ids].sort(), 'each rule is held by exactly one node');
  for (const n of view.nodes) for (const r of n.rules) if (ids.includes(r)) assert.equal(owners.get(r)?.node, n.id);
  // the full status of a rule is answered by its owner, from whichever node it is asked
  const status = (await node('c').req('GET', '/rules/p0/status')).json() as { status: string; node: string };
  assert.equal(status.status, 'running');
  assert.equal(status.node, owners.get('p0')?.node);
});

test('commands on a node that does not run the rule apply where it runs: stop, start, update, delete', async () => {
  await created(node('b'), '/streams', { sql: `CREATE STREAM cmds () WITH (DATASOURCE="${name}/cmds")` });
  await waitFor(async () => (await node('c').req('GET', '/streams')).text.includes('cmds'), 10_000, 'the stream');
  await created(node('b'), '/rules', { id: 'cmd1', sql: 'SELECT * FROM cmds', actions: [{ nop: {} }] });
  const owner = (await waitAllRunning(node('b'), ['cmd1'], 30_000)).get('cmd1')!.node;
  const other = nodes.find((n) => n.id !== owner)!;
  const third = nodes.find((n) => n.id !== owner && n.id !== other.id)!;
  let r = await other.req('POST', '/rules/cmd1/stop');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, 'Rule cmd1 was stopped.');
  // forwarded to the owner, which stopped it before answering: its status says so at once
  const stopped = (await third.req('GET', '/rules/cmd1/status')).json() as { status: string; message: string };
  assert.equal(stopped.status, 'stopped');
  assert.equal(stopped.message, 'Stopped: canceled manually.');
  r = await third.req('POST', '/rules/cmd1/start');
  assert.equal(r.status, 200, r.text);
  assert.equal(((await other.req('GET', '/rules/cmd1/status')).json() as { status: string }).status, 'running');
  r = await other.req('PUT', '/rules/cmd1', { id: 'cmd1', sql: 'SELECT a FROM cmds', actions: [{ nop: {} }] });
  assert.equal(r.status, 200, r.text);
  for (const n of nodes)
    await waitFor(
      async () => ((await n.req('GET', '/rules/cmd1')).json() as { sql: string }).sql === 'SELECT a FROM cmds',
      10_000,
      `the update on ${n.id}`,
    );
  r = await third.req('DELETE', '/rules/cmd1');
  assert.equal(r.status, 200, r.text);
  for (const n of nodes)
    await waitFor(async () => (await n.req('GET', '/rules/cmd1')).status === 404, 10_000, `the delete on ${n.id}`);
  await waitFor(
    async () => {
      const view = (await other.req('GET', '/cluster')).json() as { nodes: Array<{ rules: string[] }> };
      return view.nodes.every((n) => !n.rules.includes('cmd1'));
    },
    10_000,
    'its lease to be released',
  );
});

test('a rule runs on its owner whichever node created it: what is published reaches its sink', async () => {
  const topic = `${name}/flow`;
  await created(node('c'), '/streams', { sql: `CREATE STREAM flow () WITH (DATASOURCE="${topic}/in")` });
  await waitFor(async () => (await node('a').req('GET', '/streams')).text.includes('flow'), 10_000, 'the stream');
  await created(node('a'), '/rules', {
    id: 'flow1',
    sql: 'SELECT * FROM flow WHERE temperature > 50',
    actions: [{ mqtt: { server: broker.url, topic: `${topic}/out`, sendSingle: true } }],
  });
  await waitAllRunning(node('b'), ['flow1'], 30_000);
  const collector = await Collector.start(broker.url, `${topic}/out`);
  const publisher = await Publisher.start(broker.url);
  try {
    await probeThrough(publisher, collector, `${topic}/in`);
    await publisher.run(`${topic}/in`, 50, 500);
    await waitFor(() => collector.distinct >= 50, 20_000, 'every message at the sink');
    assert.equal(collector.result(50).lost, 0);
  } finally {
    await publisher.close();
    await collector.close();
  }
});

test('a pinned rule runs on its node; the rules of one SHARED stream run together', async () => {
  await created(node('a'), '/streams', {
    sql: `CREATE STREAM together () WITH (DATASOURCE="${name}/together", SHARED="true")`,
  });
  await waitFor(async () => (await node('c').req('GET', '/streams')).text.includes('together'), 10_000, 'stream');
  const shared = ['sh1', 'sh2', 'sh3', 'sh4', 'sh5'];
  for (const id of shared)
    await created(node('c'), '/rules', { id, sql: 'SELECT * FROM together', actions: [{ nop: {} }] });
  await created(node('c'), '/rules', {
    id: 'pinned',
    sql: 'SELECT * FROM together',
    actions: [{ nop: {} }],
    options: { node: 'b' },
  });
  const seen = await waitAllRunning(node('a'), [...shared, 'pinned'], 30_000);
  assert.equal(new Set(shared.map((id) => seen.get(id)?.node)).size, 1, 'one node runs every rule of the stream');
  assert.equal(seen.get('pinned')?.node, 'b');
});

test('parallelism: refused for a stateful rule; a stateless one runs on three nodes sharing its topic', async () => {
  const topic = `${name}/par`;
  await created(node('a'), '/streams', { sql: `CREATE STREAM par () WITH (DATASOURCE="${topic}/in")` });
  await waitFor(async () => (await node('b').req('GET', '/streams')).text.includes('par'), 10_000, 'the stream');
  const refused = await node('b').req('POST', '/rules', {
    id: 'par_window',
    sql: 'SELECT count(*) FROM par GROUP BY TumblingWindow(ss, 1)',
    actions: [{ nop: {} }],
    options: { parallelism: 3 },
  });
  assert.equal(refused.status, 400, refused.text);
  assert.match(refused.text, /cannot run with parallelism 3: it has a window/);
  await created(node('b'), '/rules', {
    id: 'par1',
    sql: 'SELECT * FROM par WHERE temperature > 50',
    actions: [{ mqtt: { server: broker.url, topic: `${topic}/out`, sendSingle: true } }],
    options: { parallelism: 3 },
  });
  await waitFor(
    async () => {
      const view = (await node('c').req('GET', '/cluster')).json() as { nodes: Array<{ id: string; rules: string[] }> };
      return view.nodes.filter((n) => n.rules.includes('par1')).length === 3;
    },
    30_000,
    'an instance on each node',
  );
  const collector = await Collector.start(broker.url, `${topic}/out`);
  const publisher = await Publisher.start(broker.url);
  try {
    // every instance's shared subscription is in place once each has let a probe through
    await waitFor(
      async () => {
        publisher.probe(`${topic}/in`);
        const counts = await Promise.all(nodes.map((n) => localRecordsIn(n, 'par1')));
        return counts.every((c) => c > 0);
      },
      30_000,
      'each instance to receive its share',
      300,
    );
    // the last probes may still be on their way: the counts are taken once they stopped moving
    let settled = '';
    await waitFor(
      async () => {
        const now = JSON.stringify(await Promise.all(nodes.map((n) => localRecordsIn(n, 'par1'))));
        const still = now === settled;
        settled = now;
        return still;
      },
      10_000,
      'the probes to settle',
      500,
    );
    const before = await Promise.all(nodes.map((n) => localRecordsIn(n, 'par1')));
    await publisher.run(`${topic}/in`, 300, 1000);
    await waitFor(() => collector.distinct >= 300, 20_000, 'every message at the sink');
    const after = await Promise.all(nodes.map((n) => localRecordsIn(n, 'par1')));
    const shares = after.map((x, i) => x - before[i]);
    assert.equal(
      shares.reduce((a, b) => a + b, 0),
      300,
      `each message went to one instance: ${shares.join(', ')}`,
    );
    assert.ok(
      shares.every((x) => x > 0),
      `every instance got a share: ${shares.join(', ')}`,
    );
    assert.equal(collector.result(300).duplicates, 0);
  } finally {
    await publisher.close();
    await collector.close();
  }
});

/** Records in of a rule's instances on node `n` itself (the status asked with the forwarding header is answered locally). */
async function localRecordsIn(n: ClusterNode, id: string): Promise<number> {
  const res = await fetch(`${n.url}/rules/${id}/status`, { headers: { 'x-eddy-forwarded-by': 'test' } });
  const st = (await res.json()) as Record<string, unknown>;
  return Number(st.source_par_0_records_in_total ?? 0);
}

test('config keys and javascript functions written on one node are used on the others', async () => {
  let r = await node('a').req('PUT', '/metadata/sinks/mqtt/confKeys/shared_key', { qos: 1, retained: false });
  assert.equal(r.status, 200, r.text);
  await waitFor(
    async () => (await node('c').req('GET', '/metadata/sinks/yaml/mqtt')).text.includes('shared_key'),
    10_000,
    'the config key on c',
  );
  r = await node('b').req('POST', '/udf/javascript', {
    id: 'twice',
    description: '',
    script: 'function twice(x) { return x * 2; }',
    isAgg: false,
  });
  assert.equal(r.status, 201, r.text);
  await waitFor(async () => (await node('c').req('GET', '/udf/javascript/twice')).status === 200, 10_000, 'udf on c');
  r = await node('c').req('POST', '/rules/validate', {
    id: 'uses_twice',
    sql: 'SELECT twice(temperature) FROM flow',
    actions: [{ nop: {} }],
  });
  assert.equal(r.status, 200, r.text);
});

test('each node exports the series of the rules it runs, with its node label', async () => {
  const owners = await waitAllRunning(node('a'), ['p0', 'p1', 'p2', 'p3'], 30_000);
  for (const n of nodes) {
    const text = await (await fetch(`${n.url}/metrics`)).text();
    const series = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    assert.ok(series.length > 0);
    for (const line of series) assert.match(line, new RegExp(`node="${n.id}"`), line);
    for (const id of ['p0', 'p1', 'p2', 'p3']) {
      const here = owners.get(id)?.node === n.id;
      assert.equal(text.includes(`ruleID="${id}"`), here, `${id} on ${n.id}`);
    }
  }
});

test('eddy cluster prints the nodes and the rules each runs; eddy show rules names the node', async () => {
  const run = (args: string[]) =>
    new Promise<{ code: number; stdout: string }>((resolve) => {
      const bin = new URL('../../bin/eddy.mjs', import.meta.url).pathname;
      const child = spawn(process.execPath, [bin, '--port', new URL(node('b').url).port, ...args], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.on('close', (code) => resolve({ code: code ?? -1, stdout }));
    });
  const cluster = await run(['cluster']);
  assert.equal(cluster.code, 0);
  for (const id of ['a', 'b', 'c']) assert.match(cluster.stdout, new RegExp(`^${id} .* yes `, 'm'));
  assert.match(cluster.stdout, /backend: nats/);
  const owner = (await placement(node('b'))).get('p0')?.node;
  assert.match(cluster.stdout, new RegExp(`^${owner} .*p0`, 'm'));
  const rules = await run(['show', 'rules']);
  assert.equal(rules.code, 0);
  assert.match(rules.stdout, /Node/);
  assert.match(rules.stdout, new RegExp(`p0 .*Running .*${owner}`));
});

test('export covers the whole cluster; a full import on one node replaces the data of every node, all or nothing', async () => {
  const exported = (await node('c').req('GET', '/data/export')).json() as {
    rules: Record<string, string>;
    streams: Record<string, string>;
  };
  const all = (await placement(node('a'))).keys();
  assert.deepEqual(Object.keys(exported.rules).sort(), [...all].sort(), 'every rule of the cluster is exported');
  assert.ok('placed' in exported.streams && 'flow' in exported.streams);

  const bundle = {
    streams: { imported: `CREATE STREAM imported () WITH (DATASOURCE="${name}/imported")` },
    rules: Object.fromEntries(
      ['i1', 'i2', 'i3', 'i4'].map((id) => [
        id,
        JSON.stringify({ id, sql: 'SELECT * FROM imported', actions: [{ nop: {} }] }),
      ]),
    ),
  };
  // a bundle with an item that fails changes nothing anywhere
  const broken = { ...bundle, streams: { ...bundle.streams, bad: 'CREATE STREAM bad (' } };
  let r = await node('b').req('POST', '/data/import', { content: JSON.stringify(broken) });
  assert.equal(r.status, 400, r.text);
  for (const n of nodes) assert.ok((await placement(n)).has('p0'), `${n.id} kept its rules`);

  r = await node('b').req('POST', '/data/import', { content: JSON.stringify(bundle) });
  assert.equal(r.status, 200, r.text);
  for (const n of nodes) {
    await waitFor(
      async () => [...(await placement(n)).keys()].sort().join() === 'i1,i2,i3,i4',
      20_000,
      `${n.id} to hold exactly the imported rules`,
    );
    await waitFor(
      async () => JSON.stringify((await n.req('GET', '/streams')).json()) === '["imported"]',
      10_000,
      `${n.id} to hold exactly the imported stream`,
    );
  }
  await waitAllRunning(node('c'), ['i1', 'i2', 'i3', 'i4'], 30_000);
});
