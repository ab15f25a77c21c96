import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, plainOut } from './harness.js';
import { settle } from './helpers.js';
import { ManualClock } from '../../src/runtime/clock.js';

const T0 = 1541152486000;

test('batchSize: an op_<type>_<i>_0_batch node before the sink sends the rows of every batchSize triggers as one list', async () => {
  const clock = new ManualClock(T0);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM demo (a BIGINT) WITH (DATASOURCE="t/batch1", TYPE="memory")');
    const { topo, out } = await h.rule('b1', 'SELECT a FROM demo', {}, { batchSize: 3 });
    for (let i = 1; i <= 7; i++) h.publish('t/batch1', { a: BigInt(i) });
    await settle(6);
    assert.deepEqual(plainOut(out), [
      [{ a: 1 }, { a: 2 }, { a: 3 }],
      [{ a: 4 }, { a: 5 }, { a: 6 }],
    ]);
    assert.deepEqual(topo.printable().edges, {
      op_2_project: ['op_collect_0_0_batch'],
      op_collect_0_0_batch: ['sink_collect_0'],
      source_demo: ['op_2_project'],
    });
    const m = Object.fromEntries(topo.nodes().map((n) => [n.name, n]));
    assert.deepEqual(
      topo.nodes().map((n) => n.name),
      ['source_demo', 'op_2_project', 'op_collect_0_0_batch', 'sink_collect_0'],
    );
    assert.equal(m.op_collect_0_0_batch.recordsIn, 7);
    assert.equal(m.op_collect_0_0_batch.recordsOut, 2);
    assert.equal(m.sink_collect_0.recordsIn, 2);
  } finally {
    await h.close();
  }
});

test('lingerInterval: gathered rows are flushed every interval, and nothing is sent when nothing was gathered', async () => {
  const clock = new ManualClock(T0);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM demo (a BIGINT) WITH (DATASOURCE="t/batch2", TYPE="memory")');
    const { out } = await h.rule('b2', 'SELECT a FROM demo', {}, { batchSize: 10, lingerInterval: 1000 });
    h.publish('t/batch2', { a: 1n });
    h.publish('t/batch2', { a: 2n });
    await settle();
    assert.deepEqual(plainOut(out), []);
    clock.set(T0 + 1000);
    await settle(6);
    assert.deepEqual(plainOut(out), [[{ a: 1 }, { a: 2 }]]);
    clock.set(T0 + 3000);
    await settle(6);
    assert.equal(out.length, 1, 'an empty batch is not sent');
    h.publish('t/batch2', { a: 3n });
    await settle();
    clock.set(T0 + 4000);
    await settle(6);
    assert.deepEqual(plainOut(out), [[{ a: 1 }, { a: 2 }], [{ a: 3 }]]);
  } finally {
    await h.close();
  }
});

test('batching a window rule gathers the rows of several emissions; sendSingle still sends row by row', async () => {
  const clock = new ManualClock(T0);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM demo (a BIGINT) WITH (DATASOURCE="t/batch3", TYPE="memory")');
    const { out } = await h.rule(
      'b3',
      'SELECT a FROM demo GROUP BY COUNTWINDOW(2)',
      {},
      { batchSize: 2, sendSingle: true },
    );
    for (let i = 1; i <= 4; i++) h.publish('t/batch3', { a: BigInt(i) });
    await settle(8);
    assert.deepEqual(plainOut(out), [{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }]);
  } finally {
    await h.close();
  }
});
