/**
 * Portable plugins on a real server: install from a zip (descriptor, executable, source yaml, metadata files),
 * list/describe/update/delete with eKuiper's texts, archive checks, and the plugin's source, sink and function used
 * by a rule — the plugin is a real child process speaking NNG over IPC (test/extensions/portable-fixture.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startTestServer } from '../helpers/server.js';
import type { ValueObject } from '../../src/values/index.js';
import { pluginZip, type PluginZipOptions } from './portable-fixture.js';

type J = Record<string, any>;
let counter = 0;
const uid = (p: string) => `${p}${process.pid}x${Date.now().toString(36)}x${counter++}`;

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'eddy-portable-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function zipUrl(o: PluginZipOptions): string {
  const file = join(dir, `${uid('z')}.zip`);
  writeFileSync(file, pluginZip(o));
  return pathToFileURL(file).href;
}

async function until<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 10000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 30));
    last = await fn();
  }
  return last;
}

function err(r: { status: number; json(): unknown }, status: number): J {
  assert.equal(r.status, status);
  return r.json() as J;
}

test('a portable plugin is installed, described, used by a rule (source, function, sink) and deleted', async () => {
  const s = await startTestServer();
  const name = uid('mirror');
  const src = uid('counter');
  const sink = uid('collect');
  const fn = uid('revert');
  const out = join(dir, `${uid('sink')}.txt`);
  try {
    let r = await s.req('POST', '/plugins/portables', {
      name,
      file: zipUrl({ name, sources: [src], sinks: [sink], functions: [fn] }),
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.text, `portable plugin ${name} is created`);
    assert.deepEqual((await s.req('GET', '/plugins/portables')).json(), [name]);
    assert.deepEqual((await s.req('GET', `/plugins/portables/${name}`)).json(), {
      name,
      version: 'v1.0.0',
      language: 'go',
      executable: name,
      sources: [src],
      sinks: [sink],
      functions: [fn],
    });
    // files: the plugin folder, the source yaml and metadata in the data folder
    assert.ok(existsSync(join(s.homeDir, 'plugins', 'portable', name, `${name}.json`)));
    assert.ok(existsSync(join(s.homeDir, 'data', 'sources', `${src}.yaml`)));
    assert.ok(existsSync(join(s.homeDir, 'data', 'sources', `${src}.json`)));

    const stream = uid('ps');
    r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM ${stream} () WITH (TYPE="${src}", DATASOURCE="abc", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    const rows: ValueObject[] = [];
    const topic = `${stream}/out`;
    const close = s.app.connectors.memory.subscribe(topic, (m) => rows.push(m.row));
    const rule = uid('pr');
    r = await s.req('POST', '/rules', {
      id: rule,
      sql: `SELECT n, ds, greeting, pid, ${fn}(ds) AS rev FROM ${stream}`,
      actions: [{ memory: { topic } }, { [sink]: { path: out, requiredACKs: 1 } }],
    });
    assert.equal(r.status, 201, r.text);
    await until(
      () => rows.length,
      (n) => n >= 3,
      'rows from the plugin source',
    );
    assert.equal(rows[0].ds, 'abc', 'the source got its datasource: ' + JSON.stringify(rows.slice(0, 3)));
    assert.equal(rows[0].rev, 'cba', 'the function ran in the plugin: ' + JSON.stringify(rows.slice(0, 3)));
    assert.equal(rows[0].greeting, 'hello', "the source got the default config key of the plugin's yaml");
    assert.deepEqual(
      rows.slice(0, 3).map((x) => x.n),
      [0, 1, 2],
    );
    const lines = await until(
      () => (existsSync(out) ? readFileSync(out, 'utf8').trim().split('\n') : []),
      (l) => l.length >= 2,
      'the sink file',
    );
    // the sink gets the encoded rows, an array per send as eKuiper sinks do without sendSingle
    assert.deepEqual(
      (JSON.parse(lines[0]) as J[]).map((x) => x.rev),
      ['cba'],
    );
    const status = (await s.req('GET', `/rules/${rule}/status`)).json() as J;
    assert.equal(status.status, 'running');
    // the rule runs on its worker: the source listens and the sink dials there, their starts cross to the main thread
    assert.equal(status.worker, s.app.workers?.place(rule), JSON.stringify(status));

    // the plugin process crashes: it is started again and the running source and sink resume
    const pid = Number(rows[rows.length - 1].pid);
    const sunk = lines.length;
    process.kill(pid, 'SIGKILL');
    const after = rows.length;
    await until(
      () => rows.slice(after).filter((x) => x.pid !== undefined && Number(x.pid) !== pid).length,
      (n) => n >= 2,
      'rows from the restarted plugin',
    );
    await until(
      () => readFileSync(out, 'utf8').trim().split('\n').length,
      (n) => n > sunk + 1,
      'the sink writing again',
    );
    assert.equal(((await s.req('GET', `/rules/${rule}/status`)).json() as J).status, 'running');

    close();
    assert.equal((await s.req('DELETE', `/rules/${rule}`)).status, 200);
    r = await s.req('DELETE', `/plugins/portables/${name}`);
    assert.equal(r.status, 200);
    assert.equal(r.text, `portable plugin ${name} is deleted`);
    assert.deepEqual((await s.req('GET', '/plugins/portables')).json(), []);
    assert.ok(!existsSync(join(s.homeDir, 'plugins', 'portable', name)));
    assert.ok(!existsSync(join(s.homeDir, 'data', 'sources', `${src}.yaml`)));
    r = await s.req('POST', '/rules', { id: uid('v'), sql: `SELECT ${fn}(ds) FROM ${stream}`, actions: [{ log: {} }] });
    assert.deepEqual(err(r, 400), { error: 2101, message: `function ${fn} not found` }, 'the function is gone');
  } finally {
    await s.dispose();
  }
});

test('archive and descriptor checks; duplicates and symbol clashes; missing plugins', async () => {
  const s = await startTestServer();
  try {
    const name = uid('bad');
    const post = (o: PluginZipOptions, body: J = {}) =>
      s.req('POST', '/plugins/portables', { name: o.name, file: zipUrl(o), ...body });
    const P = 'portable plugin create command error: ';
    assert.equal(
      err(await post({ name, functions: [uid('f')], omit: [`${name}.json`] }), 400).message,
      `${P}missing ${name}.json`,
    );
    assert.equal(err(await post({ name, functions: [uid('f')], omit: [name] }), 400).message, `${P}missing ${name}`);
    const src = uid('src');
    assert.equal(
      err(await post({ name, sources: [src], omit: [`sources/${src}.yaml`] }), 400).message,
      `${P}missing sources/${src}.yaml`,
    );
    assert.match(
      err(await post({ name, functions: [uid('f')], descriptor: { name: 'other' } }), 400).message,
      /^portable plugin create command error: invalid plugin, the name other/,
    );
    assert.match(
      err(await post({ name, descriptor: { language: 'cobol' }, functions: [uid('f')] }), 400).message,
      /invalid plugin, unsupported language cobol/,
    );
    assert.match(err(await post({ name }), 400).message, /invalid plugin, it declares no source, sink or function/);
    assert.equal(err(await post({ name, sinks: ['mqtt'] }), 400).message, `${P}sink mqtt already exists`);
    assert.equal(err(await post({ name, functions: ['abs'] }), 400).message, `${P}function name abs already exists`);
    assert.equal(
      err(await post({ name, functions: [uid('f')] }, { shellParas: ['x'] }), 400).message,
      `${P}shellParas are given but the plugin has no install.sh`,
    );
    assert.match(
      err(await post({ name, functions: [uid('f')], installSh: 'echo broken >&2; exit 3' }), 400).message,
      /fail to install plugin: install\.sh exited with 3: broken/,
    );
    assert.equal(
      err(await s.req('POST', '/plugins/portables', { name, file: 'https://h/x.tar' }), 400).message,
      `${P}invalid uri https://h/x.tar`,
    );
    assert.deepEqual((await s.req('GET', '/plugins/portables')).json(), [], 'failed installs leave nothing');
    assert.ok(!existsSync(join(s.homeDir, 'plugins', 'portable', name)));

    const f = uid('f');
    const marker = join(dir, `${uid('m')}.txt`);
    let r = await post({ name, functions: [f], installSh: `echo "$1" > ${marker}` }, { shellParas: ['arg1'] });
    assert.equal(r.status, 201, r.text);
    assert.equal(readFileSync(marker, 'utf8').trim(), 'arg1', 'install.sh ran with shellParas');
    assert.equal(err(await post({ name, functions: [uid('f')] }), 400).message, `${P}invalid name ${name}: duplicate`);
    assert.equal(
      err(await post({ name: uid('other'), functions: [f] }), 400).message,
      `${P}function name ${f} already exists`,
    );
    // PUT replaces (and creates when missing)
    const f2 = uid('f');
    r = await s.req('PUT', `/plugins/portables/${name}`, { name, file: zipUrl({ name, functions: [f2] }) });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, `portable plugin ${name} is updated`);
    assert.deepEqual(((await s.req('GET', `/plugins/portables/${name}`)).json() as J).functions, [f2]);

    // bundle items: the install record exports and imports again; an existing plugin is kept
    const records = s.app.portables.installRecords();
    assert.deepEqual(JSON.parse(records[name]), { name, file: (JSON.parse(records[name]) as J).file, shellParas: [] });
    const other = uid('imp');
    await s.app.portables.importRecord(
      other,
      JSON.stringify({ name: other, file: zipUrl({ name: other, functions: [uid('f')] }) }),
    );
    await s.app.portables.importRecord(other, JSON.stringify({ name: other, file: 'file:///elsewhere.zip' }));
    assert.deepEqual((await s.req('GET', '/plugins/portables')).json(), [name, other]);
    await assert.rejects(s.app.portables.importRecord('x', '{'), /invalid portable plugin install record x/);
    assert.equal(s.app.portables.describeFunction(f2).serviceName, name);
    assert.throws(() => s.app.portables.describeFunction('nosuch'), /describe function nosuch error: not found/);

    assert.deepEqual(err(await s.req('DELETE', '/plugins/portables/nosuch'), 404), {
      error: 1002,
      message: 'delete portable plugin nosuch error: portable plugin nosuch is not found',
    });
    assert.deepEqual(err(await s.req('GET', '/plugins/portables/nosuch'), 404), {
      error: 1002,
      message: 'describe portable plugin nosuch error: not found',
    });
  } finally {
    await s.dispose();
  }
});

test('installed plugins are registered again after a restart', async () => {
  const s = await startTestServer();
  const name = uid('keep');
  const fn = uid('rev');
  assert.equal(
    (await s.req('POST', '/plugins/portables', { name, file: zipUrl({ name, functions: [fn] }) })).status,
    201,
  );
  await s.stop();
  const again = await startTestServer({ home: s.homeDir });
  try {
    assert.deepEqual((await again.req('GET', '/plugins/portables')).json(), [name]);
    const stream = uid('ms');
    assert.equal(
      (
        await again.req('POST', '/streams', {
          sql: `CREATE STREAM ${stream} () WITH (TYPE="memory", DATASOURCE="${stream}/in", FORMAT="json")`,
        })
      ).status,
      201,
    );
    const rows: ValueObject[] = [];
    const close = again.app.connectors.memory.subscribe(`${stream}/out`, (m) => rows.push(m.row));
    const rule = uid('r');
    assert.equal(
      (
        await again.req('POST', '/rules', {
          id: rule,
          sql: `SELECT ${fn}(t) AS r FROM ${stream}`,
          actions: [{ memory: { topic: `${stream}/out` } }],
        })
      ).status,
      201,
    );
    await until(
      () => {
        if (rows.length === 0) again.app.connectors.memory.publish({ topic: `${stream}/in`, row: { t: 'stressed' } });
        return rows.length;
      },
      (n) => n > 0,
      'a function result',
    );
    assert.deepEqual(rows[0], { r: 'desserts' });
    // the plugin's error answer becomes an error record; the rule keeps running
    again.app.connectors.memory.publish({ topic: `${stream}/in`, row: { t: 42 } });
    again.app.connectors.memory.publish({ topic: `${stream}/in`, row: { t: 'live' } });
    // results of probes still in flight (a loaded machine) come first: the rule keeps the order of its input
    const later = () => rows.slice(rows.findIndex((r) => r.r !== 'desserts'));
    await until(
      () => (rows.some((r) => r.r !== 'desserts') ? later().length : 0),
      (n) => n >= 2,
      'two more results',
    );
    close();
    const rest = later();
    assert.ok(rows.slice(0, rows.length - rest.length).every((r) => r.r === 'desserts'));
    assert.equal(rest.length, 2);
    assert.match(String(rest[0].error), new RegExp(`call func ${fn} error: revert needs a string, got 42`));
    assert.deepEqual(rest[1], { r: 'evil' });
    assert.equal((await again.req('DELETE', `/rules/${rule}`)).status, 200);
  } finally {
    await again.dispose();
  }
});
