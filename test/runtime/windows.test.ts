import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/runtime/clock.js';
import { createWindowNode, type WindowNode } from '../../src/runtime/windows.js';
import { WatermarkNode } from '../../src/runtime/watermark.js';
import { RowBatch } from '../../src/runtime/items.js';
import { ErrorRecord, type Row } from '../../src/contracts/index.js';
import { alignBoundary } from '../../src/runtime/align.js';
import type { WindowSpec } from '../../src/plan/plan.js';
import { Collector, settle, tuple, windowSpec } from './helpers.js';

const T0 = 1541152486000; // …86.000 s, 46 s into its minute

function batches(c: Collector): Array<{ start: number; end: number; ts: number[] }> {
  return c.items
    .filter((i): i is RowBatch => i instanceof RowBatch)
    .map((b) => ({ start: b.windowStart, end: b.windowEnd, ts: b.rows.map((r: Row) => r.timestamp) }));
}

function procWindow(
  spec: WindowSpec,
  clock: ManualClock,
  trigger?: (r: Row) => boolean,
): { w: WindowNode; out: Collector } {
  const w = createWindowNode('op_2_window', {
    spec,
    eventTime: false,
    clock,
    sendError: true,
    bufferLength: 1024,
    trigger: trigger ?? null,
  });
  const out = new Collector();
  w.outputs.push(out);
  return { w, out };
}

/** pushes an event at its own timestamp (processing time = arrival time) */
async function at(clock: ManualClock, w: WindowNode, ts: number, msg: Record<string, unknown> = {}): Promise<void> {
  clock.set(ts);
  w.accept(tuple('s', msg, ts));
  await settle(1);
}

test('alignment: seconds inside the minute, the past-boundary quirk, milliseconds and minutes', () => {
  const base = new Date(2024, 0, 1, 12, 0, 0, 0).getTime();
  assert.equal(alignBoundary(base + 7300, 10, 'ss'), base + 10_000);
  assert.equal(alignBoundary(base + 25_000, 10, 'ss'), base + 30_000);
  assert.equal(alignBoundary(base + 10_500, 10, 'ss'), base + 10_000, '12:00:10.5 aligns to the past 12:00:10');
  assert.equal(alignBoundary(base + 123, 100, 'ms'), base + 200);
  assert.equal(alignBoundary(base + 7 * 60_000, 15, 'mi'), base + 15 * 60_000);
  assert.equal(alignBoundary(base + 3 * 3_600_000, 1, 'dd'), new Date(2024, 0, 2).getTime());
});

test('processing-time tumbling: first end aligned, start = rule start, then every length; empty windows fire', async () => {
  const clock = new ManualClock(T0 + 300);
  const { w, out } = procWindow(windowSpec({ type: 'tumbling', length: 2000, interval: 2000, alignParam: 2 }), clock);
  await w.open();
  await at(clock, w, T0 + 500);
  await at(clock, w, T0 + 1900);
  await at(clock, w, T0 + 2100);
  clock.set(T0 + 6000);
  await settle();
  // 46 s → k = 24 → first end at 48 s = T0 + 2000
  assert.deepEqual(batches(out), [
    { start: T0 + 300, end: T0 + 2000, ts: [T0 + 500, T0 + 1900] },
    { start: T0 + 2000, end: T0 + 4000, ts: [T0 + 2100] },
    { start: T0 + 4000, end: T0 + 6000, ts: [] },
  ]);
  await w.close();
  assert.equal(clock.pending(), 0, 'closing cancels the timer');
});

test('processing-time hopping: the spec example (length 2 s, hop 1 s)', async () => {
  const clock = new ManualClock(T0);
  const { w, out } = procWindow(windowSpec({ type: 'hopping', length: 2000, interval: 1000, alignParam: 1 }), clock);
  await w.open();
  for (const t of [13, 822]) await at(clock, w, T0 + t);
  clock.set(T0 + 1000);
  await at(clock, w, T0 + 1632);
  clock.set(T0 + 2000);
  await at(clock, w, T0 + 2442);
  clock.set(T0 + 3000);
  await at(clock, w, T0 + 3252);
  clock.set(T0 + 4000);
  await settle();
  assert.deepEqual(batches(out), [
    { start: T0 - 1000, end: T0 + 1000, ts: [T0 + 13, T0 + 822] },
    { start: T0, end: T0 + 2000, ts: [T0 + 13, T0 + 822, T0 + 1632] },
    { start: T0 + 1000, end: T0 + 3000, ts: [T0 + 1632, T0 + 2442] },
    { start: T0 + 2000, end: T0 + 4000, ts: [T0 + 2442, T0 + 3252] },
  ]);
  await w.close();
});

test('processing-time sliding: OVER(WHEN) triggers, content [ts − length, ts]', async () => {
  const clock = new ManualClock(T0);
  const { w, out } = procWindow(
    windowSpec({ type: 'sliding', length: 5000 }),
    clock,
    (r) => (r as ReturnType<typeof tuple>).message.size === 1,
  );
  await w.open();
  const events: Array<[number, number]> = [
    [13, 3],
    [822, 6],
    [1632, 2],
    [2442, 4],
    [3252, 1],
  ];
  for (const [t, size] of events) await at(clock, w, T0 + t, { size });
  await settle();
  assert.deepEqual(batches(out), [{ start: T0 + 3252 - 5000, end: T0 + 3252, ts: events.map(([t]) => T0 + t) }]);
  await w.close();
});

test('processing-time sliding with delay: emitted at ts + delay, covering [ts − length, ts + delay)', async () => {
  const clock = new ManualClock(T0);
  const { w, out } = procWindow(
    windowSpec({ type: 'sliding', length: 1000, interval: 500 }),
    clock,
    (r) => r.timestamp === T0 + 1000,
  );
  await w.open();
  await at(clock, w, T0 + 100);
  await at(clock, w, T0 + 1000);
  assert.equal(batches(out).length, 0, 'nothing before the delay elapsed');
  await at(clock, w, T0 + 1400);
  await at(clock, w, T0 + 1499);
  clock.set(T0 + 1500);
  await at(clock, w, T0 + 1600);
  await settle();
  assert.deepEqual(batches(out), [{ start: T0, end: T0 + 1500, ts: [T0 + 100, T0 + 1000, T0 + 1400, T0 + 1499] }]);
  await w.close();
});

test('processing-time session: timeout, cuts at max-duration ticks (the spec example)', async () => {
  const clock = new ManualClock(T0);
  const { w, out } = procWindow(windowSpec({ type: 'session', length: 2000, interval: 1000, alignParam: 2 }), clock);
  await w.open();
  for (const t of [13, 823, 1932, 2442, 3252, 4062, 4872, 5682, 6492, 7202, 8112]) await at(clock, w, T0 + t);
  clock.set(T0 + 10_000);
  await settle();
  const got = batches(out);
  assert.deepEqual(
    got.map((b) => [b.start - T0, b.end - T0, b.ts.length]),
    [
      [13, 1823, 2],
      [1932, 4000, 3],
      [4000, 8000, 5],
      [8000, 9112, 1],
    ],
  );
  await w.close();
});

test('count windows: COUNTWINDOW(3) tumbles, COUNTWINDOW(5, 2) emits the last 5 every 2nd event', async () => {
  const clock = new ManualClock(T0);
  const a = procWindow(windowSpec({ type: 'count', unitMs: 1, length: 3, interval: 3 }), clock);
  const b = procWindow(windowSpec({ type: 'count', unitMs: 1, length: 5, interval: 2 }), clock);
  await a.w.open();
  await b.w.open();
  for (let i = 1; i <= 8; i++) {
    await at(clock, a.w, T0 + i);
    await at(clock, b.w, T0 + i);
  }
  assert.deepEqual(
    batches(a.out).map((x) => x.ts.map((t) => t - T0)),
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
  );
  assert.deepEqual(
    batches(b.out).map((x) => x.ts.map((t) => t - T0)),
    [
      [2, 3, 4, 5, 6],
      [4, 5, 6, 7, 8],
    ],
  );
  const first = batches(b.out)[0];
  assert.equal(first.start, first.end, 'count windows: start = end = emission time');
  await a.w.close();
  await b.w.close();
});

test('an error record reaching a window is forwarded at once and is not part of any window', async () => {
  const clock = new ManualClock(T0);
  const { w, out } = procWindow(windowSpec({ type: 'count', unitMs: 1, length: 2, interval: 2 }), clock);
  await w.open();
  await at(clock, w, T0 + 1);
  w.accept(new ErrorRecord('error in preprocessor: boom'));
  await at(clock, w, T0 + 2);
  assert.ok(out.items[0] instanceof ErrorRecord);
  assert.equal(batches(out)[0].ts.length, 2);
  await w.close();
});

// ------------------------------------------------------------------------------------------------ event time

const BASE = 1541152480000;

async function eventTime(
  spec: WindowSpec,
  events: Array<[string, number]>,
  lateTolerance = 1000,
  streams = ['s'],
  trigger?: (r: Row) => boolean,
) {
  const clock = new ManualClock(BASE);
  const wm = new WatermarkNode('op_2_watermark', 1024, streams, lateTolerance);
  const w = createWindowNode('op_3_window', {
    spec,
    eventTime: true,
    clock,
    sendError: true,
    bufferLength: 1024,
    trigger: trigger ?? null,
  });
  const out = new Collector();
  wm.outputs.push(w);
  w.outputs.push(out);
  await w.open();
  for (const [s, ts] of events) {
    wm.accept(tuple(s, { ts }, ts));
    await settle(1);
  }
  await settle();
  await w.close();
  assert.equal(clock.pending(), 0, 'event-time windows use no timers');
  return batches(out);
}

const demoE: Array<[string, number]> = [
  ['s', BASE + 6013],
  ['s', BASE + 7632],
  ['s', BASE + 9252],
  ['s', BASE + 6822],
  ['s', BASE + 8442],
  ['s', BASE + 12342],
];

test('event-time tumbling: late event dropped, first start = first event, empty windows included', async () => {
  const got = await eventTime(windowSpec({ type: 'tumbling', length: 1000, interval: 1000, alignParam: 1 }), demoE);
  assert.deepEqual(got, [
    { start: BASE + 6013, end: BASE + 7000, ts: [BASE + 6013] },
    { start: BASE + 7000, end: BASE + 8000, ts: [BASE + 7632] },
    { start: BASE + 8000, end: BASE + 9000, ts: [BASE + 8442] },
    { start: BASE + 9000, end: BASE + 10000, ts: [BASE + 9252] },
    { start: BASE + 10000, end: BASE + 11000, ts: [] },
  ]);
});

test('event-time hopping: starts reported as previous end − hop (first: first event − hop)', async () => {
  const got = await eventTime(windowSpec({ type: 'hopping', length: 2000, interval: 1000, alignParam: 1 }), demoE);
  assert.deepEqual(
    got.map((b) => [b.start - BASE, b.end - BASE, b.ts.length]),
    [
      [5013, 7000, 1],
      [6000, 8000, 2],
      [7000, 9000, 2],
      [8000, 10000, 2],
      [9000, 11000, 1],
    ],
  );
});

test('event-time hopping with lateTolerance 0 and hop > length (gaps between windows)', async () => {
  const got = await eventTime(windowSpec({ type: 'hopping', length: 1000, interval: 2000, alignParam: 2 }), demoE, 0);
  // events 6013, 7632, 9252 then 6822/8442 late (watermark 9252), 12342; windows end at 8, 10, 12
  assert.deepEqual(
    got.map((b) => [b.end - BASE, b.ts.map((t) => t - BASE)]),
    [
      [8000, [7632]],
      [10000, [9252]],
      [12000, []],
    ],
  );
});

test('event-time sliding: triggers emit when the watermark passes them', async () => {
  let lastHit = 0;
  const trigger = (r: Row) => {
    const hit = r.timestamp - lastHit > 1000;
    if (hit) lastHit = r.timestamp;
    return hit;
  };
  const got = await eventTime(windowSpec({ type: 'sliding', length: 2000 }), demoE, 1000, ['s'], trigger);
  assert.deepEqual(
    got.map((b) => [b.start - BASE, b.end - BASE, b.ts.map((t) => t - BASE)]),
    [
      [4013, 6013, [6013]],
      [5632, 7632, [6013, 7632]],
      [7252, 9252, [7632, 8442, 9252]],
    ],
  );
});

test('event-time session: the reference arrival order (late 86.823 dropped), timeouts and cuts', async () => {
  const order = [6013, 7932, 6823, 9252, 8442, 10062, 11682, 10872, 12492, 14112, 13202, 19202];
  const got = await eventTime(
    windowSpec({ type: 'session', length: 2000, interval: 1000, alignParam: 2 }),
    order.map((t) => ['s', BASE + t]),
  );
  assert.deepEqual(
    got.map((b) => [b.start - BASE, b.end - BASE, b.ts.map((t) => t - BASE)]),
    [
      [6013, 7013, [6013]],
      [7932, 10000, [7932, 8442, 9252]],
      [10000, 14000, [10062, 10872, 11682, 12492, 13202]],
      [14000, 15112, [14112]],
    ],
  );
});

test('watermark: min over streams, nothing released until every stream produced an event', async () => {
  const wm = new WatermarkNode('op_1_watermark', 1024, ['a', 'b'], 0);
  const out = new Collector();
  wm.outputs.push(out);
  wm.accept(tuple('a', {}, 100));
  wm.accept(tuple('a', {}, 200));
  await settle();
  assert.equal(out.items.length, 0);
  wm.accept(tuple('b', {}, 150));
  await settle();
  const ts = out.items.map((i) => ('timestamp' in i ? i.timestamp : `wm${(i as { ts: number }).ts}`));
  assert.deepEqual(ts, [100, 150, 'wm150']);
});
