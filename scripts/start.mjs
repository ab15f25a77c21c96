#!/usr/bin/env node
// `npm start`: install if needed, compile `src/` only when it changed since the last build, then serve (EDDY_HOME,
// default the current folder).
import { ensureDeps } from './ensure-deps.mjs';
import { ensureServerBuild } from './build-server.mjs';

const root = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
await ensureDeps(root);
await ensureServerBuild(root);
await import(new URL('../dist/server/main.js', import.meta.url).href);
