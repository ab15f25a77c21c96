import { test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { createHarness, plainOut } from './harness.js';
import { settle, until } from './helpers.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { checkpointNamespace, dropCheckpoints } from '../../src/runtime/checkpoint.js';
import type { ConnectorContext, RewindableSource, SourceConnector, SourceEvent } from '../../src/contracts/index.js';
import type { ValueObject } from '../../src/values/value.js';
import { testSource } from '../helpers/declare.js';
import { ScriptService } from '../../src/extensions/scripts.js';

test('backpressure: a slow sink keeps a bounded buffer, overflow is dropped and counted, the rule goes on', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM bp (n BIGINT) WITH (DATASOURCE="t/bp", TYPE="memory")');
    const { topo, out } = await h.rule(
      'bp',
      'SELECT n FROM bp',
      { bufferLength: 16 },
      { bufferLength: 8, delayMs: 20 },
    );
    const heapBefore = process.memoryUsage().heapUsed;
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 500; i++) h.publish('t/bp', { n: BigInt(round * 500 + i) });
      await settle(1);
    }
    const byName = Object.fromEntries(topo.nodes().map((n) => [n.name, n]));
    const sink = byName.sink_collect_0;
    assert.ok(sink.bufferLength <= 8 + 1, `sink buffer stays bounded (${sink.bufferLength})`);
    const dropped = topo.nodes().reduce((a, n) => a + n.exceptions, 0);
    assert.ok(dropped > 5000, `drops are counted (${dropped})`);
    const project = byName.op_2_project;
    assert.ok(project.bufferLength <= 16);
    const dropNodes = topo.nodes().filter((n) => /buffer full, drop message from/.test(n.lastException));
    assert.ok(dropNodes.length > 0);
    assert.match(dropNodes[0].lastException, /^buffer full, drop message from \S+( to \S+)?$/);
    assert.ok(process.memoryUsage().heapUsed - heapBefore < 64 * 1024 * 1024, 'memory stays bounded');
    await until(() => out.length > 0, 'first delivery after the burst');
    assert.ok(out.length < 10_000);
    // the sink may still be draining the burst (slower on a loaded machine) and drop a row sent now, as it should:
    // the row is re-sent until one gets through
    const lastIsMarker = () => (plainOut(out.slice(-1)) as Array<Array<Record<string, unknown>>>)[0]?.[0]?.n === -1;
    for (const end = Date.now() + 10_000; !lastIsMarker() && Date.now() < end;) {
      h.publish('t/bp', { n: -1n });
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(plainOut(out.slice(-1)), [[{ n: -1 }]], 'still running after the burst');
  } finally {
    await h.close();
  }
});

test('a JavaScript function past its time limit is called once: the records queued behind it are not evaluated', async () => {
  const h = await createHarness();
  try {
    const scripts = new ScriptService({ store: h.store, functions: h.functions, timeoutMs: 200 });
    await scripts.create({
      id: 'spin',
      description: '',
      script: 'function spin(x) { while (true) {} return x; }',
      isAgg: false,
    });
    h.ddl('CREATE STREAM js (n BIGINT) WITH (DATASOURCE="t/js", TYPE="memory")');
    const { topo, out } = await h.rule('spinning', 'SELECT spin(n) AS n FROM js', { sendError: true });
    const failed = new Promise<Error>((r) => topo.onFatal(r));
    // queued together: each would hold the thread for the whole limit, and every other rule there with it
    for (let n = 0; n < 5; n++) h.publish('t/js', { n: BigInt(n) });
    assert.match((await failed).message, /^javascript function spin ran past its time limit of 200 ms/);
    await settle();
    const project = topo.nodes().find((n) => n.name === 'op_2_project');
    assert.equal(project?.recordsIn, 1, 'one record evaluated');
    assert.equal(project?.exceptions, 1);
    assert.equal(out.length, 0, 'nothing was sent after the stop');
  } finally {
    await h.close();
  }
});

async function mqttClient(): Promise<mqtt.MqttClient> {
  const c = mqtt.connect('mqtt://127.0.0.1:1883', { clientId: `rt-test-${Math.random().toString(36).slice(2)}` });
  await new Promise<void>((resolve, reject) => {
    c.once('connect', () => resolve());
    c.once('error', reject);
  });
  return c;
}

test('mqtt: a malformed message is an exception on the decoder node and an error row; the rule keeps running', async () => {
  const h = await createHarness();
  const client = await mqttClient();
  const topic = `eddy/rt/${Date.now()}/${Math.random().toString(36).slice(2)}`;
  try {
    h.ddl(`CREATE STREAM mq (temperature FLOAT) WITH (DATASOURCE="${topic}", FORMAT="json")`);
    const { topo, out } = await h.rule('mq', 'SELECT temperature FROM mq WHERE temperature > 50');
    assert.deepEqual(
      topo.nodes().map((n) => n.name),
      ['source_mq', 'op_2_decoder', 'op_3_filter', 'op_4_project', 'sink_collect_0'],
    );
    await client.publishAsync(topic, '{"temperature": 60');
    await client.publishAsync(topic, '{"temperature": 70}');
    await client.publishAsync(topic, '{"temperature": 20}');
    await until(() => out.length >= 2, 'two rows');
    const decoder = topo.nodes()[1];
    assert.equal(decoder.exceptions, 1);
    // the decoder runs inside the source's work: it still counts each event in, and each tuple or error record out
    assert.equal(decoder.recordsIn, 3);
    assert.equal(decoder.recordsOut, 3);
    assert.equal(decoder.messagesProcessed, 3);
    assert.notEqual(decoder.lastException, '');
    const rows = plainOut(out) as Array<Array<Record<string, unknown>>>;
    assert.equal(typeof rows[0][0].error, 'string');
    assert.deepEqual(rows[1], [{ temperature: 70 }]);
    assert.equal(topo.nodes()[0].recordsOut, 3);
  } finally {
    await client.endAsync();
    await h.close();
  }
});

test('mqtt: sendError false only counts the decode error', async () => {
  const h = await createHarness();
  const client = await mqttClient();
  const topic = `eddy/rt/${Date.now()}/${Math.random().toString(36).slice(2)}`;
  try {
    h.ddl(`CREATE STREAM mq2 () WITH (DATASOURCE="${topic}")`);
    const { topo, out } = await h.rule('mq2', 'SELECT * FROM mq2', { sendError: false });
    await client.publishAsync(topic, 'nope');
    await client.publishAsync(topic, '{"a": 1}');
    await until(() => out.length >= 1 && topo.nodes()[1].exceptions >= 1, 'the row and the decode error');
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(plainOut(out), [[{ a: 1 }]]);
    assert.equal(topo.nodes()[1].exceptions, 1);
  } finally {
    await client.endAsync();
    await h.close();
  }
});

test('qos 1: window contents are checkpointed and restored by the next run; deleting drops the checkpoint', async () => {
  const T0 = 1541152486000;
  const clock = new ManualClock(T0 + 100);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM cp (n BIGINT) WITH (DATASOURCE="t/cp", TYPE="memory")');
    const sql = 'SELECT n FROM cp GROUP BY TUMBLINGWINDOW(ss, 10)';
    const opts = { qos: 1, checkpointInterval: 1000 };
    const first = await h.rule('cp', sql, opts);
    h.publish('t/cp', { n: 1n });
    h.publish('t/cp', { n: 2n });
    await settle();
    clock.set(T0 + 1200);
    await settle();
    assert.ok(await h.store.get(checkpointNamespace('cp'), 'latest'), 'a periodic checkpoint was saved');
    await first.topo.close();
    assert.deepEqual(first.out, []);

    const second = await h.rule('cp', sql, opts);
    h.publish('t/cp', { n: 3n });
    await settle();
    clock.set(T0 + 4000); // first boundary: 46 s → 50 s
    await settle();
    assert.deepEqual(plainOut(second.out), [[{ n: 1 }, { n: 2 }, { n: 3 }]]);
    await second.topo.close();
    await dropCheckpoints(h.store, 'cp');
    assert.deepEqual(await h.store.keys(checkpointNamespace('cp')), []);
  } finally {
    await h.close();
  }
});

test('qos 1: a checkpoint in the stored form of earlier versions restores the window, its rows keeping their types', async () => {
  const T0 = 1541152486000;
  const clock = new ManualClock(T0 + 100);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM cpold (n BIGINT, s STRING) WITH (DATASOURCE="t/cpold", TYPE="memory")');
    // as saved before the nodes encoded their own state: node name → {rows, num, pending}, values tagged
    const doc = {
      id: T0,
      states: {
        op_2_window: {
          rows: [{ e: 'cpold', m: { n: { $i: '7' }, s: 'kept' }, meta: {}, ts: T0 + 50 }],
          num: { nextEnd: 0, nextStart: 0 },
          pending: [],
        },
      },
    };
    await h.store.set(checkpointNamespace('cpold'), 'latest', JSON.stringify(doc));
    const { topo, out } = await h.rule('cpold', 'SELECT n, s FROM cpold GROUP BY TUMBLINGWINDOW(ss, 10)', {
      qos: 1,
      checkpointInterval: 60000,
    });
    assert.deepEqual(
      topo.nodes().map((n) => n.name),
      ['source_cpold', 'op_2_window', 'op_3_project', 'sink_collect_0'],
    );
    h.publish('t/cpold', { n: 8n, s: 'new' });
    await settle();
    clock.set(T0 + 4000); // first boundary: 46 s → 50 s
    await settle();
    assert.deepEqual(plainOut(out), [
      [
        { n: 7, s: 'kept' },
        { n: 8, s: 'new' },
      ],
    ]);
    assert.equal(typeof (out[0] as Array<Record<string, unknown>>)[0].n, 'bigint', 'the int stays an int');
  } finally {
    await h.close();
  }
});

test('shared mqtt stream: one subscription decoded once for both rules, each reading its own typed fields', async () => {
  const h = await createHarness();
  const client = await mqttClient();
  const topic = `eddy/rt/${Date.now()}/${Math.random().toString(36).slice(2)}`;
  try {
    h.ddl(`CREATE STREAM smq (a BIGINT, b STRING) WITH (DATASOURCE="${topic}", FORMAT="json", SHARED="true")`);
    const r1 = await h.rule('smq1', 'SELECT a FROM smq');
    const r2 = await h.rule('smq2', 'SELECT b FROM smq');
    assert.equal(h.builder.shared.size(), 1);
    assert.ok(
      r1.topo.nodes().some((n) => /^op_smq_\d+_decoder$/.test(n.name)),
      'shared sub-topology nodes carry the stream name',
    );
    await client.publishAsync(topic, '{"a": 5, "b": "x"}');
    await until(() => r1.out.length >= 1 && r2.out.length >= 1, 'a row on each rule');
    assert.deepEqual(r1.out, [[{ a: 5n }]], 'a decoded as an int through the merged schema');
    assert.deepEqual(r2.out, [[{ b: 'x' }]]);
  } finally {
    await client.endAsync();
    await h.close();
  }
});

test('qos 1: analytic function state (lag, acc_sum per partition, latest) survives a restart', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM an (k STRING, n BIGINT) WITH (DATASOURCE="t/an", TYPE="memory")');
    const sql = 'SELECT n, lag(n) AS p, acc_sum(n) OVER (PARTITION BY k) AS total, latest(k) AS lk FROM an';
    const opts = { qos: 1, checkpointInterval: 60000 };
    const first = await h.rule('an', sql, opts);
    h.publish('t/an', { k: 'a', n: 1n });
    h.publish('t/an', { k: 'b', n: 10n });
    h.publish('t/an', { k: 'a', n: 2n });
    await settle();
    await first.topo.close(); // closing a qos ≥ 1 rule takes a last checkpoint

    const second = await h.rule('an', sql, opts);
    h.publish('t/an', { k: 'a', n: 5n });
    h.publish('t/an', { k: 'b', n: 1n });
    await settle();
    assert.deepEqual(plainOut(second.out), [[{ n: 5, p: 2, total: 8, lk: 'a' }], [{ n: 1, p: 5, total: 11, lk: 'b' }]]);
  } finally {
    await h.close();
  }
});

test('qos 1: the batch node keeps gathered rows across a restart', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM bq (n BIGINT) WITH (DATASOURCE="t/bq", TYPE="memory")');
    const opts = { qos: 1, checkpointInterval: 60000 };
    const first = await h.rule('bq', 'SELECT n FROM bq', opts, { batchSize: 3 });
    h.publish('t/bq', { n: 1n });
    h.publish('t/bq', { n: 2n });
    await settle();
    await first.topo.close();
    assert.deepEqual(first.out, []);
    const second = await h.rule('bq', 'SELECT n FROM bq', opts, { batchSize: 3 });
    h.publish('t/bq', { n: 3n });
    await settle(6);
    assert.deepEqual(plainOut(second.out), [[{ n: 1 }, { n: 2 }, { n: 3 }]]);
  } finally {
    await h.close();
  }
});

/** A bounded source that resumes from its offset: each connect emits the next three numbers. */
class CountingSource implements SourceConnector, RewindableSource {
  private next = 1;
  provision(): void {}
  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void): Promise<void> {
    for (let i = 0; i < 3; i++) emit({ payload: { n: BigInt(this.next++) }, meta: {}, timestamp: Date.now() });
  }
  offset(): ValueObject {
    return { last: BigInt(this.next - 1) };
  }
  rewind(offset: ValueObject): void {
    this.next = Number(offset.last) + 1;
  }
  async close(): Promise<void> {}
}

test('qos 1: a rewindable source resumes from the offset saved in the checkpoint; qos 0 starts over', async () => {
  const h = await createHarness();
  try {
    h.connectors.registry.declare(testSource('counting', () => new CountingSource()));
    h.ddl('CREATE STREAM cnt (n BIGINT) WITH (DATASOURCE="c", TYPE="counting")');
    const sql = 'SELECT n FROM cnt';
    const first = await h.rule('rw', sql, { qos: 1, checkpointInterval: 60000 });
    await settle();
    await first.topo.close();
    const second = await h.rule('rw', sql, { qos: 1, checkpointInterval: 60000 });
    await settle();
    await second.topo.close();
    assert.deepEqual(plainOut(first.out), [[{ n: 1 }], [{ n: 2 }], [{ n: 3 }]]);
    assert.deepEqual(plainOut(second.out), [[{ n: 4 }], [{ n: 5 }], [{ n: 6 }]]);
    const plain = await h.rule('rw0', sql, { qos: 0 });
    await settle();
    assert.deepEqual(plainOut(plain.out), [[{ n: 1 }], [{ n: 2 }], [{ n: 3 }]]);
  } finally {
    await h.close();
  }
});
