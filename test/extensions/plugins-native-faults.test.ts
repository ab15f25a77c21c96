/**
 * Native plugin code runs where its rule runs (docs/plugins.md §6): on a rule worker, a plugin function that
 * throws is an exception of its node, one that never returns is stopped by the rule's evaluation limit, and a source
 * that ends its thread (process.exit, an uncaught error) costs a worker replacement. In every case the server answers
 * and a healthy rule keeps producing.
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

const FAULTY = `
export const Faulty = {
  version: '0.0.1',
  functions: {
    boom: () => { throw new Error('boom from the plugin'); },
    spin: () => { for (;;) { /* never returns */ } },
  },
};
`;

/** A source that ends its thread: `exit` calls process.exit, `throw` throws from a timer (uncaught). */
const CRASHER = `
export const Crasher = () => ({
  mode: 'exit',
  configure(_ds, props) { this.mode = props.mode ?? 'exit'; },
  open(ctx) {
    this.timer = setTimeout(() => {
      if (this.mode === 'exit') process.exit(7);
      throw new Error('uncaught in the plugin');
    }, 300);
  },
  close() { clearTimeout(this.timer); },
});
`;

before(async () => {
  web = await serveArchives();
  out = mkdtempSync(join(tmpdir(), 'eddy-native-faults-'));
  s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const install = async (type: string, name: string, zip: Buffer) => {
    const r = await s.req('POST', `/plugins/${type}`, { name, file: web.put(`${name}.zip`, zip) });
    assert.equal(r.status, 201, r.text);
  };
  await install('sources', 'counter', sampleZip('sources/counter'));
  await install('sinks', 'collect', sampleZip('sinks/collect'));
  await install('functions', 'faulty', zipOf({ 'Faulty.mjs': FAULTY }));
  await install(
    'sources',
    'crasher',
    zipOf({ 'Crasher.mjs': CRASHER, 'crasher.yaml': 'default: {}\nthrows:\n  mode: throw\n' }),
  );
  for (const sql of [
    'CREATE STREAM cnt () WITH (TYPE="counter", CONF_KEY="fast")',
    'CREATE STREAM exits () WITH (TYPE="crasher")',
    'CREATE STREAM throws () WITH (TYPE="crasher", CONF_KEY="throws")',
  ]) {
    const r = await s.req('POST', '/streams', { sql });
    assert.equal(r.status, 201, r.text);
  }
});
after(async () => {
  await s.dispose();
  await web.close();
  rmSync(out, { recursive: true, force: true });
});

function count(file: string): number {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '').length
    : 0;
}

async function rule(id: string, sql: string, options: J = {}): Promise<void> {
  const r = await s.req('POST', '/rules', {
    id,
    sql,
    actions: [{ collect: { path: join(out, `${id}.jsonl`) } }],
    options,
  });
  assert.equal(r.status, 201, r.text);
}

async function status(id: string): Promise<J> {
  return (await s.req('GET', `/rules/${id}/status`)).json() as J;
}

/** The healthy rule produces rows now (the server and its workers are fine). */
async function healthyGrows(): Promise<void> {
  const file = join(out, 'healthy.jsonl');
  const n = count(file);
  await waitFor(() => count(file) > n + 2, 30_000, 'the healthy rule to produce more rows');
}

test('a throwing plugin function is an exception of its node; the rule keeps running', async () => {
  await rule('healthy', 'SELECT n FROM cnt');
  await rule('throwing', 'SELECT boom(n) AS b FROM cnt');
  await waitFor(
    async () => Number((await status('throwing')).op_2_project_0_exceptions_total ?? 0) >= 3,
    30_000,
    'exceptions counted',
  );
  const st = await status('throwing');
  assert.equal(st.status, 'running');
  assert.match(String(st.op_2_project_0_last_exception), /call func boom error: boom from the plugin/);
  assert.equal(typeof st.worker, 'number', 'the rule runs on a worker');
  await healthyGrows();
});

test('a plugin function that never returns is stopped by the rule evaluation limit', async () => {
  await rule('blocking', 'SELECT spin(n) AS b FROM cnt', { evalLimit: 1000 });
  await waitFor(async () => (await status('blocking')).status !== 'running', 60_000, 'the blocking rule to be stopped');
  const st = await status('blocking');
  assert.match(
    String(st.message ?? st.status),
    /evaluating one record in .* took more than 1000 ms \(the rule option evalLimit\)/,
  );
  await healthyGrows();
});

test('a plugin that ends its worker thread costs a worker replacement, never the server', async () => {
  const pool = s.app.workers!;
  const before = pool.replaced.reduce((a, b) => a + (b ?? 0), 0);
  await rule('exiting', 'SELECT * FROM exits');
  await rule('uncaught', 'SELECT * FROM throws');
  await waitFor(() => pool.replaced.reduce((a, b) => a + (b ?? 0), 0) >= before + 2, 60_000, 'workers replaced');
  // the server answers and its other rules run
  assert.equal((await s.req('GET', '/rules')).status, 200);
  await s.req('POST', '/rules/exiting/stop');
  await s.req('POST', '/rules/uncaught/stop');
  await healthyGrows();
});
