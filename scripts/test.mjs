#!/usr/bin/env node
// `npm test`: installs the locked dependencies when needed, installs the Debian packages the tests drive and starts
// the services they talk to when down (scripts/test-services.mjs), then runs every test/**/*.test.ts with node's own
// test runner (TypeScript loaded through tsx). Extra arguments are substrings: only test files whose path contains one
// of them run.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { ensureDeps } from './ensure-deps.mjs';
import { ensureTestServices } from './test-services.mjs';

const root = new URL('..', import.meta.url).pathname;
await ensureDeps(root);
if (process.env.EDDY_TEST_SERVICES !== '0') await ensureTestServices();

const filters = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const passthrough = process.argv.slice(2).filter((a) => a.startsWith('--') && a !== '--no-typecheck');

// The full suite fails on type errors, lint errors and unformatted files: checked once before any test runs.
// A filtered run (a developer's own files) skips it.
if (filters.length === 0 && !process.argv.includes('--no-typecheck')) {
  const tsc = spawnSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.json'), '--noEmit'],
    { stdio: 'inherit' },
  );
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
  // lint and format are part of the suite: `npm run format` fixes what the second one reports
  for (const [bin, args] of [
    ['node_modules/eslint/bin/eslint.js', ['src', 'test', 'bench', 'scripts', 'console']],
    ['node_modules/prettier/bin/prettier.cjs', ['--check', '--log-level', 'warn', '.']],
  ]) {
    const r = spawnSync(process.execPath, [join(root, bin), ...args], { stdio: 'inherit', cwd: root });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
}

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, full));
  }
  return out;
}

const files = walk(join(root, 'test'), [])
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const args = [
  '--import',
  'tsx',
  '--test',
  '--test-concurrency=4',
  '--test-timeout=300000',
  '--test-force-exit',
  ...passthrough,
  ...files,
];
const res = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root, env: { ...process.env, EDDY_TEST: '1' } });
process.exit(res.status ?? 1);
