// Compiles `src/` into `dist/server/` only when the sources changed since the last build, so that a start after the
// first one costs a directory walk, not a compiler run. A fingerprint of every source file (path, size, mtime) and of
// the build settings is kept in `dist/server/.stamp`. Without `src/` (an installed package) the shipped `dist/server/`
// is used as it is.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

function walk(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.name.endsWith('.ts')) out.push(full);
  }
  return out;
}

function fingerprint(root, files) {
  const hash = createHash('sha1');
  for (const f of [
    ...files,
    join(root, 'tsconfig.json'),
    join(root, 'tsconfig.build.json'),
    join(root, 'package.json'),
  ]) {
    const st = statSync(f);
    hash.update(`${relative(root, f)}\0${st.size}\0${st.mtimeMs}\n`);
  }
  return hash.digest('hex');
}

/**
 * Transpiles with esbuild when it is installed (a development checkout: it is the transform the tests run through
 * tsx, so the built server is the tested code), else type-checks and compiles with tsc. Type errors are the test
 * suite's and `npm run typecheck`'s business; a start must not wait for a whole-program check.
 */
async function compile(root, files, out) {
  rmSync(out, { recursive: true, force: true });
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    esbuild = undefined;
  }
  if (esbuild) {
    await esbuild.build({
      entryPoints: files,
      outdir: out,
      outbase: join(root, 'src'),
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: true,
      tsconfig: join(root, 'tsconfig.build.json'),
      logLevel: 'error',
    });
    // esbuild's service process would otherwise live as long as the server it just built
    await esbuild.stop?.();
    return;
  }
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (res.status !== 0) throw new Error(`tsc failed with status ${res.status}`);
}

/** Makes `dist/server/` current; returns what was done ('fresh', 'built', or 'packaged'). */
export async function ensureServerBuild(root, log = (msg) => console.error(msg)) {
  const src = join(root, 'src');
  const out = join(root, 'dist', 'server');
  if (!existsSync(src)) {
    if (!existsSync(join(out, 'main.js'))) throw new Error(`no src/ and no compiled dist/server/ under ${root}`);
    return 'packaged';
  }
  const files = walk(src, []).sort();
  const stampFile = join(out, '.stamp');
  const print = fingerprint(root, files);
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === print && existsSync(join(out, 'main.js')))
    return 'fresh';
  const t0 = Date.now();
  log('eddy: sources changed, compiling src/ …');
  await compile(root, files, out);
  mkdirSync(out, { recursive: true });
  writeFileSync(stampFile, print);
  log(`eddy: compiled ${files.length} files in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return 'built';
}

// `node scripts/build-server.mjs`: build now (used by `npm run build` and before packing)
if (import.meta.url === `file://${process.argv[1]}`) {
  await ensureServerBuild(new URL('..', import.meta.url).pathname.replace(/\/$/, ''));
}
