/**
 * CPU usage per rule over the last 30 s (src/rules/cpu.ts, docs/rest-api.md §4.15): what a rule spent inside the
 * window, not before it, whether or not its value moved at every sample.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CpuMeter } from '../../src/rules/cpu.js';

test('the usage is what each rule spent within the window, idle stretches included', () => {
  const busy = new Map<string, number>([
    ['idle', 5_000],
    ['busy', 0],
    ['once', 0],
  ]);
  const meter = new CpuMeter(1_000_000, 30_000, (visit) => {
    for (const [id, us] of busy) visit(id, us);
  });
  try {
    const at = (s: number) => 1_000_000 + s * 1000;
    for (let s = 0; s <= 60; s += 5) {
      busy.set('busy', busy.get('busy')! + 10_000); // 10 ms every 5 s
      if (s === 10) busy.set('once', 40_000); // 40 ms once, long ago by the end
      if (s === 50) busy.set('once', 100_000); // 60 ms more, recently
      meter.sample(at(s));
    }
    const usage = (id: string) => meter.usageMs(id, busy.get(id), at(60));
    assert.equal(usage('idle'), 0);
    // the samples at 30…60 s: six steps of 10 ms inside the window
    assert.equal(usage('busy'), 60);
    assert.equal(usage('once'), 60, 'the 40 ms spent 50 s ago are outside the window');
    assert.equal(meter.usageMs('unknown', undefined, at(60)), 0);
  } finally {
    meter.close();
  }
});
