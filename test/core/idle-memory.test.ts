/**
 * The idle collector (src/core/idle-memory.ts): once a burst has grown the heap and the process has gone idle, one full
 * collection runs by itself; a process whose heap did not grow is left alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MODULE = fileURLToPath(new URL('../../src/core/idle-memory.ts', import.meta.url));

/** The old generation V8 holds, as the collector weighs it (the young generation left out), in a child's script. */
const OLD_HELD = `() => {
  const h = getHeapStatistics();
  let held = h.total_heap_size;
  for (const s of getHeapSpaceStatistics())
    if (s.space_name === 'new_space' || s.space_name === 'new_large_object_space') held -= s.space_size;
  return held;
}`;

interface Outcome {
  /** full collections the idle collector forced */
  forced: number;
  /** old generation held before the burst, at its end, and after the idle period (bytes) */
  before: number;
  peak: number;
  after: number;
}

/** Runs a child process with a short check period, after a burst or without one, and reports what it held. */
function idleRun(burst: boolean): Outcome {
  const script = `
    import { useIdleCollector } from ${JSON.stringify(MODULE)};
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
    const oldHeld = ${OLD_HELD};
    let forced = 0;
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries())
        if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR && e.detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced++;
    });
    obs.observe({ entryTypes: ['gc'] });
    const before = oldHeld();
    let peak = before;
    const release = useIdleCollector(200);
    if (${burst}) {
      const live = [];
      for (let round = 0; round < 100; round++) {
        const batch = [];
        for (let i = 0; i < 20000; i++) batch.push({ a: i, b: 'x' + i, c: [i, i + 1] });
        live.push(batch);
        if (live.length > 20) live.shift();
        peak = Math.max(peak, oldHeld());
        await new Promise((r) => setImmediate(r));
      }
      live.length = 0;
      // the first idle check may come late on a loaded machine: wait (at most 20 s) until the memory is given back —
      // by the collector, or by a collection of V8's own — then watch seven more checks
      const deadline = Date.now() + 20000;
      while (oldHeld() > before + 16 * 1024 * 1024 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 1500));
    const after = oldHeld();
    release();
    setImmediate(() => { obs.disconnect(); console.log(JSON.stringify({ forced, before, peak, after })); });
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as Outcome;
}

const MB = 1024 * 1024;

test('after a burst the idle process gives the memory back, forcing one full collection at most twice', () => {
  const o = idleRun(true);
  const show = `forced ${o.forced}; old generation ${(o.before / MB).toFixed(0)} → ${(o.peak / MB).toFixed(0)} → ${(o.after / MB).toFixed(0)} MB`;
  assert.ok(o.peak > o.before + 32 * MB, `the burst grew the heap: ${show}`);
  // given back: by the collector's forced collection, or by one of V8's own if it came first
  assert.ok(o.after < o.before + 16 * MB, `memory held after the idle period: ${show}`);
  // seven idle checks pass after that: a collector that kept collecting a heap that no longer grows would spend a
  // core's time on a thread that merely idles while worker threads work
  assert.ok(o.forced <= 2, show);
});

test('a process whose heap did not grow is not collected', () => {
  assert.equal(idleRun(false).forced, 0);
});
