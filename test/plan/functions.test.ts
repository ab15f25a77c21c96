import { test } from 'node:test';
import assert from 'node:assert/strict';
import { catalogOf, deps, plan, run, runEach, runWindow, tuple, SCHEMALESS } from './helpers.js';
import { planQuery } from '../../src/plan/planner.js';
import { EvalUnit } from '../../src/plan/plan.js';
import { EddyError } from '../../src/core/errors.js';

const DEMO =
  'CREATE STREAM demo (color STRING, size BIGINT, ts BIGINT) WITH (DATASOURCE="d", FORMAT="json", TYPE="memory")';
const demo = catalogOf(DEMO, SCHEMALESS);
const EVENTS = [
  { color: 'red', size: 3n, ts: 1n },
  { color: 'blue', size: 6n, ts: 2n },
  { color: 'blue', size: 2n, ts: 3n },
  { color: 'yellow', size: 4n, ts: 4n },
  { color: 'red', size: 1n, ts: 5n },
];

test('aggregates run over the group; plain columns come from its first row (docs/sql.md §4.7)', () => {
  const p = plan('SELECT count(*) AS c, sum(a) AS s, collect(a) AS all, a FROM s GROUP BY COUNTWINDOW(3)');
  assert.deepEqual(runWindow(p, [{ a: 1 }, { a: 2 }, { b: 1 }]), [{ c: 3n, s: 3, all: [1, 2, null], a: 1 }]);
});

test('an empty window of an aggregate query gives one row where count(*) is null', () => {
  const p = plan('SELECT count(*) AS c, collect(a) AS all FROM s GROUP BY TUMBLINGWINDOW(ss, 1)');
  assert.deepEqual(runWindow(p, []), [{ all: [] }]);
  const g = plan('SELECT a, count(*) AS c FROM s GROUP BY a, TUMBLINGWINDOW(ss, 1)');
  assert.deepEqual(runWindow(g, []), []);
  // a non-aggregate empty window projects nothing
  assert.deepEqual(runWindow(plan('SELECT a FROM s GROUP BY TUMBLINGWINDOW(ss, 1)'), []), []);
});

test('GROUP BY dimensions, HAVING and ORDER BY', () => {
  const p = plan(
    'SELECT color, count(*) AS c FROM demo GROUP BY color, TUMBLINGWINDOW(ss, 10) HAVING count(*) > 1 ORDER BY color DESC',
    demo,
  );
  assert.deepEqual(runWindow(p, EVENTS), [
    { color: 'red', c: 2n },
    { color: 'blue', c: 2n },
  ]);
});

test('group keys by text: 1, 1.0 and "1" fall into one group', () => {
  const p = plan('SELECT count(*) AS c FROM s GROUP BY k, COUNTWINDOW(3)');
  assert.deepEqual(
    runWindow(p, [{ k: 1 }, { k: '1' }, { k: 2 }])
      .map((o) => o.c)
      .sort(),
    [1n, 2n],
  );
});

test('ORDER BY puts nulls last in both directions and rejects mixed kinds', () => {
  const asc = plan('SELECT a FROM s GROUP BY COUNTWINDOW(3) ORDER BY a');
  assert.deepEqual(runWindow(asc, [{ a: 2 }, {}, { a: 1 }]), [{ a: 1 }, { a: 2 }, {}]);
  const desc = plan('SELECT a FROM s GROUP BY COUNTWINDOW(3) ORDER BY a DESC');
  assert.deepEqual(runWindow(desc, [{ a: 2 }, {}, { a: 1 }]), [{ a: 2 }, { a: 1 }, {}]);
  assert.throws(
    () => runWindow(asc, [{ a: 2 }, { a: 'x' }]),
    /^StageError: run Order By error: incompatible types for comparison/,
  );
});

test('LIMIT applies per trigger after ORDER BY', () => {
  const p = plan('SELECT a FROM s GROUP BY COUNTWINDOW(3) ORDER BY a DESC LIMIT 2');
  assert.deepEqual(runWindow(p, [{ a: 1 }, { a: 3 }, { a: 2 }]), [{ a: 3 }, { a: 2 }]);
});

test('HAVING null is an error; a windowless single event is an error record (docs/sql.md §4.8)', () => {
  const p = plan('SELECT count(*) AS c FROM s GROUP BY COUNTWINDOW(2) HAVING max(a)');
  assert.throws(
    () => runWindow(p, [{ b: 1 }, { b: 2 }]),
    /run Having error: invalid condition that returns non-bool value <nil>/,
  );
  const w = plan('SELECT count(*) AS c FROM s HAVING count(*) > 0');
  const ctx = w.newContext('r', 0);
  assert.throws(() => w.having!.apply([new EvalUnit(tuple({ a: 1 }), null)], ctx), /run Having error: invalid input/);
});

test('aggregates in a windowless rule see the single event', () => {
  assert.deepEqual(run(plan('SELECT count(*) AS c, sum(a) AS s FROM s'), { a: 2 }), { c: 1n, s: 2 });
});

test('analytic functions see every event, before WHERE (conformance TestLagAlias)', () => {
  const p = plan(
    'SELECT lag(size) as lastSize, lag(had_changed(true,size)), size, lastSize/size as changeRate FROM demo WHERE size > 2',
    demo,
  );
  assert.deepEqual(runEach(p, EVENTS), [
    [{ size: 3n }],
    [{ lastSize: 3n, size: 6n, lag: true, changeRate: 0n }],
    null,
    [{ lastSize: 2n, size: 4n, lag: true, changeRate: 0n }],
    null,
  ]);
});

test('analytic state is kept per PARTITION BY key; WHEN makes events invalid', () => {
  const p = plan('SELECT acc_sum(size) OVER (PARTITION BY color), color FROM demo', demo);
  assert.deepEqual(
    runEach(p, EVENTS).map((o) => o?.[0].acc_sum),
    [3, 6, 8, 4, 4],
  );
  const w = plan('SELECT acc_sum(size) OVER (WHEN color = "red") AS s FROM demo', demo);
  assert.deepEqual(
    runEach(w, EVENTS).map((o) => o?.[0].s),
    [3, 3, 3, 3, 4],
  );
  const lag = plan('SELECT lag(a, 2, "a10") as a FROM s');
  assert.deepEqual(
    runEach(lag, [{ a: 'a1' }, { a: 'a2' }, { a: 'a1' }, { a: 'a1' }]).map((o) => o?.[0].a),
    ['a10', 'a10', 'a1', 'a2'],
  );
});

test('changed_col(true, *) and changed_cols with * (conformance cases)', () => {
  const p = plan('SELECT changed_col(true, *) FROM s');
  assert.deepEqual(
    runEach(p, [
      { a: 'a1', b: 'b1' },
      { a: 'a1', c: 'c1' },
      { a: 'a1', c: 'c1' },
    ]),
    [[{ changed_col: { a: 'a1', b: 'b1' } }], [{ changed_col: { a: 'a1', c: 'c1' } }], [{}]],
  );
  const cc = plan('SELECT changed_cols("", true, *, c) FROM s');
  assert.deepEqual(
    runEach(cc, [
      { a: 'a1', b: 'b1' },
      { a: 'a1', b: 'b2', c: 'c1' },
      { a: 'a1', c: 'c1' },
      { a: 'a1', b: 'b2', c: 'c2' },
    ]),
    [[{ a: 'a1', b: 'b1' }], [{ b: 'b2', c: 'c1' }], [{}], [{ c: 'c2' }]],
  );
  const pre = plan('SELECT changed_cols("tt_", true, color, size) FROM demo', demo);
  assert.deepEqual(runEach(pre, EVENTS.slice(0, 2)), [
    [{ tt_color: 'red', tt_size: 3n }],
    [{ tt_color: 'blue', tt_size: 6n }],
  ]);
});

test('unnest expands rows; objects merge into the row (docs/sql.md §4.13)', () => {
  const p = plan('SELECT unnest(arr) AS v, id FROM s');
  assert.deepEqual(runEach(p, [{ id: 1, arr: [7, 8] }]), [
    [
      { v: 7, id: 1 },
      { v: 8, id: 1 },
    ],
  ]);
  const o = plan('SELECT unnest(arr2), x FROM s WHERE x = 1');
  assert.deepEqual(
    runEach(o, [
      {
        x: 1,
        arr2: [
          { a: 1, b: 2 },
          { a: 3, b: 4 },
        ],
      },
    ]),
    [
      [
        { a: 1, b: 2, x: 1 },
        { a: 3, b: 4, x: 1 },
      ],
    ],
  );
  assert.throws(
    () => runEach(p, [{ id: 1, arr: 6 }]),
    /^StageError: the argument for the unnest function should be array$/,
  );
  assert.throws(() => runEach(p, [{ id: 1 }]), /^StageError: can't find the result from the unnest function$/);
  const lim = plan('SELECT unnest(arr) AS v FROM s GROUP BY COUNTWINDOW(1) LIMIT 1');
  assert.deepEqual(runWindow(lim, [{ arr: [1, 2, 3] }]), [{ v: 1 }]);
});

test('row_number numbers the emission, per partition in key order (docs/sql.md §4.12)', () => {
  assert.deepEqual(runEach(plan('select size, row_number() from demo', demo), EVENTS.slice(0, 2)), [
    [{ size: 3n, row_number: 1n }],
    [{ size: 6n, row_number: 1n }],
  ]);
  const p = plan(
    'SELECT color, row_number() OVER (PARTITION BY color ORDER BY size) AS n FROM demo GROUP BY COUNTWINDOW(5)',
    demo,
  );
  assert.deepEqual(runWindow(p, EVENTS), [
    { color: 'blue', n: 1n },
    { color: 'blue', n: 2n },
    { color: 'red', n: 1n },
    { color: 'red', n: 2n },
    { color: 'yellow', n: 1n },
  ]);
});

test('last_hit_count() counts previous hits of a windowless rule', () => {
  const p = plan('SELECT color, last_hit_count() + 1 as lc FROM demo where size > 3', demo);
  assert.deepEqual(runEach(p, EVENTS), [
    null,
    [{ color: 'blue', lc: 2n - 1n }],
    null,
    [{ color: 'yellow', lc: 2n }],
    null,
  ]);
});

test('window_start(), window_end() and event_time()', () => {
  const p = plan('SELECT window_start() AS ws, window_end() AS we, event_time() AS et FROM s GROUP BY COUNTWINDOW(1)');
  assert.deepEqual(runWindow(p, [{}], { start: 5, end: 9 }), [{ ws: 5n, we: 9n, et: 1000n }]);
  const agg = plan('SELECT count(*) AS c, event_time() AS et FROM s GROUP BY COUNTWINDOW(1)');
  assert.deepEqual(runWindow(agg, [{}], { start: 5, end: 9 }), [{ c: 1n, et: 9n }]);
  assert.deepEqual(run(plan('SELECT window_start() AS ws, rule_id() AS id FROM s'), {}), { id: 'rule1' });
});

test('static checks on aggregates, window functions, srf and multi-column functions (docs/sql.md §4.15)', () => {
  const cat = catalogOf(SCHEMALESS, DEMO);
  const rejects = (sql: string, msg: string | RegExp): void => {
    assert.throws(
      () => planQuery(sql, deps(cat)),
      (e: unknown) =>
        e instanceof EddyError &&
        e.code === 2101 &&
        (typeof msg === 'string' ? e.message === msg : msg.test(e.message)),
      sql,
    );
  };
  // the reference names the clause's expression after a colon (its own rendering of it, ours differs)
  rejects(
    'SELECT a FROM s WHERE count(*) > 1',
    'Not allowed to call aggregate functions in WHERE clause: count(*) > 1.',
  );
  rejects(
    'SELECT a FROM s GROUP BY count(*), TUMBLINGWINDOW(ss, 1)',
    'Not allowed to call aggregate functions in GROUP BY clause: count(*).',
  );
  rejects(
    'SELECT sum(max(a)) FROM s GROUP BY TUMBLINGWINDOW(ss, 1)',
    'invalid argument for func sum: aggregate argument is not allowed',
  );
  rejects(
    'SELECT max(a) AS m, sum(m) FROM s GROUP BY TUMBLINGWINDOW(ss, 1)',
    'invalid argument for func sum: aggregate argument is not allowed',
  );
  rejects(
    'SELECT count(*) FROM s GROUP BY TUMBLINGWINDOW(ss, 1) HAVING a > 1',
    'Not allowed to call non-aggregate functions in HAVING clause: a > 1.',
  );
  rejects('SELECT a FROM s WHERE row_number() > 1', 'window functions can only be in select fields');
  rejects('SELECT a FROM s WHERE unnest(a) = 1', /shouldn't has srf except fields/);
  rejects('SELECT unnest(a), unnest(b) FROM s', /nested \/ multi set-returning-functions/);
  rejects('SELECT abs(unnest(a)) FROM s', /nested \/ multi set-returning-functions/);
  rejects(
    'SELECT a FROM s WHERE changed_cols("", true, a) = 1',
    'function changed_cols can only be used inside the select clause',
  );
  rejects(
    'SELECT last_hit_count() FROM s GROUP BY TUMBLINGWINDOW(ss, 1)',
    'function last_hit_count is not allowed in an aggregate query',
  );
  rejects('SELECT abs(a) OVER (PARTITION BY b) FROM s', 'Found OVER after non analytic function abs');
  rejects('SELECT AVG(a) OVER (PARTITION BY b) FROM s', 'Found OVER after non analytic function avg');
  // fine: scalars around aggregates in HAVING, aliases of aggregates, last_hit_time in a sliding OVER (WHEN)
  planQuery('SELECT count(*) AS c FROM s GROUP BY TUMBLINGWINDOW(ss, 1) HAVING sin(c) > 0.3', deps(cat));
  planQuery('SELECT collect(*) AS c FROM s GROUP BY TUMBLINGWINDOW(ss, 1) HAVING c[2]->temp > 20', deps(cat));
  planQuery('SELECT a FROM s GROUP BY SLIDINGWINDOW(ss, 1) OVER (WHEN a - last_hit_time() > 400)', deps(cat));
  // the reference skips the whole window call (FILTER included) when it looks for last_hit_* in aggregate queries
  planQuery('SELECT a FROM s GROUP BY COUNTWINDOW(2) FILTER (WHERE last_hit_count() < 3)', deps(cat));
});

test('the HAVING check looks at the condition as eKuiper does: operands of operators, calls and columns (docs/sql.md §4.8)', () => {
  const cat = catalogOf(SCHEMALESS);
  const rejected = (sql: string): void => {
    assert.throws(
      () => planQuery(sql, deps(cat)),
      (e: unknown) =>
        e instanceof EddyError && /^Not allowed to call non-aggregate functions in HAVING clause: /.test(e.message),
      sql,
    );
  };
  const W = 'SELECT count(*) AS c FROM s GROUP BY TUMBLINGWINDOW(ss, 1) HAVING ';
  rejected(W + 'a > 1');
  rejected(W + 'abs(a) > 1');
  rejected(W + 'c > 1 AND b = 2');
  rejected(W + 'a BETWEEN 1 AND 2');
  rejected(W + 'a IN (1, 2)');
  rejected(W + 'sum(a) > 0.3 OR sin(temp) > 3');
  // accepted: aggregates anywhere inside a call, aliases of aggregates, and whatever the reference does not look
  // into (parenthesised conditions, CASE, index/slice/-> navigation, IN lists, BETWEEN bounds)
  for (const h of [
    'c > 1',
    'sin(count(*)) > 0.3',
    'count(*) IN (1, 2)',
    'count(*) BETWEEN a AND 3',
    '(a > 1)',
    'b[0] > 1',
    'b->x > 1',
    'CASE WHEN a > 1 THEN true ELSE false END',
    'true',
  ]) {
    planQuery(W + h, deps(cat));
  }
  // a column in a parenthesised HAVING reads the group's first row
  const p = plan(W + '(a > 1)');
  assert.deepEqual(runWindow(p, [{ a: 2 }, { a: 0 }]), [{ c: 2n }]);
  assert.deepEqual(runWindow(p, [{ a: 0 }, { a: 2 }]), []);
});

test('several row_number() calls: each numbers the order the previous one left (docs/sql.md §4.12)', () => {
  const rows = [
    { a: 1, b: 'x' },
    { a: 3, b: 'y' },
    { a: 2, b: 'x' },
  ];
  const p = plan(
    'SELECT a, row_number() AS r1, row_number() OVER (ORDER BY a DESC) AS r2 FROM s GROUP BY TUMBLINGWINDOW(ss, 1)',
  );
  assert.deepEqual(runWindow(p, rows), [
    { a: 3, r1: 2n, r2: 1n },
    { a: 2, r1: 3n, r2: 2n },
    { a: 1, r1: 1n, r2: 3n },
  ]);
  const q = plan(
    'SELECT a, row_number() OVER (PARTITION BY b) AS r1, row_number() OVER (ORDER BY a) AS r2 FROM s GROUP BY TUMBLINGWINDOW(ss, 1)',
  );
  assert.deepEqual(runWindow(q, rows), [
    { a: 1, r1: 1n, r2: 1n },
    { a: 2, r1: 2n, r2: 2n },
    { a: 3, r1: 1n, r2: 3n },
  ]);
  // an alias of row_number() reads the same number
  const r = plan('SELECT row_number() AS r, r + 10 AS q FROM s GROUP BY TUMBLINGWINDOW(ss, 1)');
  assert.deepEqual(runWindow(r, rows.slice(0, 2)), [
    { r: 1n, q: 11n },
    { r: 2n, q: 12n },
  ]);
});

test('row_number() partitions: every key value followed by a comma, keys in text order', () => {
  // "a b," sorts before "a," (space < comma); without the separator "a" would come first
  const p = plan('SELECT k, row_number() OVER (PARTITION BY k) AS n FROM s GROUP BY COUNTWINDOW(3)');
  assert.deepEqual(runWindow(p, [{ k: 'a' }, { k: 'a b' }, { k: 'a' }]), [
    { k: 'a b', n: 1n },
    { k: 'a', n: 1n },
    { k: 'a', n: 2n },
  ]);
  // (1, 23) and (12, 3) are different partitions here, unlike analytic PARTITION BY
  const q = plan('SELECT row_number() OVER (PARTITION BY x, y) AS n FROM s GROUP BY COUNTWINDOW(2)');
  assert.deepEqual(
    runWindow(q, [
      { x: 1, y: 23 },
      { x: 12, y: 3 },
    ]),
    [{ n: 1n }, { n: 1n }],
  );
});

test('HAVING on a non-aggregate window query keeps the whole emission or nothing', () => {
  const p = plan('SELECT a FROM s GROUP BY COUNTWINDOW(3) HAVING count(*) > 2');
  assert.deepEqual(runWindow(p, [{ a: 1 }, { a: 2 }, { a: 3 }]), [{ a: 1 }, { a: 2 }, { a: 3 }]);
  const q = plan('SELECT a FROM s GROUP BY COUNTWINDOW(3) HAVING count(*) > 5');
  assert.deepEqual(runWindow(q, [{ a: 1 }, { a: 2 }, { a: 3 }]), []);
});

test('aliases inside aggregates and ORDER BY over aggregates', () => {
  const p = plan(
    'SELECT color, size * 2 AS d, sum(d) AS total FROM demo GROUP BY color, COUNTWINDOW(5) ORDER BY total DESC',
    demo,
  );
  const out = runWindow(p, EVENTS);
  // d of a group row comes from its first row; sum(d) runs over every row of the group
  assert.deepEqual(out[0], { color: 'blue', d: 12n, total: 16n });
  assert.deepEqual(
    out.map((o) => o.total),
    [16n, 8n, 8n],
  );
});

test('GROUP BY errors carry their prefix', () => {
  const p = plan('SELECT count(*) AS c FROM s GROUP BY a / 0, COUNTWINDOW(1)');
  assert.throws(() => runWindow(p, [{ a: 1 }]), /^StageError: run Group By error: divided by zero$/);
});
