/**
 * The native plugin lifecycle across restarts (docs/plugins.md §5): an update is installed beside the loaded
 * code and running rules keep that code until the server restarts, then run the new one; a drop takes effect at the
 * restart; `DELETE ?stop=1` ends the server; bundles carry `nativePlugins` and custom schemas both ways; archives
 * that would unpack to too much or outside their folder are refused at once with nothing left on disk.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import AdmZip from 'adm-zip';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startEddyProcess } from '../helpers/eddy-process.js';
import { waitFor } from '../helpers/process.js';
import { EXAMPLES, sampleZip, serveArchives, zipOf, type ArchiveServer } from './native-fixture.js';

type J = Record<string, unknown>;
let web: ArchiveServer;
let out: string;

before(async () => {
  web = await serveArchives();
  out = mkdtempSync(join(tmpdir(), 'eddy-native-life-'));
});
after(async () => {
  await web.close();
  rmSync(out, { recursive: true, force: true });
});

function ok(r: { status: number; text: string }, status: number): void {
  assert.equal(r.status, status, r.text);
}

function rows(file: string): J[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as J);
}

const mathxSource = readFileSync(join(EXAMPLES, 'functions/mathx/Mathx.mjs'), 'utf8');
/** mathx 2.0.0: cube adds 1000, so rows say which code computed them */
const mathxV2 = sampleZip('functions/mathx', {
  'Mathx.mjs': mathxSource
    .replace("version: '1.0.0'", "version: '2.0.0'")
    .replace('return x * x * x;', 'return x * x * x + 1000;'),
});

async function install(s: TestServer): Promise<void> {
  ok(
    await s.req('POST', '/plugins/sources', {
      name: 'counter',
      file: web.put('counter.zip', sampleZip('sources/counter')),
    }),
    201,
  );
  ok(
    await s.req('POST', '/plugins/sinks', {
      name: 'collect',
      file: web.put('collect.zip', sampleZip('sinks/collect')),
    }),
    201,
  );
  ok(
    await s.req('POST', '/plugins/functions', {
      name: 'mathx',
      file: web.put('mathx.zip', sampleZip('functions/mathx')),
    }),
    201,
  );
}

test('an update runs after the restart; running rules keep the code they loaded; a drop takes effect at the restart', async () => {
  let s = await startTestServer();
  try {
    await install(s);
    const file = join(out, 'cubes.jsonl');
    ok(await s.req('POST', '/streams', { sql: 'CREATE STREAM cnt () WITH (TYPE="counter", CONF_KEY="fast")' }), 201);
    ok(
      await s.req('POST', '/rules', {
        id: 'cubes',
        sql: 'SELECT n, cube(n) AS c FROM cnt',
        actions: [{ collect: { path: file } }],
      }),
      201,
    );
    await waitFor(() => rows(file).length >= 3, 20_000, 'first rows');

    ok(await s.req('PUT', '/plugins/functions/mathx', { name: 'mathx', file: web.put('mathx2.zip', mathxV2) }), 200);
    assert.deepEqual((await s.req('GET', '/plugins/functions/mathx')).json(), {
      name: 'mathx',
      version: '1.0.0',
      functions: ['cube', 'clamp'],
    });
    // a restarted rule still gets the loaded code
    ok(await s.req('POST', '/rules/cubes/restart'), 200);
    const before = rows(file).length;
    await waitFor(() => rows(file).length >= before + 3, 20_000, 'rows after the rule restart');
    for (const r of rows(file)) assert.equal(r.c, (r.n as number) ** 3, 'the old code until the server restarts');

    await s.stop();
    rmSync(file, { force: true });
    s = await startTestServer({ home: s.homeDir });
    assert.deepEqual((await s.req('GET', '/plugins/functions/mathx')).json(), {
      name: 'mathx',
      version: '2.0.0',
      functions: ['cube', 'clamp'],
    });
    await waitFor(() => rows(file).length >= 3, 20_000, 'rows after the server restart');
    for (const r of rows(file)) assert.equal(r.c, (r.n as number) ** 3 + 1000, 'the new code after the restart');

    // a drop: listed no more, the running rule keeps its source, a new create waits for the restart
    const d = await s.req('DELETE', '/plugins/sources/counter');
    ok(d, 200);
    assert.match(d.text, /counter is deleted/);
    assert.deepEqual((await s.req('GET', '/plugins/sources')).json(), []);
    const grown = rows(file).length;
    await waitFor(() => rows(file).length > grown + 2, 20_000, 'the rule still running');
    const again = await s.req('POST', '/plugins/sources', {
      name: 'counter',
      file: web.put('counter.zip', sampleZip('sources/counter')),
    });
    assert.equal(again.status, 400);
    assert.match((again.json() as J).message as string, /marked as deleted but Eddy is not restarted/);

    await s.stop();
    s = await startTestServer({ home: s.homeDir });
    assert.equal((await s.req('GET', '/plugins/sources/counter')).status, 404);
    assert.ok(!existsSync(join(s.homeDir, 'etc', 'sources', 'counter.yaml')), 'its files are gone');
    assert.ok(!existsSync(join(s.homeDir, 'plugins', 'native', 'sources', 'counter')));
    const status = (await s.req('GET', '/rules/cubes/status')).json() as J;
    assert.match(String(status.status ?? status.message), /stop|counter/i);
  } finally {
    await s.dispose();
  }
});

test('a bundle carries nativePlugins and custom schemas: export, import into a fresh server, per-item failures', async () => {
  const a = await startTestServer();
  const b = await startTestServer();
  try {
    await install(a);
    ok(
      await a.req('POST', '/schemas/custom', { name: 'csvx', soFile: web.put('csvx.zip', sampleZip('formats/csvx')) }),
      201,
    );
    ok(await a.req('POST', '/streams', { sql: 'CREATE STREAM cnt () WITH (TYPE="counter", CONF_KEY="fast")' }), 201);
    const file = join(out, 'bundle.jsonl');
    ok(
      await a.req('POST', '/rules', {
        id: 'r',
        sql: 'SELECT clamp(n, 1, 2) AS k FROM cnt',
        actions: [{ collect: { path: file } }],
      }),
      201,
    );
    ok(await a.req('POST', '/rules/r/stop'), 200);
    const bundle = (await a.req('GET', '/data/export')).json() as Record<string, Record<string, string>>;
    assert.deepEqual(Object.keys(bundle.nativePlugins).sort(), ['functions_mathx', 'sinks_collect', 'sources_counter']);
    assert.deepEqual(JSON.parse(bundle.nativePlugins.sources_counter), {
      name: 'counter',
      file: web.put('counter.zip', sampleZip('sources/counter')),
      shellParas: [],
    });
    assert.equal(JSON.parse(bundle.Schema.custom_csvx).soFile, web.put('csvx.zip', sampleZip('formats/csvx')));

    bundle.nativePlugins.sinks_broken = JSON.stringify({
      name: 'broken',
      file: 'http://127.0.0.1:9/broken.zip',
      shellParas: [],
    });
    const r = await b.req('POST', '/data/import?partial=1', { content: JSON.stringify(bundle) });
    ok(r, 200);
    const st = (await b.req('GET', '/data/import/status')).json() as Record<string, Record<string, string>>;
    assert.deepEqual(Object.keys(st.nativePlugins), ['sinks_broken']);
    assert.match(st.nativePlugins.sinks_broken, /^fail to download file http:\/\/127\.0\.0\.1:9\/broken\.zip/);
    assert.deepEqual(((await b.req('GET', '/plugins/udfs')).json() as string[]).sort(), ['clamp', 'cube']);
    assert.deepEqual((await b.req('GET', '/schemas/custom')).json(), ['csvx']);
    ok(await b.req('POST', '/rules/r/start'), 200);
    await waitFor(() => rows(file).length >= 3, 20_000, 'the imported rule running on the imported plugins');
    assert.deepEqual(rows(file).slice(0, 3), [{ k: 1 }, { k: 2 }, { k: 2 }]);
  } finally {
    await a.dispose();
    await b.dispose();
  }
});

test('DELETE ?stop=1 answers, then the server exits', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-native-stop-'));
  try {
    const p = await startEddyProcess(home);
    ok(
      await p.req('POST', '/plugins/functions', {
        name: 'mathx',
        file: web.put('mathx.zip', sampleZip('functions/mathx')),
      }),
      201,
    );
    const r = await p.req('DELETE', '/plugins/functions/mathx?stop=1');
    ok(r, 200);
    assert.match(r.text, /mathx is deleted and Eddy will be stopped/);
    const alive = () => {
      try {
        process.kill(p.pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor(() => !alive(), 30_000, 'the server to exit');
    await p.stop();
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('zip bombs and zip-slip archives are refused at once with 400 and nothing on disk, for plugins and services', async () => {
  const s = await startTestServer();
  try {
    // 64 MiB of zeros packs to about 64 KiB: a compression ratio no plugin needs
    const bomb = sampleZip('sinks/collect', { 'padding.bin': Buffer.alloc(64 * 1024 * 1024) });
    assert.ok(bomb.length < 1024 * 1024);
    const many: Record<string, string> = {};
    for (let i = 0; i <= 10_000; i++) many[`f${i}.txt`] = '';
    const crowd = zipOf({ 'Collect.mjs': 'export const Collect = () => ({})', ...many });
    const slipZip = new AdmZip(sampleZip('sinks/collect'));
    slipZip.addFile('x', Buffer.from('evil'));
    slipZip.getEntry('x')!.entryName = '../../../evil.mjs';
    const slip = slipZip.toBuffer();
    const cases: Array<[string, Buffer, RegExp]> = [
      ['bomb', bomb, /compressed more than 200 to 1/],
      ['crowd', crowd, /more than 10000 entries/],
      ['slip', slip, /invalid zip entry \.\.\/\.\.\/\.\.\/evil\.mjs: it leads outside the target folder/],
    ];
    for (const [name, bytes, why] of cases) {
      const r = await s.req('POST', '/plugins/sinks', { name: 'collect', file: web.put(`${name}.zip`, bytes) });
      assert.equal(r.status, 400, name);
      assert.match((r.json() as J).message as string, why, name);
      const svc = await s.req('POST', '/services', { name: `svc${name}`, file: web.put(`${name}.zip`, bytes) });
      assert.equal(svc.status, 400, `service ${name}`);
      assert.match((svc.json() as J).message as string, why, `service ${name}`);
    }
    const native = join(s.homeDir, 'plugins', 'native');
    const left = existsSync(join(native, 'sinks')) ? readdirSync(join(native, 'sinks')) : [];
    assert.deepEqual(left, [], 'no plugin folder');
    assert.ok(!readdirSync(native).some((f) => f.startsWith('.')), 'no staging folder');
    assert.ok(!existsSync(join(s.homeDir, 'evil.mjs')) && !existsSync(join(s.homeDir, 'plugins', 'evil.mjs')));
    assert.deepEqual((await s.req('GET', '/services')).json(), []);
  } finally {
    await s.dispose();
  }
});
