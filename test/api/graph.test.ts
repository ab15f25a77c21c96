/**
 * Graph rules (docs/runtime.md §1.4) end to end on a real server: MQTT sources and sinks through Mosquitto
 * (127.0.0.1:1883), every node type, topology/metric names, and eKuiper's validation errors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectAsync, type MqttClient } from 'mqtt';
import { startTestServer, type TestServer } from '../helpers/server.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

type J = Record<string, any>;

async function poll<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: T = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await fn();
  }
  return last;
}

async function status(s: TestServer, id: string): Promise<J> {
  return (await s.req('GET', `/rules/${id}/status`)).json() as J;
}

/** Messages received on `topic`, parsed as JSON, in arrival order. */
async function listen(client: MqttClient, topic: string): Promise<unknown[]> {
  const got: unknown[] = [];
  client.on('message', (t, payload) => {
    if (t === topic) got.push(JSON.parse(payload.toString()));
  });
  await client.subscribeAsync(topic, { qos: 1 });
  return got;
}

const pub = (client: MqttClient, topic: string, msg: unknown) =>
  client.publishAsync(topic, JSON.stringify(msg), { qos: 1 });

/**
 * Publishes `probe` on `topic` until the rule's source node `source` has counted a record: the rule is subscribed
 * from then on. Probes must be dropped by the rule.
 */
async function waitSubscribed(
  s: TestServer,
  client: MqttClient,
  id: string,
  source: string,
  topic: string,
  probe: unknown,
): Promise<void> {
  await poll(
    async () => {
      await pub(client, topic, probe);
      return status(s, id);
    },
    (st) => (st[`source_${source}_0_records_in_total`] ?? 0) > 0,
    `rule ${id} subscribed to ${topic}`,
  );
}

const mqttSink = (topic: string) => ({
  type: 'sink',
  nodeType: 'mqtt',
  props: { server: 'tcp://127.0.0.1:1883', topic },
});
const mqttSource = (topic: string, extra: J = {}) => ({
  type: 'source',
  nodeType: 'mqtt',
  props: { datasource: topic, ...extra },
});
const op = (nodeType: string, props: J) => ({
  type: 'operator',
  nodeType,
  props,
});

async function withServer(fn: (s: TestServer, client: MqttClient) => Promise<void>): Promise<void> {
  const s = await startTestServer();
  const client = await connectAsync('mqtt://127.0.0.1:1883', {
    clientId: uid('eddy_graph'),
    reconnectPeriod: 0,
  });
  try {
    await fn(s, client);
  } finally {
    await client.endAsync();
    await s.dispose();
  }
}

test('condition plan: filter, function, filter on the computed column, pick, mqtt sink; topology and metrics', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const out = await listen(client, tout);
    const rule = {
      id: 'g1',
      name: 'condition',
      graph: {
        nodes: {
          demo: mqttSource(tin),
          humidityFilter: op('filter', { expr: 'humidity > 30' }),
          logfunc: op('function', {
            expr: 'log(temperature) as log_temperature',
          }),
          tempFilter: op('filter', { expr: 'log_temperature < 1.6' }),
          pick: op('pick', { fields: ['log_temperature as temp', 'humidity'] }),
          mqttout: mqttSink(tout),
        },
        topo: {
          sources: ['demo'],
          edges: {
            demo: ['humidityFilter'],
            humidityFilter: ['logfunc'],
            logfunc: ['tempFilter'],
            tempFilter: ['pick'],
            pick: ['mqttout'],
          },
        },
      },
    };
    const r = await s.req('POST', '/rules', rule);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.text, 'Rule g1 was created successfully.');
    assert.deepEqual((await s.req('GET', '/rules/g1/topo')).json(), {
      sources: ['source_demo'],
      edges: {
        op_humidityFilter: ['op_logfunc'],
        op_logfunc: ['op_tempFilter'],
        op_pick: ['sink_mqttout'],
        op_tempFilter: ['op_pick'],
        source_demo: ['op_humidityFilter'],
      },
    });
    await waitSubscribed(s, client, 'g1', 'demo', tin, {
      temperature: 10,
      humidity: 0,
    });
    for (const m of [
      { temperature: 20, humidity: 40 },
      { temperature: 50, humidity: 60 },
      { temperature: 30, humidity: 10 },
      { temperature: 10, humidity: 31 },
    ]) {
      await pub(client, tin, m);
    }
    await poll(
      async () => out.length,
      (n) => n >= 2,
      'two results',
    );
    // Go's math.Log10(20), as eKuiper computes log (docs/sql.md §7.1); V8's Math.log10 gives …813
    assert.deepEqual(out, [[{ temp: 1.301029995663981, humidity: 40 }], [{ temp: 1, humidity: 31 }]]);
    const st = await poll(
      () => status(s, 'g1'),
      (x) => x.sink_mqttout_0_records_in_total === 2,
      'sink metrics',
    );
    assert.equal(st.status, 'running');
    for (const n of ['source_demo', 'op_humidityFilter', 'op_logfunc', 'op_tempFilter', 'op_pick', 'sink_mqttout']) {
      assert.equal(typeof st[`${n}_0_records_in_total`], 'number', n);
    }
    assert.equal(st.op_humidityFilter_0_records_out_total, 2 + 0 + 1, 'rows with humidity > 30 (probes dropped)');
    // the stored definition comes back; explain answers as eKuiper does for graph rules
    assert.deepEqual(((await s.req('GET', '/rules/g1')).json() as J).graph, rule.graph);
    const ex = await s.req('GET', '/rules/g1/explain');
    assert.equal(ex.status, 400);
    assert.deepEqual(ex.json(), {
      error: 1000,
      message: 'explain rules error: only support explain sql now',
    });
  });
});

test('group and order plan over a created stream: filter, count window, groupby, aggfunc, orderby, pick', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const st = uid('gs');
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM ${st} (kind STRING, color STRING, v BIGINT) WITH (DATASOURCE="${tin}", FORMAT="json")`,
        })
      ).status,
      201,
    );
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'g2',
      graph: {
        nodes: {
          src: { type: 'source', nodeType: 'mqtt', props: { sourceName: st } },
          data: op('filter', { expr: "kind = 'data'" }),
          win: op('window', { type: 'countwindow', size: 5 }),
          grp: op('groupby', { dimensions: ['color'] }),
          cnt: op('aggfunc', { expr: 'count(*)' }),
          avg: op('aggfunc', { expr: 'avg(v) as av' }),
          big: op('filter', { expr: 'count > 1' }),
          ord: op('orderby', { sorts: [{ field: 'color', desc: true }] }),
          pick: op('pick', { fields: ['color', 'count', 'av'] }),
          out: mqttSink(tout),
        },
        topo: {
          sources: ['src'],
          edges: {
            src: ['data'],
            data: ['win'],
            win: ['grp'],
            grp: ['cnt'],
            cnt: ['avg'],
            avg: ['big'],
            big: ['ord'],
            ord: ['pick'],
            pick: ['out'],
          },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    await waitSubscribed(s, client, 'g2', st, tin, { kind: 'probe' });
    const rows = [
      { color: 'red', v: 1 },
      { color: 'blue', v: 2 },
      { color: 'red', v: 3 },
      { color: 'green', v: 4 },
      { color: 'blue', v: 6 },
    ];
    for (const m of rows) await pub(client, tin, { kind: 'data', ...m });
    await poll(
      async () => out.length,
      (n) => n >= 1,
      'one window',
    );
    // green (one row) fails the filter that became HAVING after the group by
    assert.deepEqual(out[0], [
      { color: 'red', count: 2, av: 2 },
      { color: 'blue', count: 2, av: 4 },
    ]);
    // the source node is named after the created stream it reads, as eKuiper names it (not after its key)
    const usage = await s.req('GET', '/rules/g2/topo');
    assert.deepEqual((usage.json() as J).sources, [`source_${st}`]);
    assert.equal(typeof (await status(s, 'g2'))[`source_${st}_0_records_in_total`], 'number');
  });
});

test('window plan: a function over a plain collection, order by, then a row filter on the sorted collection', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'gw',
      graph: {
        nodes: {
          src: mqttSource(tin),
          real: op('filter', { expr: 'a != 0' }),
          win: op('window', { type: 'countwindow', size: 4 }),
          fn: op('function', { expr: 'abs(a) AS aa' }),
          ord: op('orderby', { sorts: [{ field: 'aa', desc: true }] }),
          big: op('filter', { expr: 'aa > 1' }),
          pick: op('pick', { fields: ['aa', 'a'] }),
          out: mqttSink(tout),
        },
        topo: {
          sources: ['src'],
          edges: { src: ['real'], real: ['win'], win: ['fn'], fn: ['ord'], ord: ['big'], big: ['pick'], pick: ['out'] },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    await waitSubscribed(s, client, 'gw', 'src', tin, { a: 0 });
    for (const a of [-3, 1, 5, -2]) await pub(client, tin, { a });
    await poll(
      async () => out.length,
      (n) => n >= 1,
      'the window',
    );
    assert.deepEqual(out[0], [
      { aa: 5, a: 5 },
      { aa: 3, a: -3 },
      { aa: 2, a: -2 },
    ]);
  });
});

test('join plan: two streams merged into one window, inner join on a condition, pick of both sides', async () => {
  await withServer(async (s, client) => {
    const t1 = `eddy/graph/${uid('a')}`;
    const t2 = `eddy/graph/${uid('b')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'g3',
      graph: {
        nodes: {
          ta: mqttSource(t1),
          tb: mqttSource(t2),
          f1: op('filter', { expr: 'id > 0' }),
          f2: op('filter', { expr: 'id > 0' }),
          win: op('window', { type: 'countwindow', size: 4 }),
          j: op('join', {
            from: 'ta',
            joins: [{ name: 'tb', type: 'inner', on: 'ta.id = tb.id' }],
          }),
          pick: op('pick', { fields: ['ta.id', 'ta.a', 'tb.b'] }),
          out: mqttSink(tout),
        },
        topo: {
          sources: ['ta', 'tb'],
          edges: {
            ta: ['f1'],
            tb: ['f2'],
            f1: ['win'],
            f2: ['win'],
            win: ['j'],
            j: ['pick'],
            pick: ['out'],
          },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    await waitSubscribed(s, client, 'g3', 'ta', t1, { id: 0 });
    await waitSubscribed(s, client, 'g3', 'tb', t2, { id: 0 });
    await pub(client, t1, { id: 1, a: 'x' });
    await pub(client, t1, { id: 2, a: 'y' });
    await pub(client, t2, { id: 2, b: 'B2' });
    await pub(client, t2, { id: 3, b: 'B3' });
    await poll(
      async () => out.length,
      (n) => n >= 1,
      'the joined window',
    );
    assert.deepEqual(out[0], [{ id: 2, a: 'y', b: 'B2' }]);
    const topo = (await s.req('GET', '/rules/g3/topo')).json() as J;
    assert.deepEqual(topo.sources, ['source_ta', 'source_tb']);
    assert.deepEqual(topo.edges.op_f1, ['op_win']);
    assert.deepEqual(topo.edges.op_f2, ['op_win']);
  });
});

test('group plan: two event-time sources, one watermark, window, join, group by, count, pick into two sinks', async () => {
  await withServer(async (s, client) => {
    const t1 = `eddy/graph/${uid('d1')}`;
    const t2 = `eddy/graph/${uid('d2')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'gg',
      name: 'Group rule',
      graph: {
        nodes: {
          device1: mqttSource(t1, { timestamp: 'ts' }),
          device2: mqttSource(t2, { timestamp: 'ts' }),
          watermark: op('watermark', {
            emitters: ['device1', 'device2'],
            sendWatermark: true,
          }),
          window: op('window', {
            type: 'tumblingwindow',
            unit: 'ms',
            size: 600,
          }),
          joinop: op('join', {
            from: 'device1',
            joins: [
              {
                name: 'device2',
                type: 'inner',
                on: 'abs(device1.ts - device2.ts) < 200',
              },
            ],
          }),
          groupop: op('groupby', { dimensions: ['device1.humidity'] }),
          countop: op('aggfunc', { expr: 'count(*)' }),
          pick: op('pick', { fields: ['device1.humidity', 'count'] }),
          mqtt: mqttSink(tout),
          log: { type: 'sink', nodeType: 'log', props: {} },
        },
        topo: {
          sources: ['device1', 'device2'],
          edges: {
            device1: ['watermark'],
            device2: ['watermark'],
            watermark: ['window'],
            window: ['joinop'],
            joinop: ['groupop'],
            groupop: ['countop'],
            countop: ['pick'],
            pick: ['mqtt', 'log'],
          },
        },
      },
      options: { isEventTime: true, lateTolerance: 0 },
    });
    assert.equal(r.status, 201, r.text);
    // the probes of the two devices are too far apart in time to join
    await waitSubscribed(s, client, 'gg', 'device1', t1, {
      ts: 1,
      humidity: 0,
    });
    await waitSubscribed(s, client, 'gg', 'device2', t2, {
      ts: 500,
      humidity: 0,
    });
    await pub(client, t1, { ts: 700, humidity: 10 });
    await pub(client, t2, { ts: 750, humidity: 99 });
    await pub(client, t1, { ts: 900, humidity: 10 });
    await pub(client, t2, { ts: 1000, humidity: 5 });
    // both devices move past the window end: the watermark releases it
    await pub(client, t1, { ts: 2500, humidity: 1 });
    await pub(client, t2, { ts: 2500, humidity: 1 });
    await poll(
      async () => out.length,
      (n) => n >= 1,
      'the group result',
    );
    assert.deepEqual(out[0], [{ humidity: 10, count: 3 }]);
    const st = await poll(
      () => status(s, 'gg'),
      (x) => x.sink_log_0_records_in_total >= 1,
      'the log sink',
    );
    assert.equal(st.sink_mqtt_0_records_in_total, 1);
    assert.ok(st.op_window_0_records_in_total >= 6);
  });
});

test('group+order plan: event-time sources straight into a window (no watermark node), group, count, HAVING, order', async () => {
  await withServer(async (s, client) => {
    const t1 = `eddy/graph/${uid('d1')}`;
    const t2 = `eddy/graph/${uid('d2')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'go',
      graph: {
        nodes: {
          device1: mqttSource(t1, { timestamp: 'ts' }),
          device2: mqttSource(t2, { timestamp: 'ts' }),
          window: op('window', { type: 'tumblingwindow', unit: 'ms', size: 1000 }),
          groupop: op('groupby', { dimensions: ['device_id'] }),
          countop: op('aggfunc', { expr: 'count(*)' }),
          filterop: op('filter', { expr: 'count > 1' }),
          orderop: op('orderby', { sorts: [{ field: 'device_id', desc: true }] }),
          pick: op('pick', { fields: ['device_id', 'count'] }),
          mqtt: mqttSink(tout),
        },
        topo: {
          sources: ['device1', 'device2'],
          edges: {
            device1: ['window'],
            device2: ['window'],
            window: ['groupop'],
            groupop: ['countop'],
            countop: ['filterop'],
            filterop: ['orderop'],
            orderop: ['pick'],
            pick: ['mqtt'],
          },
        },
      },
      options: { isEventTime: true, lateTolerance: 0 },
    });
    assert.equal(r.status, 201, r.text);
    // the window's own watermark is not a node of the topology
    assert.deepEqual(((await s.req('GET', '/rules/go/topo')).json() as J).edges.source_device1, ['op_window']);
    await waitSubscribed(s, client, 'go', 'device1', t1, { ts: 1, device_id: 'probe' });
    await waitSubscribed(s, client, 'go', 'device2', t2, { ts: 1, device_id: 'probe' });
    for (const [t, ts, id] of [
      [t1, 100, 'a'],
      [t2, 200, 'b'],
      [t1, 300, 'a'],
      [t2, 500, 'b'],
      [t1, 999, 'b'],
      [t2, 600, 'c'],
      [t1, 1500, 'late'],
      [t2, 1500, 'late'],
    ] as const) {
      await pub(client, t, { ts, device_id: id });
    }
    await poll(
      async () => out.length,
      (n) => n >= 1,
      'the first window',
    );
    // the probes form a group of their own in the same window
    assert.deepEqual(
      (out[0] as J[]).filter((g) => g.device_id !== 'probe'),
      [
        { device_id: 'b', count: 3 },
        { device_id: 'a', count: 2 },
      ],
    );
    // a rule on a worker thread reports its counters every 100 ms (docs/runtime.md §1.10)
    await poll(
      () => status(s, 'go'),
      (st) => st.op_window_0_records_in_total >= 8,
      'the window counting its rows',
    );
  });
});

test('lookup plan: a stream joined with a memory lookup table filled by another graph rule', async () => {
  await withServer(async (s, client) => {
    const tfill = `eddy/graph/${uid('fill')}`;
    const tin = `eddy/graph/${uid('in')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const memTopic = uid('lk');
    const table = uid('tbl');
    assert.equal(
      (
        await s.req('POST', '/tables', {
          sql: `CREATE TABLE ${table} (id BIGINT, name STRING) WITH (DATASOURCE="${memTopic}", TYPE="memory", KIND="lookup", KEY="id")`,
        })
      ).status,
      201,
    );
    // a graph rule without operators: what reaches the sink is the row itself
    const fill = await s.req('POST', '/rules', {
      id: 'fill',
      graph: {
        nodes: {
          src: mqttSource(tfill),
          mem: { type: 'sink', nodeType: 'memory', props: { topic: memTopic } },
        },
        topo: { sources: ['src'], edges: { src: ['mem'] } },
      },
    });
    assert.equal(fill.status, 201, fill.text);
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'g4',
      graph: {
        nodes: {
          orders: mqttSource(tin),
          names: {
            type: 'source',
            nodeType: 'memory',
            props: { sourceName: table, sourceType: 'table' },
          },
          j: op('join', {
            from: 'orders',
            joins: [{ name: table, type: 'inner', on: `orders.id = ${table}.id` }],
          }),
          pick: op('pick', { fields: ['orders.id', 'qty', 'name'] }),
          out: mqttSink(tout),
        },
        topo: {
          sources: ['orders', 'names'],
          edges: { orders: ['j'], names: ['j'], j: ['pick'], pick: ['out'] },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    await waitSubscribed(s, client, 'fill', 'src', tfill, {
      id: 1,
      name: 'one',
    });
    await pub(client, tfill, { id: 2, name: 'two' });
    await poll(
      () => status(s, 'fill'),
      (x) => x.sink_mem_0_records_in_total >= 2,
      'the table rows',
    );
    await waitSubscribed(s, client, 'g4', 'orders', tin, { id: 99, qty: 0 });
    await pub(client, tin, { id: 2, qty: 5 });
    await poll(
      async () => out.length,
      (n) => n >= 1,
      'the looked-up row',
    );
    assert.deepEqual(out[0], [{ id: 2, qty: 5, name: 'two' }]);
    const topo = (await s.req('GET', '/rules/g4/topo')).json() as J;
    // the lookup join is named after its table, as eKuiper names it
    assert.deepEqual(topo, {
      sources: ['source_orders'],
      edges: { [`op_${table}`]: ['op_pick'], op_pick: ['sink_out'], source_orders: [`op_${table}`] },
    });
  });
});

test('mix plan: one source feeding a row branch and a sliding-window branch; aggFunc straight into a sendSingle sink', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const t1 = `eddy/graph/${uid('r1')}`;
    const t2 = `eddy/graph/${uid('r2')}`;
    const out1 = await listen(client, t1);
    const out2 = await listen(client, t2);
    const single = (topic: string) => ({
      type: 'sink',
      nodeType: 'mqtt',
      props: { server: 'tcp://127.0.0.1:1883', topic, sendSingle: true },
    });
    const r = await s.req('POST', '/rules', {
      id: 'gm',
      graph: {
        nodes: {
          demo: mqttSource(tin, { timestamp: 'ts' }),
          myfilter: op('filter', { expr: 'temperature > 20' }),
          logfunc: op('function', {
            expr: 'log(temperature) as log_temperature',
          }),
          sinfunc: op('function', {
            expr: 'sin(temperature) as sin_temperature',
          }),
          window: op('window', { type: 'slidingwindow', unit: 'ss', size: 10 }),
          winfilter: op('filter', { expr: 'humidity > 30' }),
          aggfunc: op('aggFunc', {
            expr: 'avg(temperature) as avg_temperature',
          }),
          pick: op('pick', { fields: ['log_temperature', 'humidity'] }),
          mqtt1: single(t1),
          mqtt2: single(t2),
        },
        topo: {
          sources: ['demo'],
          edges: {
            demo: ['myfilter', 'sinfunc'],
            myfilter: ['logfunc'],
            logfunc: ['pick'],
            pick: ['mqtt1'],
            sinfunc: ['window'],
            window: ['winfilter'],
            winfilter: ['aggfunc'],
            aggfunc: ['mqtt2'],
          },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    // probes pass neither filter
    await waitSubscribed(s, client, 'gm', 'demo', tin, {
      ts: 1,
      temperature: 0,
      humidity: 0,
    });
    await pub(client, tin, { ts: 2, temperature: 100, humidity: 40 });
    await poll(
      async () => out1.length + out2.length,
      (n) => n >= 2,
      'both branches',
    );
    assert.deepEqual(out1, [{ log_temperature: 2, humidity: 40 }]);
    // the group's row is the first row of the window with the aggregate beside it
    assert.deepEqual(out2, [
      {
        ts: 2,
        temperature: 100,
        humidity: 40,
        sin_temperature: -0.5063656411097588, // Go's math.Sin(100)
        avg_temperature: 100,
      },
    ]);
    await pub(client, tin, { ts: 3, temperature: 50, humidity: 10 });
    await pub(client, tin, { ts: 4, temperature: 10, humidity: 50 });
    await poll(
      async () => out2.length,
      (n) => n >= 3,
      'one aggregate per row while the window holds a humid row',
    );
    assert.deepEqual(
      out2.slice(1).map((o) => (o as J).avg_temperature),
      [100, 55],
    );
    assert.deepEqual(
      out1.map((o) => (o as J).humidity),
      [40, 10],
    );
    await poll(
      () => status(s, 'gm'),
      (st) => st.sink_mqtt1_0_records_out_total === 2,
      'the sink counting its sends',
    );
  });
});

test('switch plan: each case feeds its own sink; stopAtFirstMatch', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const thigh = `eddy/graph/${uid('high')}`;
    const tlow = `eddy/graph/${uid('low')}`;
    const high = await listen(client, thigh);
    const low = await listen(client, tlow);
    const r = await s.req('POST', '/rules', {
      id: 'g5',
      graph: {
        nodes: {
          src: mqttSource(tin),
          sw: op('switch', {
            cases: ['a > 10', 'a > 0', 'a'],
            stopAtFirstMatch: true,
          }),
          high: mqttSink(thigh),
          low: mqttSink(tlow),
        },
        topo: {
          sources: ['src'],
          edges: { src: ['sw'], sw: [['high'], ['low']] },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    await waitSubscribed(s, client, 'g5', 'src', tin, { a: -1 });
    for (const a of [20, 5, 11, 1]) await pub(client, tin, { a });
    await poll(
      async () => high.length + low.length,
      (n) => n >= 4,
      'four routed rows',
    );
    assert.deepEqual(high, [[{ a: 20 }], [{ a: 11 }]]);
    assert.deepEqual(low, [[{ a: 5 }], [{ a: 1 }]]);
    assert.deepEqual(((await s.req('GET', '/rules/g5/topo')).json() as J).edges.op_sw, ['sink_high', 'sink_low']);
    // the probes reach the third case, whose value is not a bool: counted, routed nowhere
    const st = await poll(
      () => status(s, 'g5'),
      (x) => x.op_sw_0_exceptions_total > 0,
      'the switch counting the probes',
    );
    assert.equal(
      st.op_sw_0_last_exception,
      'run switch node sw, case a error: invalid condition that returns non-bool value float64(-1)',
    );
  });
});

test('watermark plan: event time from the payload, tumbling window released by the watermark', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'g6',
      graph: {
        nodes: {
          dev: mqttSource(tin, { timestamp: 'ts' }),
          real: op('filter', { expr: 'ts > 0' }),
          wm: op('watermark', { emitters: ['dev'], sendWatermark: true }),
          win: op('window', { type: 'tumblingwindow', unit: 'ss', size: 2 }),
          cnt: op('aggfunc', { expr: 'count(*) as n' }),
          pick: op('pick', {
            fields: ['n', 'window_end() as we'],
            isAgg: true,
          }),
          out: mqttSink(tout),
        },
        topo: {
          sources: ['dev'],
          edges: {
            dev: ['real'],
            real: ['wm'],
            wm: ['win'],
            win: ['cnt'],
            cnt: ['pick'],
            pick: ['out'],
          },
        },
      },
      options: { isEventTime: true, lateTolerance: 0 },
    });
    assert.equal(r.status, 201, r.text);
    await waitSubscribed(s, client, 'g6', 'dev', tin, { ts: 0 });
    for (const ts of [1100, 1500, 1999, 2100, 4500]) await pub(client, tin, { ts });
    await poll(
      async () => out.length,
      (n) => n >= 2,
      'two windows',
    );
    assert.deepEqual(out.slice(0, 2), [[{ n: 3, we: 2000 }], [{ n: 1, we: 4000 }]]);
  });
});

test('script plan: exec(row) per row and exec(rows) per window', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const tagg = `eddy/graph/${uid('agg')}`;
    const out = await listen(client, tout);
    const agg = await listen(client, tagg);
    const r = await s.req('POST', '/rules', {
      id: 'g7',
      graph: {
        nodes: {
          src: mqttSource(tin),
          real: op('filter', { expr: 'a > 0' }),
          dbl: op('script', {
            script: 'function exec(row, meta) { return { a2: row.a * 2, half: row.a / 2 }; }',
          }),
          win: op('window', { type: 'countwindow', size: 2 }),
          sum: op('script', {
            script: 'function exec(rows) { return { total: rows.reduce((s, r) => s + r.a2, 0) }; }',
            isAgg: true,
          }),
          out: mqttSink(tout),
          agg: mqttSink(tagg),
        },
        topo: {
          sources: ['src'],
          edges: {
            src: ['real'],
            real: ['dbl'],
            dbl: ['out', 'win'],
            win: ['sum'],
            sum: ['agg'],
          },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    await waitSubscribed(s, client, 'g7', 'src', tin, { a: 0 });
    await pub(client, tin, { a: 3 });
    await pub(client, tin, { a: 4 });
    await poll(
      async () => out.length + agg.length,
      (n) => n >= 3,
      'rows and the window',
    );
    assert.deepEqual(out, [[{ a2: 6, half: 1.5 }], [{ a2: 8, half: 2 }]]);
    assert.deepEqual(agg, [[{ total: 14 }]]);
  });
});

test('sink batching: batchSize puts op_<key>_0_batch before the sink, which sends the rows together', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'gb',
      graph: {
        nodes: {
          src: mqttSource(tin),
          real: op('filter', { expr: 'a > 0' }),
          out: { type: 'sink', nodeType: 'mqtt', props: { server: 'tcp://127.0.0.1:1883', topic: tout, batchSize: 3 } },
        },
        topo: { sources: ['src'], edges: { src: ['real'], real: ['out'] } },
      },
    });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(((await s.req('GET', '/rules/gb/topo')).json() as J).edges, {
      op_out_0_batch: ['sink_out'],
      op_real: ['op_out_0_batch'],
      source_src: ['op_real'],
    });
    await waitSubscribed(s, client, 'gb', 'src', tin, { a: 0 });
    for (const a of [1, 2, 3]) await pub(client, tin, { a });
    await poll(
      async () => out.length,
      (n) => n >= 1,
      'the batch',
    );
    assert.deepEqual(out[0], [{ a: 1 }, { a: 2 }, { a: 3 }]);
    await poll(
      () => status(s, 'gb'),
      (st) => st.op_out_0_batch_0_records_in_total === 3,
      'the batch node counting its rows',
    );
  });
});

test('qos 1: a window keeps its rows across a stop and start of a graph rule', async () => {
  await withServer(async (s, client) => {
    const tin = `eddy/graph/${uid('in')}`;
    const tout = `eddy/graph/${uid('out')}`;
    const out = await listen(client, tout);
    const r = await s.req('POST', '/rules', {
      id: 'gq',
      graph: {
        nodes: {
          src: mqttSource(tin),
          real: op('filter', { expr: 'a > 0' }),
          win: op('window', { type: 'countwindow', size: 3 }),
          pick: op('pick', { fields: ['a'] }),
          out: mqttSink(tout),
        },
        topo: {
          sources: ['src'],
          edges: { src: ['real'], real: ['win'], win: ['pick'], pick: ['out'] },
        },
      },
      options: { qos: 1, checkpointInterval: 600000 },
    });
    assert.equal(r.status, 201, r.text);
    await waitSubscribed(s, client, 'gq', 'src', tin, { a: 0 });
    await pub(client, tin, { a: 1 });
    await pub(client, tin, { a: 2 });
    await poll(
      () => status(s, 'gq'),
      (x) => x.op_win_0_records_in_total === 2,
      'two rows in the window',
    );
    assert.equal((await s.req('POST', '/rules/gq/stop')).status, 200);
    assert.equal((await s.req('POST', '/rules/gq/start')).status, 200);
    await waitSubscribed(s, client, 'gq', 'src', tin, { a: 0 });
    await pub(client, tin, { a: 3 });
    await poll(
      async () => out.length,
      (n) => n >= 1,
      'the window',
    );
    assert.deepEqual(out[0], [{ a: 1 }, { a: 2 }, { a: 3 }]);
  });
});

test('invalid graphs answer 400 with eKuiper texts and store nothing', async () => {
  const s = await startTestServer();
  try {
    const base = (nodes: J, edges: J, sources = ['src']) => ({
      graph: { nodes, topo: { sources, edges } },
    });
    const src = mqttSource('eddy/graph/never');
    const sink = { type: 'sink', nodeType: 'log', props: {} };
    const cases: Array<[string, J, string]> = [
      [
        'unknown node type',
        base(
          {
            src,
            x: { type: 'thing', nodeType: 'filter', props: {} },
            out: sink,
          },
          { src: ['out'], x: ['out'] },
        ),
        'unknown node type thing',
      ],
      [
        'unknown operator',
        base({ src, x: op('frobnicate', {}), out: sink }, { src: ['x'], x: ['out'] }),
        'unknown operator type frobnicate',
      ],
      ['source without edges', base({ src, out: sink }, {}), 'no edge defined for source node src'],
      ['sink with edges', base({ src, out: sink }, { src: ['out'], out: ['src'] }), 'sink out has edge'],
      [
        'operator without edges',
        base({ src, f: op('filter', { expr: 'a > 1' }), out: sink }, { src: ['f'] }),
        'no edge defined for operator node f',
      ],
      [
        'bad expression',
        base({ src, f: op('filter', { expr: 'a >' }), out: sink }, { src: ['f'], f: ['out'] }),
        'parse filter f with map[expr:a >] error: found "EOF", expected expression.',
      ],
      [
        'unknown function',
        base({ src, f: op('function', { expr: 'nosuch(a)' }), out: sink }, { src: ['f'], f: ['out'] }),
        'parse function f with map[expr:nosuch(a)] error: function nosuch not found',
      ],
      [
        'row into a collection operator',
        base({ src, g: op('groupby', { dimensions: ['a'] }), out: sink }, { src: ['g'], g: ['out'] }),
        'node src output does not match node g input: input type mismatch, expect collection, got row',
      ],
      [
        'grouped collection into function',
        base(
          {
            src,
            w: op('window', { type: 'countwindow', size: 2 }),
            g: op('groupby', { dimensions: ['a'] }),
            f: op('function', { expr: 'abs(a)' }),
            out: sink,
          },
          { src: ['w'], w: ['g'], g: ['f'], f: ['out'] },
        ),
        'node g output does not match node f input: collection type mismatch, expect non-grouped collection, got grouped collection',
      ],
      [
        'two inputs into a filter',
        base(
          {
            src,
            src2: mqttSource('eddy/graph/never2'),
            f: op('filter', { expr: 'a > 1' }),
            out: sink,
          },
          { src: ['f'], src2: ['f'], f: ['out'] },
          ['src', 'src2'],
        ),
        'operator f of type filter does not allow multiple inputs',
      ],
      [
        'window without a size',
        base(
          {
            src,
            w: op('window', { type: 'tumblingwindow', unit: 'ss' }),
            out: sink,
          },
          { src: ['w'], w: ['out'] },
        ),
        'parse window conf w with map[type:tumblingwindow unit:ss] error: window size 0 is invalid',
      ],
      [
        'unknown stream',
        base(
          {
            src: {
              type: 'source',
              nodeType: 'mqtt',
              props: { sourceName: 'nosuch' },
            },
            out: sink,
          },
          { src: ['out'] },
        ),
        'parse source src with map[sourceName:nosuch] error: fail to get stream nosuch, please check if stream is created',
      ],
      [
        'unreachable node',
        base({ src, f: op('filter', { expr: 'a > 1' }), out: sink }, { src: ['out'], f: ['out'] }),
        "can't find node ",
      ],
    ];
    let i = 0;
    for (const [what, body, message] of cases) {
      const id = `bad${i++}`;
      const r = await s.req('POST', '/rules', { id, ...body });
      assert.equal(r.status, 400, `${what}: ${r.text}`);
      assert.deepEqual(r.json(), { error: 2101, message }, what);
      assert.equal((await s.req('GET', `/rules/${id}`)).status, 404, `${what}: nothing stored`);
    }
    assert.deepEqual((await s.req('GET', '/rules')).json(), []);
    // the validate endpoint plans the graph: topology source names, or eKuiper's 422 text
    const ok = await s.req('POST', '/rules/validate', { id: 'v1', ...base({ src, out: sink }, { src: ['out'] }) });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.json(), { sources: ['source_src'], valid: true });
    const bad = await s.req('POST', '/rules/validate', { id: 'v2', ...base({ src, out: sink }, {}) });
    assert.equal(bad.status, 422);
    assert.equal(bad.text, 'invalid rule graph: no edge defined for source node src');
  } finally {
    await s.dispose();
  }
});

test('graph rules export and import like SQL rules, and restart from the store', async () => {
  const s = await startTestServer();
  try {
    const graph = {
      nodes: {
        src: {
          type: 'source',
          nodeType: 'memory',
          props: { datasource: 'eddy_graph_mem' },
        },
        out: { type: 'sink', nodeType: 'nop', props: {} },
      },
      topo: { sources: ['src'], edges: { src: ['out'] } },
    };
    assert.equal((await s.req('POST', '/rules', { id: 'gx', graph })).status, 201);
    const exported = (await s.req('GET', '/data/export')).json() as J;
    assert.deepEqual(JSON.parse(exported.rules.gx).graph, graph);
    assert.equal((await s.req('DELETE', '/rules/gx')).status, 200);
    const imp = await s.req('POST', '/data/import', {
      content: JSON.stringify(exported),
    });
    assert.equal(imp.status, 200, imp.text);
    const st = await poll(
      () => status(s, 'gx'),
      (x) => x.status === 'running',
      'imported rule running',
    );
    assert.equal(typeof st.source_src_0_records_in_total, 'number');
    assert.equal(typeof st.sink_out_0_records_in_total, 'number');
    // an update re-plans: a new node shows in the topology; a bad one leaves the rule as it was
    const next = {
      ...graph,
      nodes: {
        ...graph.nodes,
        f: { type: 'operator', nodeType: 'filter', props: { expr: 'a > 1' } },
      },
      topo: { sources: ['src'], edges: { src: ['f'], f: ['out'] } },
    };
    const up = await s.req('PUT', '/rules/gx', { id: 'gx', graph: next });
    assert.equal(up.status, 200, up.text);
    assert.deepEqual((await s.req('GET', '/rules/gx/topo')).json(), {
      sources: ['source_src'],
      edges: { op_f: ['sink_out'], source_src: ['op_f'] },
    });
    const bad = await s.req('PUT', '/rules/gx', {
      id: 'gx',
      graph: { ...next, topo: { sources: ['src'], edges: { src: ['f'] } } },
    });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.json(), {
      error: 2101,
      message: 'Update rule error: no edge defined for operator node f',
    });
    assert.deepEqual(((await s.req('GET', '/rules/gx/topo')).json() as J).edges.op_f, ['sink_out']);
  } finally {
    await s.dispose();
  }
});
