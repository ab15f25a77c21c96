/**
 * The graph-rule planner (docs/runtime.md §1.4) without a server: node order, the kinds flowing on the edges, the
 * stage each node becomes, and eKuiper's texts for the graphs it refuses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planGraph, type GraphPlan } from '../../src/plan/graph.js';
import { EddyError } from '../../src/core/errors.js';
import { catalogOf, registry, tuple } from './helpers.js';

type J = Record<string, unknown>;

const catalog = catalogOf(
  'CREATE STREAM s1 (a BIGINT, b STRING) WITH (DATASOURCE="t1", FORMAT="json")',
  'CREATE STREAM m1 () WITH (DATASOURCE="m1", TYPE="memory")',
  'CREATE TABLE look () WITH (DATASOURCE="lk", TYPE="memory", KIND="lookup", KEY="id")',
  'CREATE TABLE scan () WITH (DATASOURCE="sc", TYPE="memory")',
);

function plan(nodes: J, edges: J, sources: string[] = ['src'], opts: { isEventTime?: boolean } = {}): GraphPlan {
  return planGraph(
    { nodes, topo: { sources, edges } },
    {
      catalog,
      functions: registry(),
      options: {
        isEventTime: opts.isEventTime ?? false,
        sendMetaToSink: false,
      },
    },
  );
}

function error(nodes: J, edges: J, sources: string[] = ['src']): string {
  try {
    plan(nodes, edges, sources);
  } catch (e) {
    assert.ok(e instanceof EddyError, String(e));
    assert.equal(e.code, 2101);
    return e.message;
  }
  assert.fail('planned');
}

const src = { type: 'source', nodeType: 'mqtt', props: { datasource: 'x/y' } };
const sink = { type: 'sink', nodeType: 'log', props: {} };
const op = (nodeType: string, props: J) => ({
  type: 'operator',
  nodeType,
  props,
});
const win = op('window', { type: 'countwindow', size: 2 });

test('nodes are planned sources first, a node with several inputs after its last input; names carry the keys (a created stream its name)', () => {
  const p = plan(
    {
      a: src,
      b: { type: 'source', nodeType: 'memory', props: { sourceName: 'm1' } },
      fa: op('filter', { expr: 'x > 1' }),
      w: win,
      out: sink,
    },
    { a: ['fa'], fa: ['w'], b: ['w'], w: ['out'] },
    ['a', 'b'],
  );
  assert.deepEqual(
    p.sources.map((s) => [s.name, s.def.name]),
    [
      ['source_a', 'a'],
      ['source_m1', 'm1'],
    ],
  );
  assert.deepEqual(
    p.ops.map((o) => [o.name, o.op.kind, o.inputs.map((e) => e.from)]),
    [
      ['op_fa', 'filter', ['a']],
      ['op_w', 'window', ['fa', 'b']],
    ],
  );
  assert.deepEqual(
    p.sinks.map((s) => [s.name, s.type]),
    [['sink_out', 'log']],
  );
  assert.deepEqual(p.reads, ['m1'], 'only created streams are in use');
  // an inline source is a schemaless stream with the node's properties as options
  assert.deepEqual(p.sources[0].def.options, {
    TYPE: 'mqtt',
    DATASOURCE: 'x/y',
  });
});

test('two source nodes reading one created stream: the first is named after the stream, the second after its key', () => {
  const m1 = { type: 'source', nodeType: 'memory', props: { sourceName: 'm1' } };
  const p = plan(
    { x: m1, y: m1, j: op('window', { type: 'countwindow', size: 2 }), out: sink },
    { x: ['j'], y: ['j'], j: ['out'] },
    ['x', 'y'],
  );
  assert.deepEqual(
    p.sources.map((s) => s.name),
    ['source_m1', 'source_y'],
  );
});

test('a filter after a group by is HAVING; a function adds its column under the call name or alias', () => {
  const p = plan(
    {
      src,
      w: win,
      g: op('groupby', { dimensions: ['b'] }),
      c: op('aggfunc', { expr: 'count(*)' }),
      f: op('filter', { expr: 'count > 1' }),
      fn: op('function', { expr: 'abs(a) AS aa' }),
      out: sink,
    },
    { src: ['fn'], fn: ['w'], w: ['g'], g: ['c'], c: ['f'], f: ['out'] },
  );
  const kinds = Object.fromEntries(p.ops.map((o) => [o.key, o.op]));
  assert.equal(kinds.f.kind, 'having');
  assert.equal(kinds.fn.kind, 'function');
  assert.equal(kinds.fn.kind === 'function' && kinds.fn.column, 'aa');
  const m = plan({ src, fn: op('function', { expr: 'meta(topic)' }), out: sink }, { src: ['fn'], fn: ['out'] }).ops[0]
    .op;
  assert.equal(m.kind === 'function' && m.column, 'meta');
  assert.equal(kinds.c.kind === 'function' && kinds.c.column, 'count');
  assert.equal(kinds.c.kind === 'function' && kinds.c.agg, true);
  const fn = kinds.fn.kind === 'function' ? kinds.fn.fn : null;
  const ctx = p.newContext('r', 0);
  ctx.bindRow();
  assert.equal(fn!(tuple({ a: -4n }), ctx), 4n);
});

test('a pick with an aggregate call is an aggregate projection even without isAgg', () => {
  const p = plan(
    {
      src,
      w: win,
      pk: op('pick', { fields: ['avg(a) AS m'] }),
      pk2: op('pick', { fields: ['a'] }),
      out: sink,
      out2: sink,
    },
    { src: ['w'], w: ['pk', 'pk2'], pk: ['out'], pk2: ['out2'] },
  );
  const byKey = Object.fromEntries(p.ops.map((o) => [o.key, o.plan.isAggregate]));
  assert.deepEqual(byKey, { w: false, pk: true, pk2: false });
});

test('event time: a window with no watermark node above it keeps its own over the streams that reach it', () => {
  const own = (nodes: J, edges: J, sources: string[]) => {
    const o = plan(nodes, edges, sources, { isEventTime: true }).ops.find((x) => x.key === 'w')!.op;
    return o.kind === 'window' ? o.ownWatermark : 'not a window';
  };
  const w = op('window', { type: 'tumblingwindow', unit: 'ss', size: 1 });
  const m1 = { type: 'source', nodeType: 'memory', props: { sourceName: 'm1' } };
  assert.deepEqual(
    own(
      { src, m: m1, f: op('filter', { expr: 'a > 1' }), w, out: sink },
      { src: ['f'], f: ['w'], m: ['w'], w: ['out'] },
      ['src', 'm'],
    ),
    ['src', 'm1'],
  );
  assert.equal(
    own({ src, wm: op('watermark', { emitters: ['src'] }), w, out: sink }, { src: ['wm'], wm: ['w'], w: ['out'] }, [
      'src',
    ]),
    null,
  );
  // processing time: never
  const p = plan({ src, w, out: sink }, { src: ['w'], w: ['out'] });
  assert.equal(p.ops[0].op.kind === 'window' && p.ops[0].op.ownWatermark, null);
});

test('window properties become the SQL window spec', () => {
  const spec = (props: J) => {
    const p = plan({ src, w: op('window', props), out: sink }, { src: ['w'], w: ['out'] });
    const o = p.ops[0].op;
    return o.kind === 'window' ? { type: o.spec.type, length: o.spec.length, interval: o.spec.interval } : null;
  };
  assert.deepEqual(spec({ type: 'tumblingwindow', unit: 'ss', size: 10 }), {
    type: 'tumbling',
    length: 10000,
    interval: 10000,
  });
  assert.deepEqual(spec({ type: 'hoppingWindow', unit: 'mi', size: 2, interval: 1 }), {
    type: 'hopping',
    length: 120000,
    interval: 60000,
  });
  assert.deepEqual(spec({ type: 'sessionwindow', unit: 'ms', size: 500, interval: 100 }), {
    type: 'session',
    length: 500,
    interval: 100,
  });
  assert.deepEqual(spec({ type: 'slidingwindow', unit: 'ss', size: 1 }), {
    type: 'sliding',
    length: 1000,
    interval: 0,
  });
  assert.deepEqual(spec({ type: 'countwindow', size: 5 }), {
    type: 'count',
    length: 5,
    interval: 5,
  });
  assert.deepEqual(spec({ type: 'countwindow', size: 5, interval: 2 }), {
    type: 'count',
    length: 5,
    interval: 2,
  });
});

test('eKuiper texts for refused windows, joins, watermarks, switches, scripts, group and order by', () => {
  const one = (name: string, node: J, edges: J = { src: [name], [name]: ['out'] }, sources = ['src'], extra: J = {}) =>
    error({ src, [name]: node, out: sink, ...extra }, edges, sources);
  assert.equal(
    one(
      'w',
      op('window', {
        type: 'tumblingwindow',
        unit: 'ss',
        size: 2,
        interval: 1,
      }),
    ),
    'parse window conf w with map[interval:1 size:2 type:tumblingwindow unit:ss] error: tumbling window interval must equal to size',
  );
  assert.equal(
    one('w', op('window', { type: 'hoppingwindow', unit: 'ss', size: 2 })),
    'parse window conf w with map[size:2 type:hoppingwindow unit:ss] error: hopping window interval must be greater than 0',
  );
  assert.equal(
    one('w', op('window', { type: 'hoppingwindow', unit: 'ss', size: 2, interval: 3 })),
    'parse window conf w with map[interval:3 size:2 type:hoppingwindow unit:ss] error: hopping window interval must be less than size',
  );
  assert.equal(
    one('w', op('window', { type: 'countwindow', size: 2, interval: 3 })),
    'parse window conf w with map[interval:3 size:2 type:countwindow] error: count window interval must be less than size',
  );
  assert.equal(
    one('w', op('window', { type: 'tumblingwindow', unit: 'xx', size: 2 })),
    'parse window conf w with map[size:2 type:tumblingwindow unit:xx] error: Invalid unit xx',
  );
  assert.equal(
    one('w', op('window', { type: 'roundwindow', size: 2 })),
    'parse window conf w with map[size:2 type:roundwindow] error: unknown window type roundwindow',
  );
  assert.equal(
    one('j', op('join', { from: 'nosuch', joins: [] })),
    'parse join j with map[from:nosuch joins:[]] error: join source nosuch is not a stream',
  );
  assert.equal(
    one('wm', op('watermark', { emitters: ['other'] })),
    'parse watermark wm with map[emitters:[other]] error: emitter other does not exist',
  );
  assert.equal(
    one('wm', op('watermark', {})),
    'parse watermark wm with map[] error: watermark must have at least one emitter',
  );
  assert.equal(
    one('sw', op('switch', { cases: [] })),
    'parse switch sw with map[cases:[]] error: switch node must have at least one case',
  );
  assert.equal(
    one('sw', op('switch', { cases: ['a > 1', 'b >'] })),
    'parse switch sw with map[cases:[a > 1 b >]] error: parse case 1 error: found "EOF", expected expression.',
  );
  assert.equal(
    one('g', op('groupby', { dimensions: [] })),
    'parse groupby g with map[dimensions:[]] error: groupby must have at least one dimension',
  );
  assert.equal(one('sc', op('script', {})), 'script node must have script');
  assert.equal(one('sc', op('script', { script: 'function other() {}' })), 'cannot find function "exec" in script');
  assert.match(one('sc', op('script', { script: 'function exec( {' })), /^failed to interprete script: /);
  assert.equal(one('f', op('filter', {})), 'parse filter f with map[] error: no expr');
  assert.equal(one('f', op('filter', { expr: 3 })), 'parse filter f with map[expr:3] error: expr 3 is not string');
  assert.equal(
    one('fn', op('function', { expr: 'a + 1' })),
    'parse function fn with map[expr:a + 1] error: expr a + 1 is not ast.Call',
  );
  // edges
  assert.equal(error({ src, out: sink }, { src: ['out'] }, ['src', 'ghost']), 'source node ghost not defined');
  assert.equal(
    error({ src, f: op('filter', { expr: 'a > 1' }), out: sink }, { src: ['f'], f: ['nope'] }),
    'node nope is not defined',
  );
  assert.equal(
    error({ src, f: op('filter', { expr: 'a > 1' }), out: sink }, { src: ['f'], f: ['out'] }, ['src', 'f']),
    'source f is not a source type node',
  );
  assert.equal(
    error({ src, f: op('filter', { expr: 'a > 1' }), out: sink, out2: sink }, { src: ['f'], f: [['out'], ['out2']] }),
    'node f is not a switch node but have multiple output',
  );
  // two streams into one join
  assert.equal(
    error(
      {
        src,
        src2: src,
        j: op('join', {
          from: 'src',
          joins: [{ name: 'src2', type: 'inner', on: 'src.a = src2.a' }],
        }),
        out: sink,
      },
      { src: ['j'], src2: ['j'], j: ['out'] },
      ['src', 'src2'],
    ),
    'join node j does not allow multiple stream inputs',
  );
  // source checks
  const srcErr = (props: J, nodeType = 'mqtt') =>
    error({ src: { type: 'source', nodeType, props }, out: sink }, { src: ['out'] });
  assert.equal(
    srcErr({ sourceName: 's1', sourceType: 'table' }),
    'parse source src with map[sourceName:s1 sourceType:table] error: stream s1 is not a table',
  );
  assert.equal(
    srcErr({ sourceName: 'scan' }, 'memory'),
    'parse source src with map[sourceName:scan] error: table scan is not a stream',
  );
  assert.equal(
    srcErr({ sourceName: 'm1' }),
    'parse source src with map[sourceName:m1] error: source type mqtt does not match the stream type memory',
  );
  assert.equal(
    srcErr({ sourceType: 'view' }),
    'parse source src with map[sourceType:view] error: source type view not supported',
  );
  assert.equal(
    srcErr({ sourceType: 'table', datasource: 'x' }),
    'parse source src with map[datasource:x sourceType:table] error: anonymouse table source is not supported, please create it prior to the rule',
  );
});

test('lookup joins need an equi-join predicate; a lookup source has no node of its own', () => {
  const lookSrc = {
    type: 'source',
    nodeType: 'memory',
    props: { sourceName: 'look', sourceType: 'table' },
  };
  const p = plan(
    {
      src: { type: 'source', nodeType: 'mqtt', props: { sourceName: 's1' } },
      lk: lookSrc,
      j: op('join', {
        from: 's1',
        joins: [{ name: 'look', type: 'left', on: 's1.a = look.id AND look.v > 1' }],
      }),
      out: sink,
    },
    { src: ['j'], lk: ['j'], j: ['out'] },
    ['src', 'lk'],
  );
  assert.deepEqual(
    p.sources.map((s) => s.name),
    ['source_s1'],
  );
  const j = p.ops[0];
  assert.equal(j.op.kind, 'lookup');
  assert.deepEqual(
    j.inputs.map((e) => e.from),
    ['src'],
  );
  if (j.op.kind === 'lookup') {
    assert.deepEqual(j.op.join.keys, ['id']);
    assert.equal(j.op.join.kind, 'left');
    assert.notEqual(j.op.join.on, null);
  }
  assert.equal(
    error(
      {
        src: { type: 'source', nodeType: 'mqtt', props: { sourceName: 's1' } },
        lk: lookSrc,
        j: op('join', {
          from: 's1',
          joins: [{ name: 'look', type: 'inner', on: 's1.a > look.id' }],
        }),
        out: sink,
      },
      { src: ['j'], lk: ['j'], j: ['out'] },
      ['src', 'lk'],
    ),
    'parse join j with map[from:s1 joins:[map[name:look on:s1.a > look.id type:inner]]] error: join condition s1.a > look.id is invalid, at least one equi-join predicate is required',
  );
});

test('switch edges: nested arrays are the cases, a plain target is case 0', () => {
  const p = plan(
    {
      src,
      sw: op('switch', { cases: ['a > 1', 'a > 2'], stopAtFirstMatch: false }),
      o1: sink,
      o2: sink,
      o3: sink,
    },
    { src: ['sw'], sw: ['o1', ['o2', 'o3']] },
  );
  assert.deepEqual(
    p.sinks.map((s) => [s.key, s.inputs.map((e) => `${e.from}:${e.port}`)]),
    [
      ['o1', ['sw:0']],
      ['o2', ['sw:1']],
      ['o3', ['sw:1']],
    ],
  );
});
