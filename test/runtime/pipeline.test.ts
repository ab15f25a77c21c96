import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, plainOut } from './harness.js';
import { settle } from './helpers.js';
import { ManualClock } from '../../src/runtime/clock.js';

test('windowless filter and projection over a memory stream: names, metrics, printable topology', async () => {
  const h = await createHarness();
  try {
    h.ddl(
      'CREATE STREAM demo (color STRING, size BIGINT, ts BIGINT) WITH (DATASOURCE="t/demo", TYPE="memory", FORMAT="json")',
    );
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

const T0 = 1541152486000; // 46 s into its minute

test('processing-time tumbling window under a manual clock: pushed-down WHERE, empty windows deliver []', async () => {
  const clock = new ManualClock(T0 + 300);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM demo (color STRING, size BIGINT) WITH (DATASOURCE="t/demo", TYPE="memory")');
    const { topo, out } = await h.rule('tw', 'SELECT color FROM demo WHERE size > 2 GROUP BY TUMBLINGWINDOW(ss, 2)');
    clock.set(T0 + 500);
    h.publish('t/demo', { color: 'red', size: 3n });
    h.publish('t/demo', { color: 'blue', size: 1n });
    await settle();
    clock.set(T0 + 1999);
    h.publish('t/demo', { color: 'green', size: 5n });
    await settle();
    clock.set(T0 + 2000);
    await settle();
    h.publish('t/demo', { color: 'yellow', size: 9n });
    await settle();
    clock.set(T0 + 4000);
    await settle();
    clock.set(T0 + 6000);
    await settle();
    assert.deepEqual(plainOut(out), [[{ color: 'red' }, { color: 'green' }], [{ color: 'yellow' }], []]);
    assert.deepEqual(
      topo.nodes().map((n) => n.name),
      ['source_demo', 'op_2_filter', 'op_3_window', 'op_4_project', 'sink_collect_0'],
    );
  } finally {
    await h.close();
  }
});

test('count window over a stream', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM demo (n BIGINT) WITH (DATASOURCE="t/cw", TYPE="memory")');
    const { out } = await h.rule('cw', 'SELECT n FROM demo GROUP BY COUNTWINDOW(3, 2)');
    for (let i = 1n; i <= 6n; i++) h.publish('t/cw', { n: i });
    await settle();
    assert.deepEqual(plainOut(out), [
      [{ n: 2 }, { n: 3 }, { n: 4 }],
      [{ n: 4 }, { n: 5 }, { n: 6 }],
    ]);
  } finally {
    await h.close();
  }
});

for (const [kind, expected] of [
  ['INNER', [[{ id: 1, v: 'a1', w: 'b1' }]]],
  [
    'LEFT',
    [
      [
        { id: 1, v: 'a1', w: 'b1' },
        { id: 2, v: 'a2' },
      ],
    ],
  ],
  ['RIGHT', [[{ id: 1, v: 'a1', w: 'b1' }, { w: 'b3' }]]],
  ['FULL', [[{ id: 1, v: 'a1', w: 'b1' }, { id: 2, v: 'a2' }, { w: 'b3' }]]],
] as const) {
  test(`${kind} JOIN of two streams inside a count window`, async () => {
    const h = await createHarness();
    try {
      h.ddl('CREATE STREAM a (id BIGINT, v STRING) WITH (DATASOURCE="t/a", TYPE="memory")');
      h.ddl('CREATE STREAM b (id BIGINT, w STRING) WITH (DATASOURCE="t/b", TYPE="memory")');
      const { out } = await h.rule(
        `j${kind}`,
        `SELECT a.id, v, w FROM a ${kind} JOIN b ON a.id = b.id GROUP BY COUNTWINDOW(4)`,
      );
      h.publish('t/a', { id: 1n, v: 'a1' });
      h.publish('t/b', { id: 1n, w: 'b1' });
      h.publish('t/a', { id: 2n, v: 'a2' });
      h.publish('t/b', { id: 3n, w: 'b3' });
      await settle();
      assert.deepEqual(plainOut(out), expected);
    } finally {
      await h.close();
    }
  });
}

test('CROSS JOIN pairs every left row with every right row', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM a (id BIGINT) WITH (DATASOURCE="t/ca", TYPE="memory")');
    h.ddl('CREATE STREAM b (k BIGINT) WITH (DATASOURCE="t/cb", TYPE="memory")');
    const { out } = await h.rule('jc', 'SELECT id, k FROM a CROSS JOIN b GROUP BY COUNTWINDOW(4)');
    h.publish('t/ca', { id: 1n });
    h.publish('t/cb', { k: 10n });
    h.publish('t/ca', { id: 2n });
    h.publish('t/cb', { k: 20n });
    await settle();
    assert.deepEqual(plainOut(out), [
      [
        { id: 1, k: 10 },
        { id: 1, k: 20 },
        { id: 2, k: 10 },
        { id: 2, k: 20 },
      ],
    ]);
  } finally {
    await h.close();
  }
});

test('stream–scan table join: the table keeps RETAIN_SIZE latest rows, each event joins the snapshot', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM s (id BIGINT) WITH (DATASOURCE="t/s", TYPE="memory")');
    h.ddl('CREATE TABLE tb (id BIGINT, name STRING) WITH (DATASOURCE="t/tb", TYPE="memory", RETAIN_SIZE="2")');
    const { topo, out } = await h.rule('st', 'SELECT s.id, name FROM s INNER JOIN tb ON s.id = tb.id');
    for (const [id, name] of [
      [1n, 'one'],
      [2n, 'two'],
      [3n, 'three'],
    ] as const)
      h.publish('t/tb', { id, name });
    await settle();
    h.publish('t/s', { id: 3n });
    h.publish('t/s', { id: 1n });
    h.publish('t/s', { id: 2n });
    await settle();
    assert.deepEqual(plainOut(out), [[{ id: 3, name: 'three' }], [{ id: 2, name: 'two' }]]);
    assert.ok(topo.nodes().some((n) => n.name.endsWith('_join_aligner')));
  } finally {
    await h.close();
  }
});

test('lookup table join: per event through the connector, node op_<table>, LEFT keeps misses', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM s (id BIGINT, v BIGINT) WITH (DATASOURCE="t/ls", TYPE="memory")');
    h.ddl('CREATE TABLE lt (id BIGINT, name STRING) WITH (DATASOURCE="t/lt", TYPE="memory", KIND="lookup", KEY="id")');
    const { topo, out } = await h.rule('lk', 'SELECT s.id, v, name FROM s LEFT JOIN lt ON s.id = lt.id');
    h.publish('t/lt', { id: 1n, name: 'one' });
    h.publish('t/lt', { id: 2n, name: 'two' });
    h.publish('t/ls', { id: 2n, v: 20n });
    h.publish('t/ls', { id: 7n, v: 70n });
    await settle(6);
    assert.deepEqual(plainOut(out), [[{ id: 2, v: 20, name: 'two' }], [{ id: 7, v: 70 }]]);
    assert.ok(topo.nodes().some((n) => n.name === 'op_lt'));
  } finally {
    await h.close();
  }
});

test('shared stream: one connector for every rule, each rule gets every event, closed with the last rule', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM sh (a BIGINT, b STRING) WITH (DATASOURCE="t/sh", TYPE="memory", SHARED="true")');
    const r1 = await h.rule('sh1', 'SELECT a FROM sh');
    const r2 = await h.rule('sh2', 'SELECT b FROM sh WHERE a > 1');
    assert.equal(h.builder.shared.size(), 1);
    assert.equal(h.builder.shared.subscribers('sh'), 2);
    h.publish('t/sh', { a: 1n, b: 'x' });
    h.publish('t/sh', { a: 2n, b: 'y' });
    await settle();
    assert.deepEqual(plainOut(r1.out), [[{ a: 1 }], [{ a: 2 }]]);
    assert.deepEqual(plainOut(r2.out), [[{ b: 'y' }]]);
    await r1.topo.close();
    assert.equal(h.builder.shared.subscribers('sh'), 1);
    h.publish('t/sh', { a: 3n, b: 'z' });
    await settle();
    assert.deepEqual(plainOut(r2.out), [[{ b: 'y' }], [{ b: 'z' }]]);
    await r2.topo.close();
    assert.equal(h.builder.shared.size(), 0);
  } finally {
    await h.close();
  }
});

test('event-time windowless rule: events are released in timestamp order once the watermark passes them', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM e (n BIGINT, ts BIGINT) WITH (DATASOURCE="t/e", TYPE="memory", TIMESTAMP="ts")');
    const { out } = await h.rule('ev', 'SELECT n FROM e', { isEventTime: true, lateTolerance: 1000 });
    for (const [n, ts] of [
      [1n, 10_000n],
      [2n, 12_000n],
      [3n, 11_500n],
      [4n, 9_000n],
      [5n, 14_000n],
    ] as const)
      h.publish('t/e', { n, ts });
    await settle();
    // watermarks 9000, 11000, 11000, -, 13000; 9000 < 11000 is late
    assert.deepEqual(plainOut(out), [[{ n: 1 }], [{ n: 3 }], [{ n: 2 }]]);
  } finally {
    await h.close();
  }
});

test('STRICT_VALIDATION: declared fields are converted, a mistyped or missing one becomes a preprocessor error row', async () => {
  const h = await createHarness();
  try {
    h.ddl(
      'CREATE STREAM sv (color STRING, size BIGINT) WITH (DATASOURCE="t/sv", TYPE="memory", STRICT_VALIDATION="true")',
    );
    const { out } = await h.rule('sv', 'SELECT * FROM sv');
    h.publish('t/sv', { color: 2, size: 3 });
    h.publish('t/sv', { color: 'red' });
    h.publish('t/sv', { color: 'red', size: 3 });
    await settle();
    const rows = plainOut(out) as Array<Array<Record<string, unknown>>>;
    assert.equal(
      rows[0][0].error,
      'error in preprocessor: field color type mismatch: cannot convert float64(2) to string',
    );
    assert.equal(rows[1][0].error, 'error in preprocessor: field size is not found');
    assert.deepEqual(rows[2], [{ color: 'red', size: 3 }]);
    assert.equal(typeof (out[2] as Array<Record<string, unknown>>)[0].size, 'bigint', 'size converted to an int');
  } finally {
    await h.close();
  }
});

test('STRICT_VALIDATION checks only the fields the rule reads when it does not use *', async () => {
  const h = await createHarness();
  try {
    h.ddl(
      'CREATE STREAM sv2 (color STRING, size BIGINT) WITH (DATASOURCE="t/sv2", TYPE="memory", STRICT_VALIDATION="true")',
    );
    const { out } = await h.rule('sv2', 'SELECT size FROM sv2 WHERE size > 3');
    h.publish('t/sv2', { color: 7, size: 4 });
    h.publish('t/sv2', { color: 'x', size: 'big' });
    await settle();
    const rows = plainOut(out) as Array<Array<Record<string, unknown>>>;
    assert.deepEqual(rows[0], [{ size: 4 }]);
    assert.match(String(rows[1][0].error), /^error in preprocessor: field size type mismatch/);
  } finally {
    await h.close();
  }
});

test('lookup cache (lookup.cache in the config key): a cached key is not fetched again', async () => {
  const h = await createHarness({ sourceYaml: { memory: 'cached:\n  lookup:\n    cache: true\n    cacheTtl: 0\n' } });
  try {
    h.ddl('CREATE STREAM cs (id BIGINT) WITH (DATASOURCE="t/cs", TYPE="memory")');
    h.ddl(
      'CREATE TABLE ct (id BIGINT, name STRING) WITH (DATASOURCE="t/ct", TYPE="memory", KIND="lookup", KEY="id", CONF_KEY="cached")',
    );
    h.ddl('CREATE TABLE ut (id BIGINT, name STRING) WITH (DATASOURCE="t/ct", TYPE="memory", KIND="lookup", KEY="id")');
    const cached = await h.rule('lc1', 'SELECT name FROM cs INNER JOIN ct ON cs.id = ct.id');
    const plain = await h.rule('lc2', 'SELECT name FROM cs INNER JOIN ut ON cs.id = ut.id');
    h.publish('t/ct', { id: 1n, name: 'one' });
    h.publish('t/cs', { id: 1n });
    await settle(6);
    h.publish('t/ct', { id: 1n, name: 'uno' });
    h.publish('t/cs', { id: 1n });
    await settle(6);
    assert.deepEqual(plainOut(cached.out), [[{ name: 'one' }], [{ name: 'one' }]]);
    assert.deepEqual(plainOut(plain.out), [[{ name: 'one' }], [{ name: 'uno' }]]);
  } finally {
    await h.close();
  }
});
