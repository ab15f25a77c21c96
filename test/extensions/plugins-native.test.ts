/**
 * Native plugins end to end (docs/plugins.md): the samples of examples/plugins/ zipped here, served over HTTP and as
 * `file://` under the data folder, installed through the REST API, and run by rules on worker threads through
 * Mosquitto: the counter source, both mathx functions, the csvx format (a custom schema) and the collect sink, every
 * row checked. Also the archive checks (names, manifest version, install.sh), the lifecycle routes, the metadata a
 * plugin connector gets like a built-in, and the bundle round trip.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/process.js';
import { fileUrl, sampleZip, serveArchives, type ArchiveServer } from './native-fixture.js';

type J = Record<string, unknown>;
let s: TestServer;
let web: ArchiveServer;
let out: string;
const tag = `n${process.pid}${Date.now().toString(36)}`;

before(async () => {
  web = await serveArchives();
  out = mkdtempSync(join(tmpdir(), 'eddy-native-out-'));
  s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
});
after(async () => {
  await s.dispose();
  await web.close();
  rmSync(out, { recursive: true, force: true });
});

function ok(r: { status: number; text: string }, status: number): void {
  assert.equal(r.status, status, r.text);
}

function lines(file: string): J[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as J);
}

const expected = (n: number): J => ({ n, c: n * n * n, k: Math.min(Math.max(n, 2), 4) });

test('the samples install over HTTP and file://, and rules on workers run them through Mosquitto', async () => {
  const dataDir = join(s.homeDir, 'data');
  ok(
    await s.req('POST', '/plugins/sources', {
      name: 'counter',
      file: web.put('counter.zip', sampleZip('sources/counter')),
    }),
    201,
  );
  // file:// under the data folder
  const collectUrl = fileUrl(join(dataDir, 'archives'), 'collect.zip', sampleZip('sinks/collect'));
  ok(await s.req('POST', '/plugins/sinks', { name: 'collect', file: collectUrl }), 201);
  ok(
    await s.req('POST', '/plugins/functions', {
      name: 'mathx',
      file: web.put('mathx.zip', sampleZip('functions/mathx')),
    }),
    201,
  );
  ok(
    await s.req('POST', '/schemas/custom', { name: 'csvx', soFile: web.put('csvx.zip', sampleZip('formats/csvx')) }),
    201,
  );

  // the lifecycle routes
  assert.deepEqual((await s.req('GET', '/plugins/sources')).json(), ['counter']);
  assert.deepEqual((await s.req('GET', '/plugins/sinks')).json(), ['collect']);
  assert.deepEqual((await s.req('GET', '/plugins/sources/counter')).json(), { name: 'counter', version: '1.0.0' });
  assert.deepEqual(((await s.req('GET', '/plugins/udfs')).json() as string[]).sort(), ['clamp', 'cube']);
  assert.deepEqual((await s.req('GET', '/plugins/udfs/cube')).json(), { name: 'cube', plugin: 'mathx' });
  assert.deepEqual((await s.req('GET', '/schemas/custom')).json(), ['csvx']);
  // a plugin connector is listed, described and configured like a built-in
  const sources = (await s.req('GET', '/metadata/sources')).json() as J[];
  assert.ok(sources.some((x) => x.name === 'counter'));
  const meta = (await s.req('GET', '/metadata/sources/counter')).json() as { properties: { default: J[] } };
  assert.equal(meta.properties.default[0].name, 'interval');
  assert.equal((await s.req('GET', '/metadata/sinks/collect')).status, 200);
  const keys = (await s.req('GET', '/metadata/sources/yaml/counter')).json() as J;
  assert.deepEqual(keys, { default: { interval: 1000 }, fast: { interval: 50 } });
  assert.ok(existsSync(join(s.homeDir, 'etc', 'sources', 'counter.yaml')), 'the yaml is placed as eKuiper places it');
  // the connection check a plugin declares, as a built-in's
  const noPath = await s.req('POST', '/metadata/sinks/connection/collect', {});
  assert.equal(noPath.status, 400);
  assert.match((noPath.json() as J).message as string, /property path is required/);
  ok(await s.req('POST', '/metadata/sinks/connection/collect', { path: join(out, 'probe.jsonl') }), 200);
  assert.ok(existsSync(join(out, 'probe.jsonl')));
  assert.match(
    ((await s.req('POST', '/metadata/sources/connection/counter', {})).json() as J).message as string,
    /source counter doesn't support ping connection/,
  );

  const fileA = join(out, 'a.jsonl');
  const fileB = join(out, 'b.jsonl');
  const topic = `eddy/${tag}/csv`;
  ok(
    await s.req('POST', '/streams', {
      sql: `CREATE STREAM csvin () WITH (TYPE="mqtt", DATASOURCE="${topic}", FORMAT="custom", SCHEMAID="csvx")`,
    }),
    201,
  );
  ok(
    await s.req('POST', '/rules', {
      id: 'fromcsv',
      sql: 'SELECT * FROM csvin',
      actions: [{ collect: { path: fileB } }],
    }),
    201,
  );
  ok(
    await s.req('POST', '/streams', {
      sql: 'CREATE STREAM cnt () WITH (TYPE="counter", CONF_KEY="fast", DATASOURCE="any")',
    }),
    201,
  );
  // let the subscriber settle before the first row is published
  await waitFor(
    async () => ((await s.req('GET', '/rules/fromcsv/status')).json() as J).status === 'running',
    20_000,
    'fromcsv running',
  );
  ok(
    await s.req('POST', '/rules', {
      id: 'counted',
      sql: 'SELECT n, cube(n) AS c, clamp(n, 2, 4) AS k FROM cnt',
      actions: [
        { collect: { path: fileA } },
        { mqtt: { server: 'tcp://127.0.0.1:1883', topic, format: 'custom', schemaId: 'csvx' } },
      ],
    }),
    201,
  );
  await waitFor(() => lines(fileA).length >= 8 && lines(fileB).length >= 5, 30_000, 'rows through both rules');

  // every row of the direct sink, from the first
  const a = lines(fileA);
  a.forEach((row, i) => assert.deepEqual(row, expected(i + 1), `row ${i} of the collect sink`));
  // every row that went through Mosquitto as csvx: consecutive, each as computed (the first may precede the
  // subscription)
  const b = lines(fileB);
  const first = b[0].n as number;
  b.forEach((row, i) => assert.deepEqual(row, expected(first + i), `row ${i} through mqtt`));

  // the rules run on workers: plugin code runs where the rule runs
  const status = (await s.req('GET', '/rules/counted/status')).json() as J;
  assert.equal(typeof status.worker, 'number', JSON.stringify(status));

  ok(await s.req('DELETE', '/rules/counted'), 200);
  ok(await s.req('DELETE', '/rules/fromcsv'), 200);
});

test('archives are checked as eKuiper checks them: names, files, manifest version, duplicates, install.sh', async () => {
  const post = (type: string, body: J) => s.req('POST', `/plugins/${type}`, body);
  const msg = async (type: string, body: J) => {
    const r = await post(type, body);
    assert.equal(r.status, 400, r.text);
    return (r.json() as J).message as string;
  };
  assert.equal(
    await msg('sources', { name: '', file: 'http://h/x.zip' }),
    'sources plugins create command error: invalid name : should not be empty',
  );
  assert.equal(
    await msg('sources', { name: 'ticks', file: 'http://h/x.txt' }),
    'sources plugins create command error: invalid uri http://h/x.txt',
  );
  // the module must be the plugin's name, first letter upper-cased
  const misnamed = web.put(
    'ticks.zip',
    sampleZip('sources/counter', { 'counter.yaml': null, 'ticks.yaml': 'default: {}' }),
  );
  assert.match(
    await msg('sources', { name: 'ticks', file: misnamed }),
    /invalid zip file: the module file or conf file is missing \(expected Ticks\.mjs, ticks\.yaml\)/,
  );
  // a source needs its yaml
  const noYaml = web.put('noyaml.zip', sampleZip('sources/counter', { 'counter.yaml': null }));
  assert.match(await msg('sources', { name: 'counter2', file: noYaml }), /module file or conf file is missing/);
  // an unknown contract major is refused
  const v2 = web.put(
    'mathy.zip',
    sampleZip('functions/mathx', {
      'Mathx.mjs': null,
      'Mathy.mjs': readFileSync(
        join(new URL('../../examples/plugins/functions/mathx/', import.meta.url).pathname, 'Mathx.mjs'),
        'utf8',
      ).replace('export const Mathx', 'export const Mathy'),
      'mathx.json': null,
      'mathy.json': '{"apiVersion": "2.1"}',
    }),
  );
  assert.match(
    await msg('functions', { name: 'mathy', file: v2 }),
    /written for plugin API 2\.1, which this Eddy does not load \(supported: 1\.x\)/,
  );
  // a download failure says so
  assert.match(
    await msg('sinks', { name: 'gone', file: web.put('x.zip', Buffer.from('')).replace('x.zip', 'gone.zip') }),
    /fail to download file .*gone\.zip: cannot download the file with status: 404/,
  );
  // install.sh: run with shellParas, its failure is the install's with its text, and nothing is left
  const collect2 = web.put(
    'collect2.zip',
    sampleZip('sinks/collect', {
      'Collect.mjs': null,
      'Collect2.mjs': readFileSync(
        join(new URL('../../examples/plugins/sinks/collect/', import.meta.url).pathname, 'Collect.mjs'),
        'utf8',
      ).replace('export const Collect', 'export const Collect2'),
      'collect.json': null,
      'install.sh': 'echo "needs libfoo $1"; exit 3',
    }),
  );
  assert.match(
    await msg('sinks', { name: 'collect2', file: collect2, shellParas: ['1.2'] }),
    /install\.sh exited with 3: needs libfoo 1\.2/,
  );
  const left = join(s.homeDir, 'plugins', 'native', 'sinks', 'collect2');
  assert.ok(!existsSync(left) || readdirSync(left).length === 0, 'nothing left of a failed install');
  assert.equal((await s.req('GET', '/plugins/sinks/collect2')).status, 404);
  // functions are unique across plugins
  const other = web.put(
    'other.zip',
    sampleZip('functions/mathx', {
      'Mathx.mjs': null,
      'Other.mjs': 'export const Other = { functions: { cube: (a) => a[0] } };',
      'mathx.json': null,
    }),
  );
  assert.match(
    await msg('functions', { name: 'other', file: other }),
    /function name cube already exists in plugin mathx/,
  );
  // a duplicate plugin
  assert.match(await msg('functions', { name: 'mathx', file: other }), /invalid name mathx: duplicate/);
});
