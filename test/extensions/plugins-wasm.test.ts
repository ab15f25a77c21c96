/**
 * WebAssembly function plugins (`/plugins/wasm`, docs/rest-api.md §10.6): eKuiper 1.14's archive (`<name>.wasm` and
 * `<name>.json` naming the functions), installed over REST, called from rules on worker threads (i32, i64 and f64
 * functions, every row checked), a call that never returns cut off at the per-call time limit while the rule goes on,
 * and the archive checks.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/process.js';
import { sampleZip, serveArchives, zipOf, type ArchiveServer } from './native-fixture.js';

type J = Record<string, unknown>;
let s: TestServer;
let web: ArchiveServer;
let out: string;
const wasm = readFileSync(new URL('./fixtures/mathw.wasm', import.meta.url));
const manifest = { version: 'v1.0.0', functions: ['fib', 'add64', 'half', 'spin'], timeout: 500 };

before(async () => {
  web = await serveArchives();
  out = mkdtempSync(join(tmpdir(), 'eddy-wasm-'));
  s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  for (const [type, name, sample] of [
    ['sources', 'counter', 'sources/counter'],
    ['sinks', 'collect', 'sinks/collect'],
  ]) {
    const r = await s.req('POST', `/plugins/${type}`, { name, file: web.put(`${name}.zip`, sampleZip(sample)) });
    assert.equal(r.status, 201, r.text);
  }
  const r = await s.req('POST', '/streams', { sql: 'CREATE STREAM cnt () WITH (TYPE="counter", CONF_KEY="fast")' });
  assert.equal(r.status, 201, r.text);
});
after(async () => {
  await s.dispose();
  await web.close();
  rmSync(out, { recursive: true, force: true });
});

function rows(file: string): J[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as J);
}

const fib = (n: number): number => {
  let [a, b] = [0, 1];
  for (let i = 0; i < n; i++) [a, b] = [b, a + b];
  return a;
};

test('a wasm plugin installs and its functions run in rules on workers, every row checked', async () => {
  const zip = zipOf({ 'mathw.wasm': wasm, 'mathw.json': JSON.stringify(manifest) });
  const r = await s.req('POST', '/plugins/wasm', { name: 'mathw', file: web.put('mathw.zip', zip) });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.text, 'wasm plugin mathw is created');
  assert.deepEqual((await s.req('GET', '/plugins/wasm')).json(), ['mathw']);
  assert.deepEqual((await s.req('GET', '/plugins/wasm/mathw')).json(), {
    name: 'mathw',
    version: 'v1.0.0',
    functions: manifest.functions,
  });
  assert.deepEqual((await s.req('GET', '/plugins/udfs/fib')).json(), { name: 'fib', plugin: 'mathw' });

  const file = join(out, 'wasm.jsonl');
  const rule = await s.req('POST', '/rules', {
    id: 'wasmrule',
    sql: 'SELECT n, fib(n) AS f, add64(n, 10) AS s, half(n) AS h FROM cnt',
    actions: [{ collect: { path: file } }],
  });
  assert.equal(rule.status, 201, rule.text);
  await waitFor(() => rows(file).length >= 6, 30_000, 'rows computed by the wasm functions');
  rows(file).forEach((row, i) => assert.deepEqual(row, { n: i + 1, f: fib(i + 1), s: i + 11, h: (i + 1) / 2 }));
  const st = (await s.req('GET', '/rules/wasmrule/status')).json() as J;
  assert.equal(typeof st.worker, 'number', 'the rule runs on a worker');
});

test('a wasm call that never returns is cut off at the time limit; the rule runs on', async () => {
  const file = join(out, 'spin.jsonl');
  const r = await s.req('POST', '/rules', {
    id: 'spinning',
    sql: 'SELECT n, spin(n) AS x FROM cnt',
    actions: [{ collect: { path: file } }],
  });
  assert.equal(r.status, 201, r.text);
  let st: J = {};
  await waitFor(
    async () => {
      st = (await s.req('GET', '/rules/spinning/status')).json() as J;
      return Object.entries(st).some(([k, v]) => k.endsWith('_exceptions_total') && Number(v) >= 2);
    },
    60_000,
    'timed-out calls counted',
  );
  assert.equal(st.status, 'running');
  const last = Object.entries(st).find(([k]) => k.endsWith('_last_exception') && String(st[k]) !== '');
  assert.match(String(last?.[1]), /did not return within 500 ms/);
  // the other wasm rule keeps producing
  const before = rows(join(out, 'wasm.jsonl')).length;
  await waitFor(() => rows(join(out, 'wasm.jsonl')).length > before + 2, 30_000, 'the first rule still running');
});

test('wasm archives are checked: both files, the function list, exported names, self-contained modules', async () => {
  const post = async (name: string, files: Record<string, string | Buffer>) => {
    const r = await s.req('POST', '/plugins/wasm', { name, file: web.put(`${name}.zip`, zipOf(files)) });
    assert.equal(r.status, 400, r.text);
    return (r.json() as J).message as string;
  };
  assert.match(await post('w1', { 'w1.wasm': wasm }), /expect w1\.wasm and w1\.json/);
  assert.match(await post('w2', { 'w2.wasm': wasm, 'w2.json': '{"functions": []}' }), /functions must list/);
  assert.match(
    await post('w3', { 'w3.wasm': wasm, 'w3.json': '{"functions": ["nope"]}' }),
    /the WebAssembly module exports no function nope/,
  );
  assert.match(
    await post('w4', { 'w4.wasm': Buffer.from('not wasm'), 'w4.json': '{"functions": ["f"]}' }),
    /invalid WebAssembly module/,
  );
  assert.match(
    await post('w5', { 'w5.wasm': wasm, 'w5.json': '{"functions": ["fib"]}' }),
    /function name fib already exists in plugin mathw/,
  );
});
