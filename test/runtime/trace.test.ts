/**
 * Rule tracing's pieces (src/runtime/trace.ts, src/rules/traces.ts; docs/runtime.md §1.11): which records a strategy
 * traces, how a span links to the one that emitted its record, and the bounds of the store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Tuple, type TraceSpan } from '../../src/contracts/index.js';
import { RuleTracer, TracingReceiver, MAX_SPANS_PER_TRACE } from '../../src/runtime/trace.js';
import { RawEvent, type Item } from '../../src/runtime/items.js';
import { TraceStore, TRACES_PER_RULE } from '../../src/rules/traces.js';

const raw = (meta: Record<string, string> = {}) =>
  new RawEvent({ payload: new TextEncoder().encode('{"a":1}'), meta, timestamp: 0 }, null) as unknown as Item;

test('always traces every record at its source; head only records that carry a traceparent', () => {
  const spans: TraceSpan[] = [];
  const always = new RuleTracer('r', 'always', (s) => spans.push(s));
  const a = always.begin('source_s', raw(), true);
  assert.ok(a);
  assert.match(a.traceID, /^[0-9a-f]{32}$/);
  assert.equal(a.parentSpanID, undefined);
  assert.equal(a.attribute.input, '{"a":1}');
  // an operator traces only what a traced node emitted
  assert.equal(always.begin('op_2_filter', raw(), false), undefined);

  const head = new RuleTracer('r', 'head', (s) => spans.push(s));
  assert.equal(head.begin('source_s', raw(), true), undefined);
  const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const h = head.begin('source_s', raw({ traceparent: parent }), true);
  assert.ok(h);
  assert.deepEqual([h.traceID, h.parentSpanID], ['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331']);
});

test('what a node emits while its span is active is recorded there and becomes the parent downstream', () => {
  const spans: TraceSpan[] = [];
  const tracer = new RuleTracer('r', 'always', (s) => spans.push(s));
  const got: Item[] = [];
  const next = new TracingReceiver({ name: 'op_2_filter', accept: (i) => (got.push(i), true) }, tracer);
  const src = tracer.begin('source_s', raw(), true)!;
  tracer.active = src;
  const row = new Tuple('s', { a: 1n }, {}, 0) as unknown as Item;
  next.accept(row);
  tracer.active = undefined;
  tracer.end(src);
  assert.deepEqual(src.attribute.output, [{ a: 1 }]);
  const child = tracer.begin('op_2_filter', got[0], false)!;
  assert.equal(child.parentSpanID, src.spanID);
  assert.equal(child.traceID, src.traceID);
  // a trace stops growing past its span budget
  for (let i = 0; i < MAX_SPANS_PER_TRACE; i++) tracer.begin('op_2_filter', got[0], false);
  assert.equal(tracer.begin('op_2_filter', got[0], false), undefined);
});

test('the store keeps a bounded number of traces per rule, newest first, each as a tree', () => {
  const store = new TraceStore();
  const span = (traceID: string, spanID: string, name: string, parentSpanID?: string): TraceSpan => ({
    name,
    traceID,
    spanID,
    ...(parentSpanID ? { parentSpanID } : {}),
    attribute: {},
    startTime: 1,
    endTime: 2,
    ruleID: 'r',
  });
  for (let i = 0; i < TRACES_PER_RULE + 20; i++) store.add(span(`t${i}`, `s${i}`, 'source_s'));
  const ids = store.ruleTraces('r');
  assert.equal(ids.length, TRACES_PER_RULE);
  assert.equal(ids[0], `t${TRACES_PER_RULE + 19}`, 'newest first');
  assert.equal(store.trace('t0'), undefined, 'the oldest were dropped');
  // children may arrive before their parent (a sink's span ends first)
  store.add(span('tree', 'c2', 'sink_nop_0', 'c1'));
  store.add(span('tree', 'c1', 'op_2_project', 'root'));
  store.add(span('tree', 'root', 'source_s'));
  const tree = store.trace('tree')!;
  assert.equal(tree.name, 'source_s');
  assert.equal(tree.ChildSpan?.[0].name, 'op_2_project');
  assert.equal(tree.ChildSpan?.[0].ChildSpan?.[0].name, 'sink_nop_0');
  store.forget('r');
  assert.deepEqual(store.ruleTraces('r'), []);
});
