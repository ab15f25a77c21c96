// `npm pack` hooks. prepack: compile `src/` into `dist/server/` and ship the lock file as npm-shrinkwrap.json, the
// one lock npm honours when Eddy is installed as a package, so that the installed tree is the tested one (and the
// Node-20 pin of `overrides`, which npm applies only to a root project, holds there too). postpack: remove it.
import { copyFileSync, rmSync } from 'node:fs';
import { ensureServerBuild } from './build-server.mjs';

const root = new URL('..', import.meta.url).pathname.replace(/\/$/, '');
if (process.argv[2] === 'post') rmSync(`${root}/npm-shrinkwrap.json`, { force: true });
else {
  await ensureServerBuild(root);
  copyFileSync(`${root}/package-lock.json`, `${root}/npm-shrinkwrap.json`);
}
