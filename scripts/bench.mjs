#!/usr/bin/env node
// `npm run bench`: runs every compiled benchmark module under dist/bench/ (each exports `run()` returning figures)
// and prints its figures. Benchmarks may be named: `npm run bench -- runtime nexmark` runs exactly `runtime` and
// `nexmark` (not `nexmark-mqtt`: a name is the whole file name, never a part of it; `nexmark*` runs every name
// starting with `nexmark`). `--quick` asks the benchmarks that take it for fewer and shorter rounds.
import { readdirSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { ensureDeps } from './ensure-deps.mjs';
import { selectBenchmarks } from './bench-names.mjs';

const root = new URL('..', import.meta.url).pathname;
await ensureDeps(root);
const tsc = spawnSync(process.execPath, [`${root}/node_modules/typescript/bin/tsc`, '-p', `${root}/tsconfig.json`], {
  stdio: 'inherit',
});
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

const dir = `${root}/dist/bench`;
const filters = process.argv.slice(2).filter((a) => !a.startsWith('--'));
// benchmarks that run only when named (long, or needing a service of their own): `npm run bench -- faults`
const onRequest = new Set(['faults.js', 'fuzz.js', 'cluster.js']);
const picked = selectBenchmarks(existsSync(dir) ? readdirSync(dir) : [], filters, onRequest);
if ('error' in picked) {
  console.error(picked.error);
  process.exit(1);
}
const mods = picked.run;
for (const file of mods) {
  const mod = await import(`${dir}/${file}`);
  if (typeof mod.run !== 'function') continue;
  console.log(`\n== ${file.replace(/\.js$/, '')}`);
  const figures = await mod.run();
  for (const [k, v] of Object.entries(figures ?? {})) console.log(`${k.padEnd(60)} ${v}`);
}
process.exit(0);
