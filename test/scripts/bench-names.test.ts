/** Which benchmarks `npm run bench -- <names>` runs (scripts/bench-names.mjs). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = new URL('../..', import.meta.url).pathname;
type Select = (files: string[], names: string[], onRequest: Set<string>) => { run: string[] } | { error: string };

test('a benchmark name is the whole module name; a trailing * names every module starting with the rest', async () => {
  const { selectBenchmarks } = (await import(pathToFileURL(join(root, 'scripts', 'bench-names.mjs')).href)) as {
    selectBenchmarks: Select;
  };
  const files = ['mqtt.js', 'nexmark.js', 'nexmark-mqtt.js', 'faults.js', 'runtime.js', 'runtime.js.map'];
  const onRequest = new Set(['faults.js']);
  assert.deepEqual(selectBenchmarks(files, ['nexmark'], onRequest), { run: ['nexmark.js'] });
  assert.deepEqual(selectBenchmarks(files, ['mqtt'], onRequest), { run: ['mqtt.js'] });
  assert.deepEqual(selectBenchmarks(files, ['nexmark*'], onRequest), { run: ['nexmark-mqtt.js', 'nexmark.js'] });
  assert.deepEqual(selectBenchmarks(files, ['faults', 'mqtt'], onRequest), { run: ['faults.js', 'mqtt.js'] });
  // no names: everything but what runs on request only
  assert.deepEqual(selectBenchmarks(files, [], onRequest), {
    run: ['mqtt.js', 'nexmark-mqtt.js', 'nexmark.js', 'runtime.js'],
  });
  const unknown = selectBenchmarks(files, ['nex'], onRequest);
  assert.ok(
    'error' in unknown && /no benchmark named nex \(benchmarks: mqtt, nexmark, nexmark-mqtt/.test(unknown.error),
  );
});
