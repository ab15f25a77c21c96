import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, plainOut } from './harness.js';
import { settle } from './helpers.js';
import { ManualClock } from '../../src/runtime/clock.js';

const T0 = 1541152486000; // 46 s into its minute

test('tumbling GROUP BY with count/avg/max and window bounds; an empty window of a grouped query emits nothing', async () => {
  const clock = new ManualClock(T0 + 100);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM d (deviceId STRING, t FLOAT) WITH (DATASOURCE="t/d", TYPE="memory")');
    const { out } = await h.rule(
      'agg',
      'SELECT deviceId, count(*) AS c, avg(t) AS a, max(t) AS m, window_start() AS ws, window_end() AS we FROM d GROUP BY deviceId, TUMBLINGWINDOW(ss, 2) ORDER BY deviceId',
    );
    h.publish('t/d', { deviceId: 'b', t: 1 });
    h.publish('t/d', { deviceId: 'a', t: 2 });
    h.publish('t/d', { deviceId: 'b', t: 4 });
    await settle();
    clock.set(T0 + 2000);
    await settle();
    clock.set(T0 + 4000);
    await settle();
    assert.deepEqual(plainOut(out), [
      [
        { deviceId: 'a', c: 1, a: 2, m: 2, ws: T0 + 100, we: T0 + 2000 },
        { deviceId: 'b', c: 2, a: 2.5, m: 4, ws: T0 + 100, we: T0 + 2000 },
      ],
    ]);
  } finally {
    await h.close();
  }
});

test('aggregate without dimensions over an empty window gives one row of nulls ([{}])', async () => {
  const clock = new ManualClock(T0 + 100);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM d2 (t FLOAT) WITH (DATASOURCE="t/d2", TYPE="memory")');
    const { out } = await h.rule('agg0', 'SELECT count(*) AS c, max(t) AS m FROM d2 GROUP BY TUMBLINGWINDOW(ss, 2)');
    clock.set(T0 + 2000);
    await settle();
    assert.deepEqual(plainOut(out), [[{}]]);
  } finally {
    await h.close();
  }
});

test('analytic functions see every event before WHERE (lag, acc_sum over partitions)', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM an (color STRING, size BIGINT) WITH (DATASOURCE="t/an", TYPE="memory")');
    const { topo, out } = await h.rule(
      'an',
      'SELECT size, lag(size) AS prev, acc_sum(size) OVER (PARTITION BY color) AS total FROM an WHERE size > 2',
    );
    for (const [color, size] of [
      ['red', 3n],
      ['blue', 1n],
      ['red', 5n],
      ['blue', 6n],
    ] as const)
      h.publish('t/an', { color, size });
    await settle();
    assert.deepEqual(plainOut(out), [
      [{ size: 3, total: 3 }],
      [{ size: 5, prev: 1, total: 8 }],
      [{ size: 6, prev: 5, total: 7 }],
    ]);
    assert.ok(topo.nodes().some((n) => n.name.endsWith('_analytic')));
  } finally {
    await h.close();
  }
});

test('unnest in a windowless rule: one trigger per element; inside a window: one list', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM ar (id BIGINT, arr ARRAY(BIGINT)) WITH (DATASOURCE="t/ar", TYPE="memory")');
    const single = await h.rule('un1', 'SELECT unnest(arr) AS v, id FROM ar');
    const win = await h.rule('un2', 'SELECT unnest(arr) AS v, id FROM ar GROUP BY COUNTWINDOW(1)');
    h.publish('t/ar', { id: 1n, arr: [7n, 8n] });
    await settle();
    assert.deepEqual(plainOut(single.out), [[{ v: 7, id: 1 }], [{ v: 8, id: 1 }]]);
    assert.deepEqual(plainOut(win.out), [
      [
        { v: 7, id: 1 },
        { v: 8, id: 1 },
      ],
    ]);
  } finally {
    await h.close();
  }
});

test('evaluation errors become error rows and the next event is processed normally', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM er () WITH (DATASOURCE="t/er", TYPE="memory")');
    const { topo, out } = await h.rule('er', 'SELECT size * 5 AS c FROM er');
    h.publish('t/er', { size: 'string' });
    h.publish('t/er', { size: 2 });
    await settle();
    const rows = plainOut(out) as Array<Array<Record<string, unknown>>>;
    assert.match(String(rows[0][0].error), /^run Select error: alias: c/);
    assert.deepEqual(rows[1], [{ c: 10 }]);
    const project = topo.nodes().find((n) => n.name.endsWith('_project'));
    assert.equal(project?.exceptions, 1);
  } finally {
    await h.close();
  }
});

test('event-time hopping with HAVING and last_agg_hit_count (the reference case)', async () => {
  const h = await createHarness();
  try {
    h.ddl(
      'CREATE STREAM demoE (color STRING, size BIGINT, ts BIGINT) WITH (DATASOURCE="t/demoE", TYPE="memory", TIMESTAMP="ts")',
    );
    const { out } = await h.rule(
      'eh',
      'SELECT count(*), last_agg_hit_time() as lt, last_agg_hit_count() as lc, event_time() as et FROM demoE GROUP BY HOPPINGWINDOW(ss, 2, 1) HAVING lc < 4',
      { isEventTime: true, lateTolerance: 1000 },
    );
    for (const ts of [1541152486013n, 1541152487632n, 1541152489252n, 1541152486822n, 1541152488442n, 1541152492342n]) {
      h.publish('t/demoE', { color: 'red', size: 1n, ts });
    }
    await settle();
    assert.deepEqual(plainOut(out), [
      [{ count: 1, lc: 0, lt: 0, et: 1541152487000 }],
      [{ count: 2, lc: 1, lt: 1541152487000, et: 1541152488000 }],
      [{ count: 2, lc: 2, lt: 1541152488000, et: 1541152489000 }],
      [{ count: 2, lc: 3, lt: 1541152489000, et: 1541152490000 }],
    ]);
  } finally {
    await h.close();
  }
});

test('last_hit_count() in WHERE counts earlier projected events even when events arrive in one burst', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM lh (n BIGINT) WITH (DATASOURCE="t/lh", TYPE="memory")');
    const { out } = await h.rule('lh', 'SELECT n, last_hit_count() AS lc FROM lh WHERE last_hit_count() < 2');
    for (let i = 1n; i <= 4n; i++) h.publish('t/lh', { n: i });
    await settle();
    assert.deepEqual(plainOut(out), [[{ n: 1, lc: 0 }], [{ n: 2, lc: 1 }]]);
  } finally {
    await h.close();
  }
});

test('processing-time session and hopping windows through SQL under a manual clock', async () => {
  const clock = new ManualClock(T0);
  const h = await createHarness({ clock });
  try {
    h.ddl('CREATE STREAM sw (n BIGINT) WITH (DATASOURCE="t/ss", TYPE="memory")');
    const session = await h.rule(
      'sess',
      'SELECT collect(n) AS ns, window_start() AS ws, window_end() AS we FROM sw GROUP BY SESSIONWINDOW(ss, 2, 1)',
    );
    const hop = await h.rule(
      'hop',
      'SELECT count(*) AS c, window_end() AS we FROM sw GROUP BY HOPPINGWINDOW(ss, 2, 1)',
    );
    const at = async (t: number, n: bigint) => {
      clock.set(T0 + t);
      await settle(1);
      h.publish('t/ss', { n });
      await settle(1);
    };
    await at(100, 1n);
    await at(600, 2n);
    await at(2500, 3n);
    clock.set(T0 + 5000);
    await settle();
    assert.deepEqual(plainOut(session.out), [
      [{ ns: [1, 2], ws: T0 + 100, we: T0 + 1600 }],
      [{ ns: [3], ws: T0 + 2500, we: T0 + 3500 }],
    ]);
    assert.deepEqual(plainOut(hop.out), [
      [{ c: 2, we: T0 + 1000 }],
      [{ c: 2, we: T0 + 2000 }],
      [{ c: 1, we: T0 + 3000 }],
      [{ c: 1, we: T0 + 4000 }],
      [{ we: T0 + 5000 }],
    ]);
  } finally {
    await h.close();
  }
});

test('event-time rule without window: WHERE on hit-counter aliases runs after the watermark, which every event moves', async () => {
  const h = await createHarness();
  try {
    h.ddl(
      'CREATE STREAM demoE (color STRING, size BIGINT, ts BIGINT) WITH (DATASOURCE="t/demoE", TYPE="memory", TIMESTAMP="ts")',
    );
    const { out } = await h.rule(
      'sf',
      'SELECT *, last_hit_time() AS lt, last_hit_count() AS lc, event_time() AS et FROM demoE WHERE size < 3 AND lc < 2',
      { isEventTime: true, lateTolerance: 1000 },
    );
    // the last two rows fail WHERE; the last one still lifts the watermark past the red row
    const rows: Array<[string, bigint, bigint]> = [
      ['red', 3n, 1541152486013n],
      ['blue', 2n, 1541152487632n],
      ['red', 1n, 1541152489252n],
      ['blue', 6n, 1541152486822n],
      ['yellow', 4n, 1541152488442n],
      ['yellow', 4n, 1541152492342n],
    ];
    for (const [color, size, ts] of rows) h.publish('t/demoE', { color, size, ts });
    await settle();
    assert.deepEqual(plainOut(out), [
      [{ color: 'blue', size: 2, ts: 1541152487632, lt: 0, lc: 0, et: 1541152487632 }],
      [{ color: 'red', size: 1, ts: 1541152489252, lt: 1541152487632, lc: 1, et: 1541152489252 }],
    ]);
  } finally {
    await h.close();
  }
});

test("a later aliased field reads an earlier alias of the same name as a column; the alias's own expression reads the column", async () => {
  // eKuiper 1.14's planner binds the names in every later aliased select field to the earlier aliases
  // (docs/sql.md §4.3); only its operator-level unit tests, which skip that binding, read the column there
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM al () WITH (DATASOURCE="t/al", TYPE="memory")');
    const { out } = await h.rule('al', 'SELECT a + 1 AS a, a + 2 AS b FROM al');
    const split = await h.rule('al2', 'SELECT split_value(a,"/",1) AS a, split_value(a,"/",0) AS b FROM al');
    h.publish('t/al', { a: 1 });
    h.publish('t/al', { a: 'x/y/z' });
    await settle();
    assert.deepEqual((plainOut(out) as unknown[])[0], [{ a: 2, b: 4 }]);
    assert.deepEqual((plainOut(split.out) as unknown[])[1], [{ a: 'y', b: 'y' }]);
  } finally {
    await h.close();
  }
});
