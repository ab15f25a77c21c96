import { test } from 'node:test';
import assert from 'node:assert/strict';
import { catalogOf, deps, plan, tuple, joined, SCHEMALESS } from './helpers.js';
import { explainQuery, planQuery } from '../../src/plan/planner.js';

const MQTT = 'CREATE STREAM m (a BIGINT, b BIGINT) WITH (DATASOURCE="m", FORMAT="json")';
const TYPED =
  'CREATE STREAM t (a BIGINT, b STRING, rec STRUCT(x BIGINT, y STRING, z STRUCT(q BIGINT)), arr ARRAY(STRUCT(k BIGINT)), ts BIGINT) WITH (DATASOURCE="t", TYPE="memory", TIMESTAMP="ts")';
const S2 = 'CREATE STREAM s2 () WITH (DATASOURCE="t2", TYPE="memory")';
const TABLE = 'CREATE TABLE tb () WITH (DATASOURCE="tb", TYPE="file")';
const cat = catalogOf(SCHEMALESS, MQTT, TYPED, S2, TABLE);

const names = (sql: string, opts = {}): string[] => plan(sql, cat, opts).nodes.map((n) => n.name);

test('node names follow the post-order numbering of docs/runtime.md §1.6', () => {
  assert.deepEqual(names('SELECT * FROM s'), ['source_s', 'op_2_project']);
  assert.deepEqual(names('SELECT * FROM m'), ['source_m', 'op_2_decoder', 'op_3_project']);
  assert.deepEqual(names('SELECT a FROM m WHERE b > 1'), ['source_m', 'op_2_decoder', 'op_3_filter', 'op_4_project']);
  assert.deepEqual(names('SELECT a FROM s GROUP BY TUMBLINGWINDOW(ss, 10)'), [
    'source_s',
    'op_2_window',
    'op_3_project',
  ]);
  assert.deepEqual(names('SELECT a FROM s GROUP BY a, TUMBLINGWINDOW(ss, 10)'), [
    'source_s',
    'op_2_window',
    'op_3_aggregate',
    'op_4_project',
  ]);
  assert.deepEqual(names('SELECT a FROM s GROUP BY SLIDINGWINDOW(ss, 10) FILTER (WHERE a > 1) ORDER BY a'), [
    'source_s',
    'op_2_windowFilter',
    'op_3_window',
    'op_4_order',
    'op_5_project',
  ]);
  assert.deepEqual(names('SELECT a FROM m', { isEventTime: true }), [
    'source_m',
    'op_2_decoder',
    'op_3_preprocessor',
    'op_4_watermark',
    'op_5_project',
  ]);
  assert.deepEqual(names('SELECT * FROM s INNER JOIN s2 ON s.a = s2.a GROUP BY COUNTWINDOW(2)'), [
    'source_s',
    'source_s2',
    'op_3_window',
    'op_4_join',
    'op_5_project',
  ]);
  const p = plan('SELECT * FROM s INNER JOIN s2 ON s.a = s2.a GROUP BY COUNTWINDOW(2)', cat);
  assert.deepEqual(p.nodes.find((n) => n.kind === 'window')?.inputs, ['source_s', 'source_s2']);
});

test('WHERE is pushed below tumbling/hopping/session windows in processing time', () => {
  const p = plan('SELECT a FROM s WHERE a > 1 GROUP BY TUMBLINGWINDOW(ss, 10)', cat);
  assert.ok(p.sources[0].filter);
  assert.equal(p.where, null);
  assert.deepEqual(
    p.nodes.map((n) => n.name),
    ['source_s', 'op_2_filter', 'op_3_window', 'op_4_project'],
  );
  const ctx = p.newContext('r', 0);
  assert.equal(p.sources[0].filter?.(tuple({ a: 2 }), ctx), true);
  assert.equal(p.sources[0].filter?.(tuple({ a: 0 }), ctx), false);
});

test('WHERE stays after the window for count, sliding and event-time windows', () => {
  for (const [sql, opts] of [
    ['SELECT a FROM s WHERE a > 1 GROUP BY COUNTWINDOW(3)', {}],
    ['SELECT a FROM s WHERE a > 1 GROUP BY SLIDINGWINDOW(ss, 3)', {}],
    ['SELECT a FROM t WHERE a > 1 GROUP BY TUMBLINGWINDOW(ss, 3)', { isEventTime: true }],
  ] as const) {
    const p = plan(sql, cat, opts);
    assert.equal(p.sources[0].filter, null, sql);
    assert.ok(p.where, sql);
  }
});

test('in a join, single-stream conjuncts go to their stream, the rest into an INNER join ON', () => {
  const p = plan(
    'SELECT * FROM s INNER JOIN s2 ON s.id = s2.id WHERE s.a > 1 AND s2.b < 2 AND s.c = s2.c GROUP BY TUMBLINGWINDOW(ss, 1)',
    cat,
  );
  const ctx = p.newContext('r', 0);
  assert.ok(p.sources[0].filter && p.sources[1].filter);
  assert.equal(p.where, null);
  const on = p.joins[0].on!;
  assert.equal(on(joined(tuple({ id: 1, c: 'x' }, 's'), tuple({ id: 1, c: 'x' }, 's2')), ctx), true);
  assert.equal(on(joined(tuple({ id: 1, c: 'x' }, 's'), tuple({ id: 1, c: 'y' }, 's2')), ctx), false);
  // an outer join keeps the multi-stream conjunct as WHERE after the join
  const l = plan('SELECT * FROM s LEFT JOIN s2 ON s.id = s2.id WHERE s.c = s2.c GROUP BY TUMBLINGWINDOW(ss, 1)', cat);
  assert.ok(l.where);
});

test('with a table join nothing is pushed below the window', () => {
  const p = plan('SELECT * FROM s INNER JOIN tb ON s.k = tb.k WHERE s.a > 1 GROUP BY TUMBLINGWINDOW(ss, 1)', cat);
  assert.equal(p.sources[0].filter, null);
  assert.equal(p.where, null); // merged into the INNER join's ON
  assert.deepEqual(
    p.nodes.map((n) => n.name),
    ['source_s', 'op_2_window', 'source_tb', 'op_4_join_aligner', 'op_5_join', 'op_6_project'],
  );
});

test('ON must be boolean: non-bool values are join errors', () => {
  const p = plan('SELECT * FROM s INNER JOIN s2 ON s.a GROUP BY COUNTWINDOW(2)', cat);
  const ctx = p.newContext('r', 0);
  assert.throws(
    () => p.joins[0].on!(joined(tuple({}, 's'), tuple({}, 's2')), ctx),
    /^StageError: run Join error: invalid join condition that returns non-bool value <nil>$/,
  );
});

test('window specs are converted to milliseconds', () => {
  assert.deepEqual(
    { ...plan('SELECT a FROM s GROUP BY HOPPINGWINDOW(ss, 10, 5)', cat).window, filter: null, trigger: null },
    {
      type: 'hopping',
      unitMs: 1000,
      length: 10000,
      interval: 5000,
      alignParam: 5,
      filter: null,
      trigger: null,
      triggerUsesHits: false,
    },
  );
  const c = plan('SELECT a FROM s GROUP BY COUNTWINDOW(5, 2)', cat).window!;
  assert.equal(c.length, 5);
  assert.equal(c.interval, 2);
  const sl = plan('SELECT a FROM s GROUP BY SLIDINGWINDOW(mi, 1, 2) OVER (WHEN a > 1)', cat).window!;
  assert.equal(sl.length, 60000);
  assert.equal(sl.interval, 120000);
  assert.ok(sl.trigger);
  const se = plan('SELECT a FROM s GROUP BY SESSIONWINDOW(ss, 2, 1)', cat).window!;
  assert.deepEqual([se.length, se.interval, se.alignParam], [2000, 1000, 2]);
});

test('decode schemas keep only the declared fields the rule reads (docs/sql.md §3.4)', () => {
  const schema = (sql: string, opts = {}) => plan(sql, cat, opts).sources[0].schema;
  assert.deepEqual(schema('SELECT a FROM t'), [{ name: 'a', type: { kind: 'bigint' } }]);
  assert.equal(schema('SELECT * FROM t'), null);
  assert.equal(schema('SELECT a FROM s'), null);
  // struct columns: only navigated members; read whole → not known at all
  assert.deepEqual(schema('SELECT rec->x, rec.z.q FROM t'), [
    {
      name: 'rec',
      type: {
        kind: 'struct',
        fields: [
          { name: 'x', type: { kind: 'bigint' } },
          { name: 'z', type: { kind: 'struct', fields: [{ name: 'q', type: { kind: 'bigint' } }] } },
        ],
      },
    },
  ]);
  assert.deepEqual(schema('SELECT rec FROM t'), []);
  // arrays keep their element schema; event-time rules add the TIMESTAMP field
  assert.deepEqual(
    schema('SELECT arr FROM t WHERE b = "x"', { isEventTime: true })!.map((f) => f.name),
    ['b', 'arr', 'ts'],
  );
  assert.equal(plan('SELECT a FROM t', cat, { isEventTime: true }).sources[0].timestampField, 'ts');
});

test('EXPLAIN prints one JSON line per plan node with the documented indentation', () => {
  const text = explainQuery('SELECT * FROM s', deps(cat));
  assert.equal(
    text,
    '{"type":"ProjectPlan","info":"Fields:[ * ]","id":0,"children":[1]}\n\n' +
      '   {"type":"DataSourcePlan","info":"StreamName: s wildcard:true","id":1,"children":null}\n\n',
  );
  const lines = explainQuery('SELECT a FROM s WHERE a > 1 GROUP BY TUMBLINGWINDOW(ss, 10) ORDER BY a', deps(cat))
    .split('\n')
    .filter(Boolean);
  const parsed = lines.map((l) => ({ indent: l.length - l.trimStart().length, node: JSON.parse(l) }));
  assert.deepEqual(
    parsed.map((p) => [p.indent, p.node.type, p.node.id]),
    [
      [0, 'ProjectPlan', 0],
      [3, 'OrderPlan', 1],
      [9, 'WindowPlan', 2],
      [15, 'FilterPlan', 3],
      [21, 'DataSourcePlan', 4],
    ],
  );
  assert.deepEqual(parsed[0].node.children, [1]);
  assert.equal(parsed[4].node.children, null);
});

test('lookup joins: keys from the equi-join predicates, the rest of ON on the combined row', () => {
  const c = catalogOf(
    SCHEMALESS,
    'CREATE TABLE lk (id BIGINT, name STRING, grade BIGINT) WITH (DATASOURCE="lk", TYPE="memory", KIND="lookup", KEY="id")',
  );
  const p = plan('SELECT s.a, lk.name FROM s LEFT JOIN lk ON s.id = lk.id AND lk.grade > 2', c);
  assert.deepEqual(
    p.nodes.map((n) => n.name),
    ['source_s', 'op_lk', 'op_3_project'],
  );
  assert.equal(p.joins.length, 0);
  const l = p.lookupJoins[0];
  assert.equal(l.kind, 'left');
  assert.deepEqual(l.keys, ['id']);
  assert.deepEqual([...l.fields].sort(), ['grade', 'id', 'name']);
  const ctx = p.newContext('r', 0);
  ctx.bindRow();
  assert.equal(l.values[0](tuple({ id: 7 }), ctx), 7);
  assert.equal(l.on!(joined(tuple({ id: 7 }), tuple({ id: 7n, grade: 3n }, 'lk')), ctx), true);
  assert.equal(l.on!(joined(tuple({ id: 7 }), tuple({ id: 7n, grade: 1n }, 'lk')), ctx), false);
  assert.equal(p.sources.find((s) => s.name === 'lk')?.role, 'lookup');
});

test('EXPLAIN of a join lists both sources under the join', () => {
  const lines = explainQuery('SELECT s.a FROM s INNER JOIN s2 ON s.id = s2.id GROUP BY COUNTWINDOW(2)', deps(cat))
    .split('\n\n')
    .filter(Boolean);
  assert.deepEqual(
    lines.map((l) => JSON.parse(l).type),
    ['ProjectPlan', 'JoinPlan', 'WindowPlan', 'DataSourcePlan', 'DataSourcePlan'],
  );
  assert.deepEqual(JSON.parse(lines[2]).children, [3, 4]);
  assert.match(JSON.parse(lines[3]).info, /^StreamName: s, Fields:\[ (a, id|id, a) \], StreamFields:\[ {2}\]$/);
});

test('an MQTT source with decompression gets a decompress node before its decoder', () => {
  const d = { ...deps(cat), decompresses: (def: { name: string }) => def.name === 'm' };
  assert.deepEqual(
    planQuery('SELECT a FROM m', d).nodes.map((n) => n.name),
    ['source_m', 'op_2_decompress', 'op_3_decoder', 'op_4_project'],
  );
  const shared = catalogOf('CREATE STREAM sh () WITH (DATASOURCE="x", SHARED="true")');
  assert.deepEqual(
    plan('SELECT a FROM sh', shared).nodes.map((n) => n.name),
    ['source_sh', 'op_sh_2_decoder', 'op_3_project'],
  );
});

test('a windowless event-time rule filters after the watermark, which sees every event', () => {
  const p = plan('SELECT a FROM t WHERE a > 1', cat, { isEventTime: true });
  assert.deepEqual(
    p.nodes.map((n) => n.name),
    ['source_t', 'op_2_watermark', 'op_3_filter', 'op_4_project'],
  );
  assert.equal(p.sources[0].filter, null);
  assert.ok(p.where);
});
