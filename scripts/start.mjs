#!/usr/bin/env node
// `npm start`: install if needed, build if sources changed, then serve (EDDY_HOME, default the current folder).
import { spawnSync } from 'node:child_process';
import { ensureDeps } from './ensure-deps.mjs';

const root = new URL('..', import.meta.url).pathname;
ensureDeps(root);
const tsc = spawnSync(process.execPath, [`${root}/node_modules/typescript/bin/tsc`, '-p', `${root}/tsconfig.json`], {
  stdio: 'inherit',
});
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
await import(new URL('../dist/src/main.js', import.meta.url).href);
