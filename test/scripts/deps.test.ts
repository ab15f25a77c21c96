/**
 * The install steps of `npm start` and `npm test` (scripts/ensure-deps.mjs, scripts/test-services.mjs): dependencies
 * are judged current by the lock file's content, never its date; an install shows its progress; the test services
 * check says what it finds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = new URL('../..', import.meta.url).pathname;

interface Out {
  isTTY: boolean;
  write(text: string): boolean;
}
interface EnsureDeps {
  dependencyState(root: string): 'current' | 'stale' | 'missing';
  installWithProgress(root: string, opts: { command: string[]; out: Out; everyMs: number }): Promise<number>;
}
interface TestServices {
  missingPackages(names: string[]): string[] | undefined;
  portOpen(port: number): Promise<boolean>;
  ensureTestServices(out: (line: string) => void): Promise<string[]>;
  TEST_PACKAGES: Array<[string, string]>;
}

// the scripts are plain JavaScript run by node before any dependency exists; their shapes are declared above
const load = async <T>(file: string) => (await import(pathToFileURL(join(root, 'scripts', file)).href)) as T;

const LOCK = {
  name: 'fake',
  lockfileVersion: 3,
  packages: {
    '': { name: 'fake' },
    'node_modules/left': { version: '1.0.0' },
    'node_modules/@scope/right': { version: '2.1.0' },
    'node_modules/other-platform': { version: '3.0.0', optional: true },
  },
};

function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-deps-'));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(LOCK, null, 2));
  return dir;
}

/** node_modules as npm leaves it: the packages and its own record of them (optional ones for other platforms left out) */
function installed(dir: string, packages: Record<string, unknown>): void {
  mkdirSync(join(dir, 'node_modules', '@scope', 'right'), { recursive: true });
  mkdirSync(join(dir, 'node_modules', 'left'), { recursive: true });
  writeFileSync(join(dir, 'node_modules', '.package-lock.json'), JSON.stringify({ name: 'fake', packages }));
}

test('dependencies are current by the lock file content, whatever the file dates', async () => {
  const { dependencyState } = await load<EnsureDeps>('ensure-deps.mjs');
  const dir = project();
  try {
    assert.equal(dependencyState(dir), 'missing');
    installed(dir, { 'node_modules/left': { version: '1.0.0' }, 'node_modules/@scope/right': { version: '2.1.0' } });
    // installed before the content stamp existed: compared with npm's record, then remembered
    assert.equal(dependencyState(dir), 'current');
    const stamp = join(dir, 'node_modules', '.eddy-lock-sha256');
    assert.match(readFileSync(stamp, 'utf8'), /^[0-9a-f]{64}\n$/);
    // a lock file newer than node_modules by date (a checkout, a copy) but with the same content
    const later = new Date(Date.now() + 3_600_000);
    utimesSync(join(dir, 'package-lock.json'), later, later);
    assert.equal(dependencyState(dir), 'current');
    // the content changed: stale, however old the file is
    const changed = structuredClone(LOCK);
    changed.packages['node_modules/left'].version = '1.0.1';
    writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(changed, null, 2));
    const earlier = new Date(Date.now() - 86_400_000);
    utimesSync(join(dir, 'package-lock.json'), earlier, earlier);
    assert.equal(dependencyState(dir), 'stale');
    // without a stamp, npm's record decides: a different version is stale
    rmSync(stamp);
    assert.equal(dependencyState(dir), 'stale');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an install shows how far it is: time, packages unpacked and the script running; a failure shows its output', async () => {
  const { installWithProgress } = await load<EnsureDeps>('ensure-deps.mjs');
  const dir = project();
  try {
    // a stand-in for npm ci: unpacks, announces better-sqlite3's install script as npm does, takes a while
    const fake = join(dir, 'fake-npm.mjs');
    writeFileSync(
      fake,
      [
        "import { mkdirSync } from 'node:fs';",
        "mkdirSync('node_modules/left', { recursive: true });",
        "console.log('> better-sqlite3@12.9.0 install');",
        "console.log('> prebuild-install || node-gyp rebuild --release');",
        'await new Promise((r) => setTimeout(r, 1500));',
        "console.log('added 2 packages in 2s');",
        'process.exit(Number(process.argv[2]));',
      ].join('\n'),
    );
    const lines: string[] = [];
    const out: Out = { isTTY: false, write: (t) => lines.push(t) > 0 };
    const code = await installWithProgress(dir, { command: [process.execPath, fake, '0'], out, everyMs: 200 });
    assert.equal(code, 0);
    assert.ok(
      lines.some((l) =>
        /^eddy: installing dependencies: \d+ s, 1\/2 packages, building better-sqlite3 \(compiling SQLite/.test(l),
      ),
      lines.join(''),
    );
    assert.ok(existsSync(join(dir, 'node_modules', 'left')));
    lines.length = 0;
    const failed = await installWithProgress(dir, { command: [process.execPath, fake, '3'], out, everyMs: 200 });
    assert.equal(failed, 3);
    const text = lines.join('');
    assert.match(text, /added 2 packages in 2s\neddy: .*fake-npm\.mjs 3 failed \(exit 3\); its output: /);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the test services check names what is missing and what is down, and is quiet when all is there', async () => {
  const { missingPackages, portOpen, ensureTestServices, TEST_PACKAGES } =
    await load<TestServices>('test-services.mjs');
  const missing = missingPackages(['eddy-no-such-package-here', 'bash']);
  // on a machine without dpkg there is nothing to ask
  if (missing !== undefined) assert.deepEqual(missing, ['eddy-no-such-package-here']);
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as { port: number }).port;
  assert.equal(await portOpen(port), true);
  await new Promise<void>((r) => closed.close(() => r()));
  assert.equal(await portOpen(port), false);
  // `npm test` ran it before this file: everything is installed and up now, and it says so in one line
  if (process.env.EDDY_TEST_SERVICES === '0') return;
  const said: string[] = [];
  assert.deepEqual(await ensureTestServices((l) => said.push(l)), []);
  assert.equal(said.length, 1, said.join('\n'));
  assert.match(said[0], new RegExp(`^test services: ${TEST_PACKAGES.length} packages present; Mosquitto, Redis, `));
});
