/**
 * The idle collector (src/core/idle-memory.ts): once a burst has grown the heap and the process has gone idle, one full
 * collection runs by itself; a process whose heap did not grow is left alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MODULE = fileURLToPath(new URL('../../src/core/idle-memory.ts', import.meta.url));

/** Counts the forced full collections in a child process with a short check period, after a burst or without one. */
function forcedCollections(burst: boolean): number {
  const script = `
    import { useIdleCollector } from ${JSON.stringify(MODULE)};
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    let forced = 0;
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries())
        if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR && e.detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced++;
    });
    obs.observe({ entryTypes: ['gc'] });
    const release = useIdleCollector(200);
    if (${burst}) {
      const live = [];
      for (let round = 0; round < 100; round++) {
        const batch = [];
        for (let i = 0; i < 20000; i++) batch.push({ a: i, b: 'x' + i, c: [i, i + 1] });
        live.push(batch);
        if (live.length > 20) live.shift();
        await new Promise((r) => setImmediate(r));
      }
      live.length = 0;
      // the first idle check may come late on a loaded machine: wait for the collection (at most 20 s), then watch
      // seven more checks
      const deadline = Date.now() + 20000;
      while (forced === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 1500));
    release();
    setImmediate(() => { obs.disconnect(); console.log(JSON.stringify({ forced })); });
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(r.stdout.trim().split('\n').pop() as string) as { forced: number }).forced;
}

test('after a burst the idle process runs one full collection by itself, and at most one more', () => {
  // seven idle checks pass after the burst: a collector that kept collecting a heap that no longer grows would spend
  // a core's time on a thread that merely idles while worker threads work
  const forced = forcedCollections(true);
  assert.ok(forced >= 1 && forced <= 2, `${forced} forced collections`);
});

test('a process whose heap did not grow is not collected', () => {
  assert.equal(forcedCollections(false), 0);
});
