#!/usr/bin/env node
// The `eddy` command (package.json `bin`): in a checkout, compiles `src/` first when it changed; an installed package
// runs its shipped `dist/server/`.
import { ensureServerBuild } from '../scripts/build-server.mjs';

const root = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
await ensureServerBuild(root);
await import(new URL('../dist/server/cli/main.js', import.meta.url).href);
