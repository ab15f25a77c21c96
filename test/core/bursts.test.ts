/**
 * Bursts of REST requests (src/core/bursts.ts): while one lasts the heaps grow by V8's own factor, so a heap that
 * thousands of new rules make grow is collected a few times rather than at every fifth part of growth; when it is over,
 * the bound is back and the thread collects at once, as do the rule workers when told.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const module = (name: string) => JSON.stringify(fileURLToPath(new URL(`../../src/core/${name}.ts`, import.meta.url)));

interface Outcome {
  /** full collections while 120 MB more were kept */
  majors: number;
  /** full collections forced from the start of that growth to 4 s after its last request, and whether an end was told */
  forcedAfter: number;
  told: boolean;
}

/** A child process keeps 40 MB, then 120 MB more, with requests coming in a burst meanwhile or with none. */
function run(burst: boolean): Outcome {
  const script = `
    import { startWorker } from ${module('threads')};
    import { onBurstEnd, requestArrived } from ${module('bursts')};
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    let majors = 0;
    let forced = 0;
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if (e.detail.kind !== constants.NODE_PERFORMANCE_GC_MAJOR) continue;
        majors++;
        if (e.detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) forced++;
      }
    });
    obs.observe({ entryTypes: ['gc'] });
    // the bound on heap growth applies from the first worker thread's start, as in a server with rule workers
    const worker = startWorker(new URL('data:text/javascript,'));
    await new Promise((r) => worker.once('exit', r));
    const keep = [];
    // requests keep coming while the heap grows (however slow the machine, the burst lasts that long)
    const grow = async (mb, requests) => {
      for (let i = 0; i < mb * 10; i++) {
        keep.push(new Array(12000).fill(i).map((x) => ({ x })));
        if (i % 50 !== 0) continue;
        for (let k = 0; k < requests; k++) requestArrived();
        await new Promise((r) => setImmediate(r));
      }
      await new Promise((r) => setTimeout(r, 100));
    };
    await grow(40, 0);
    let told = false;
    onBurstEnd(() => (told = true));
    const m = majors;
    const f = forced;
    await grow(120, ${burst ? 150 : 0});
    const grown = majors - m;
    await new Promise((r) => setTimeout(r, 4000));
    const forcedAfter = forced - f;
    obs.disconnect();
    console.log(JSON.stringify({ majors: grown, forcedAfter, told }));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as Outcome;
}

test('during a burst of requests the heap grows with fewer full collections; at its end it is collected once', () => {
  const quiet = run(false);
  const burst = run(true);
  const show = `full collections for the same growth: ${burst.majors} in a burst, ${quiet.majors} without`;
  // at most half as many: the bound makes a heap that grows 4× be collected at every fifth part of growth
  assert.ok(burst.majors * 2 <= quiet.majors, show);
  assert.ok(burst.forcedAfter >= 1, `the end of the burst collects at once: ${JSON.stringify(burst)}`);
  assert.ok(burst.told, 'the end of the burst is told (the rule workers collect too)');
  assert.deepEqual([quiet.forcedAfter, quiet.told], [0, false], 'without a burst nothing is collected nor told');
});
