import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, plainOut } from './harness.js';
import { settle } from './helpers.js';

test('windowless filter and projection over a memory stream: names, metrics, printable topology', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM demo (color STRING, size BIGINT, ts BIGINT) WITH (DATASOURCE="t/demo", TYPE="memory", FORMAT="json")');
    const { topo, out } = await h.rule('r1', 'SELECT color, size * 2 AS dbl FROM demo WHERE size > 3');
    h.publish('t/demo', { color: 'red', size: 3n, ts: 1n });
    h.publish('t/demo', { color: 'blue', size: 6n, ts: 2n });
    await settle(5);
    assert.deepEqual(plainOut(out), [[{ color: 'blue', dbl: 12 }]]);
    assert.deepEqual(topo.printable(), {
      sources: ['source_demo'],
      edges: { op_2_filter: ['op_3_project'], op_3_project: ['sink_collect_0'], source_demo: ['op_2_filter'] },
    });
    const m = Object.fromEntries(topo.nodes().map((n) => [n.name, n]));
    assert.equal(m.source_demo.recordsOut, 2);
    assert.equal(m.op_2_filter.recordsIn, 2);
    assert.equal(m.op_2_filter.recordsOut, 1);
    assert.equal(m.op_3_project.recordsOut, 1);
  } finally {
    await h.close();
  }
});
