// Installs the locked dependencies when node_modules is missing or older than the lock file, so that
// `npm start` and `npm test` work on a fresh clone with no other step.
import { existsSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

export function ensureDeps(root) {
  const marker = `${root}/node_modules/.package-lock.json`;
  const lock = `${root}/package-lock.json`;
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs - 1000) return;
  console.error('eddy: installing dependencies (npm ci)…');
  const t0 = Date.now();
  const res = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (res.status !== 0) process.exit(res.status ?? 1);
  console.error(`eddy: dependencies installed in ${Math.round((Date.now() - t0) / 1000)} s`);
}
