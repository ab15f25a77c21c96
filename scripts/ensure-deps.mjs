// Installs the locked dependencies (`npm ci`) when node_modules does not hold what package-lock.json says, so that
// `npm start` and `npm test` work on a fresh clone with no other step. "Current" is judged by content, never by file
// dates: after an install the SHA-256 of the lock file is recorded in node_modules/.eddy-lock-sha256, and a
// node_modules installed before that record existed is compared package by package with npm's own record of what it
// installed (node_modules/.package-lock.json). While `npm ci` runs (minutes on a first install, most of them compiling
// better-sqlite3 when no prebuilt binary can be fetched) a status line says how far it is.
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const STAMP = '.eddy-lock-sha256';

function lockHash(root) {
  return createHash('sha256')
    .update(readFileSync(join(root, 'package-lock.json')))
    .digest('hex');
}

/** Whether npm's record of the installed tree names every package of the lock, at its version, and nothing else. */
function installedMatchesLock(root) {
  let lock;
  let hidden;
  try {
    lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages ?? {};
    hidden = JSON.parse(readFileSync(join(root, 'node_modules', '.package-lock.json'), 'utf8')).packages ?? {};
  } catch {
    return false;
  }
  for (const [path, want] of Object.entries(lock)) {
    if (path === '' || want.link) continue;
    const have = hidden[path];
    // optional packages for other platforms are not installed
    if (!have) {
      if (want.optional) continue;
      return false;
    }
    if (have.version !== want.version) return false;
  }
  return Object.keys(hidden).every((path) => path in lock);
}

/** `current`, `stale` (node_modules differs from the lock) or `missing`. */
export function dependencyState(root) {
  if (!existsSync(join(root, 'node_modules'))) return 'missing';
  const stamp = join(root, 'node_modules', STAMP);
  const hash = lockHash(root);
  if (existsSync(stamp)) return readFileSync(stamp, 'utf8').trim() === hash ? 'current' : 'stale';
  if (!installedMatchesLock(root))
    return existsSync(join(root, 'node_modules', '.package-lock.json')) ? 'stale' : 'missing';
  // installed before the stamp existed, and matching: remember it, so the next check is one hash
  try {
    writeFileSync(stamp, `${hash}\n`);
  } catch {
    // a read-only node_modules is checked the long way each time
  }
  return 'current';
}

/** Top-level packages unpacked so far, against the lock's count. */
function unpacked(root, total) {
  let n = 0;
  try {
    for (const name of readdirSync(join(root, 'node_modules'))) {
      if (name.startsWith('.')) continue;
      n += name.startsWith('@') ? readdirSync(join(root, 'node_modules', name)).length : 1;
    }
  } catch {
    // not created yet
  }
  return `${Math.min(n, total)}/${total} packages`;
}

function topLevelCount(root) {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages ?? {};
  return Object.entries(lock).filter(
    ([p, v]) => p.startsWith('node_modules/') && !p.slice(13).includes('node_modules/') && !v.optional,
  ).length;
}

/**
 * Runs the install command (`npm ci`; tests give another), its output kept in a log file, with a status line every
 * `everyMs` — redrawn in place on a terminal, one line at a time otherwise — naming the time spent, the packages
 * unpacked and the install script running. Resolves with the command's exit code.
 */
export function installWithProgress(root, opts = {}) {
  const command = opts.command ?? ['npm', 'ci', '--no-audit', '--no-fund', '--foreground-scripts'];
  const out = opts.out ?? process.stderr;
  const everyMs = opts.everyMs ?? (out.isTTY ? 1000 : 15_000);
  const logFile = join(tmpdir(), `eddy-npm-ci-${process.pid}.log`);
  const log = createWriteStream(logFile);
  const total = topLevelCount(root);
  const t0 = Date.now();
  let phase = 'downloading and unpacking';
  let tail = [];
  const status = () =>
    `eddy: installing dependencies: ${Math.round((Date.now() - t0) / 1000)} s, ${unpacked(root, total)}, ${phase}`;
  return new Promise((resolve) => {
    const child = spawn(command[0], command.slice(1), { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    const read = (chunk) => {
      log.write(chunk);
      for (const line of chunk.toString().split('\n')) {
        if (line.trim() === '') continue;
        tail = [...tail.slice(-39), line];
        // npm announces each install script it runs: `> better-sqlite3@12.9.0 install`
        const script = /^> (\S+)@\S+ (install|postinstall|preinstall)/.exec(line);
        if (script)
          phase =
            script[1] === 'better-sqlite3'
              ? 'building better-sqlite3 (compiling SQLite takes minutes when no prebuilt binary can be fetched)'
              : `running the ${script[2]} script of ${script[1]}`;
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    const timer = setInterval(() => out.write(out.isTTY ? `\r${status()}\x1b[K` : `${status()}\n`), everyMs);
    child.on('error', (err) => {
      tail.push(String(err));
    });
    child.on('close', (code) => {
      clearInterval(timer);
      log.end();
      if (out.isTTY) out.write('\r\x1b[K');
      if (code !== 0)
        out.write(`${tail.join('\n')}\neddy: ${command.join(' ')} failed (exit ${code}); its output: ${logFile}\n`);
      resolve(code ?? 1);
    });
  });
}

/** Installs when needed; exits the process when the install fails. */
export async function ensureDeps(root) {
  const state = dependencyState(root);
  if (state === 'current') return;
  console.error(
    state === 'missing'
      ? 'eddy: installing the dependencies (npm ci); a first install can take minutes…'
      : 'eddy: package-lock.json changed since the last install: installing the dependencies again (npm ci)…',
  );
  const t0 = Date.now();
  const code = await installWithProgress(root);
  if (code !== 0) process.exit(code);
  writeFileSync(join(root, 'node_modules', STAMP), `${lockHash(root)}\n`);
  console.error(`eddy: dependencies installed in ${Math.round((Date.now() - t0) / 1000)} s`);
}

// run directly (`.ci/run`, a fresh clone): install what the lock file names, if node_modules does not hold it yet
if (process.argv[1] === fileURLToPath(import.meta.url)) await ensureDeps(fileURLToPath(new URL('..', import.meta.url)));
