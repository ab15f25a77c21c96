/**
 * The `eddy` command line, spawned as a user runs it (`bin/eddy.mjs`) against a real server: kuiper-compatible
 * commands, readable and `--json` output, exit codes, import with progress, the query shell, authentication.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';

const root = new URL('../..', import.meta.url).pathname;
const bin = join(root, 'bin/eddy.mjs');

before(() => {
  // compile once here so that concurrent spawns do not race to build
  const r = spawnSync(process.execPath, [join(root, 'scripts/build-server.mjs')], { stdio: 'inherit' });
  assert.equal(r.status, 0);
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function eddy(s: { url: string }, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const port = new URL(s.url).port;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, '--port', port, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('streams and rules: kuiper commands, tables by default, JSON on request, exit codes', async () => {
  const s = await startTestServer();
  try {
    let r = await eddy(s, [
      'create',
      'stream',
      'clidemo',
      '(temperature FLOAT, humidity BIGINT) WITH (TYPE="memory", DATASOURCE="cli/demo", FORMAT="json")',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Stream clidemo is created/);
    r = await eddy(s, ['show', 'streams']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Stream\n-+\nclidemo$/m);
    r = await eddy(s, ['--json', 'show', 'streams']);
    assert.deepEqual(JSON.parse(r.stdout), ['clidemo']);
    r = await eddy(s, ['describe', 'stream', 'clidemo']);
    assert.match(r.stdout, /temperature +float/);
    assert.match(r.stdout, /humidity +bigint/);
    assert.match(r.stdout, /DATASOURCE +cli\/demo/);

    r = await eddy(s, [
      'create',
      'rule',
      'clihot',
      '{"sql":"SELECT * FROM clidemo WHERE temperature > 50","actions":[{"nop":{}}]}',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Rule clihot was created/);
    const file = join(s.homeDir, 'rule.json');
    writeFileSync(file, JSON.stringify({ sql: 'SELECT humidity FROM clidemo', actions: [{ nop: {} }] }));
    r = await eddy(s, ['create', 'rule', 'clifile', '-f', file]);
    assert.equal(r.code, 0, r.stderr);
    r = await eddy(s, ['show', 'rules']);
    assert.match(r.stdout, /^clifile +clifile +Running$/m);
    assert.match(r.stdout, /^clihot +clihot +Running$/m);
    r = await eddy(s, ['getstatus', 'rule', 'clihot']);
    assert.match(r.stdout, /^status +running$/m);
    assert.match(r.stdout, /^source_clidemo_0_records_in_total +0$/m);
    r = await eddy(s, ['gettopo', 'rule', 'clihot']);
    assert.match(r.stdout, /sources: source_clidemo/);
    assert.match(r.stdout, /source_clidemo -> /);
    r = await eddy(s, ['stop', 'rule', 'clihot']);
    assert.equal(r.code, 0);
    r = await eddy(s, ['--json', 'show', 'rules']);
    assert.equal(
      (JSON.parse(r.stdout) as Array<{ id: string; status: string }>).find((x) => x.id === 'clihot')?.status,
      'Stopped: canceled manually.',
    );
    assert.equal((await eddy(s, ['start', 'rule', 'clihot'])).code, 0);
    assert.equal((await eddy(s, ['restart', 'rule', 'clihot'])).code, 0);

    // the server refuses: 1, with its message
    r = await eddy(s, ['describe', 'rule', 'nosuchrule']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /nosuchrule/);
    r = await eddy(s, ['create', 'stream', 'clibad', '(a bigint) WITH (FORMAT="nosuchformat")']);
    assert.equal(r.code, 1, 'a statement the server refuses');
    // bad usage: 2
    assert.equal((await eddy(s, ['frobnicate', 'rules'])).code, 2);
    assert.equal((await eddy(s, ['create', 'rule', 'x', 'not json'])).code, 2);
    assert.equal((await eddy(s, ['--bogus'])).code, 2);

    assert.equal((await eddy(s, ['drop', 'rule', 'clihot'])).code, 0);
    assert.equal((await eddy(s, ['drop', 'rule', 'clifile'])).code, 0);
    assert.equal((await eddy(s, ['drop', 'stream', 'clidemo'])).code, 0);
    r = await eddy(s, ['--json', 'show', 'streams']);
    assert.deepEqual(JSON.parse(r.stdout), []);
  } finally {
    await s.dispose();
  }
  // nothing listening: 3
  const r = await eddy(s, ['show', 'rules']);
  assert.equal(r.code, 3);
  assert.match(r.stderr, /cannot reach Eddy/);
});

test('import data with a progress bar, export data, import status', async () => {
  const s = await startTestServer();
  try {
    const rules: Record<string, string> = {};
    for (let i = 0; i < 50; i++)
      rules[`imp${i}`] = JSON.stringify({
        id: `imp${i}`,
        sql: `SELECT * FROM climp WHERE a > ${i}`,
        actions: [{ nop: {} }],
      });
    const bundle = {
      streams: { climp: 'CREATE STREAM climp (a BIGINT) WITH (TYPE="memory", DATASOURCE="cli/imp", FORMAT="json")' },
      rules,
    };
    const file = join(s.homeDir, 'bundle.json');
    writeFileSync(file, JSON.stringify(bundle));
    let r = await eddy(s, ['import', 'data', '-f', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /importing .*bundle\.json \[#+\] 1\/1 done/);
    assert.match(r.stdout, /imported/);
    r = await eddy(s, ['--json', 'show', 'rules']);
    assert.equal((JSON.parse(r.stdout) as unknown[]).length, 50);
    const out = join(s.homeDir, 'export.json');
    r = await eddy(s, ['export', 'data', out]);
    assert.equal(r.code, 0, r.stderr);
    const exported = JSON.parse(readFileSync(out, 'utf8')) as { rules: Record<string, string> };
    assert.equal(Object.keys(exported.rules).length, 50);
    r = await eddy(s, ['getstatus', 'import']);
    assert.equal(r.code, 0);
    // a bundle that does not parse: refused, nothing imported
    writeFileSync(file, '{"streams": {"x": "CREATE STREAM x (a BIGNT) WITH (TYPE=\\"memory\\")"}}');
    r = await eddy(s, ['import', 'data', '-f', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /import error/);
  } finally {
    await s.dispose();
  }
});

test('query: rows of an ad-hoc SELECT as they arrive, syntax errors with their position, the rule removed at the end', async () => {
  const s = await startTestServer();
  try {
    const name = `cliq${process.pid}`;
    const created = await s.req('POST', '/streams', {
      sql: `CREATE STREAM ${name} () WITH (TYPE="httppush", DATASOURCE="/${name}", FORMAT="json")`,
    });
    assert.equal(created.status, 201, created.text);
    const child = spawn(process.execPath, [bin, '--port', new URL(s.url).port, 'query'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    child.stdin.write(`SELECT temperature * 2 AS t2 FRM ${name}\n`);
    await until('the syntax error', () => (/syntax error at line 1, column 30/.test(stderr) ? true : undefined));
    assert.match(stderr, /^ {31}\^$/m);
    child.stdin.write(`SELECT temperature * 2 AS t2 FROM ${name} WHERE temperature > 10\n`);
    await until('the query rule', async () => (stderr.includes('(running eddy_query_') ? true : undefined));
    const port = ((await s.req('GET', '/eddy/server')).json() as { dataServer: { port: number } }).dataServer.port;
    await until('rows on the console', async () => {
      await fetch(`http://127.0.0.1:${port}/${name}`, { method: 'POST', body: '{"temperature": 21}' });
      await fetch(`http://127.0.0.1:${port}/${name}`, { method: 'POST', body: '{"temperature": 5}' });
      return /^t2\n42\n/m.test(stdout) ? true : undefined;
    });
    assert.ok(!stdout.includes('10\n'), 'the WHERE clause filters');
    child.stdin.end();
    assert.equal(await exited, 0);
    const left = (await s.req('GET', '/rules')).json() as Array<{ id: string }>;
    assert.deepEqual(
      left.filter((r) => r.id.startsWith('eddy_query_')),
      [],
      'the temporary rule is removed',
    );
  } finally {
    await s.dispose();
  }
});

test('with authentication on, the token comes from EDDY_TOKEN', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-cli-auth-'));
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  mkdirSync(join(home, 'etc', 'mgmt'), { recursive: true });
  writeFileSync(join(home, 'etc', 'mgmt', 'cli.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const s: TestServer = await startTestServer({ home, env: { KUIPER__BASIC__AUTHENTICATION: 'true' } });
  try {
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const head = `${enc({ alg: 'RS256', typ: 'JWT' })}.${enc({ iss: 'cli.pub', aud: ['eKuiper'], exp: Math.floor(Date.now() / 1000) + 600 })}`;
    const token = `${head}.${sign('RSA-SHA256', Buffer.from(head), privateKey).toString('base64url')}`;
    const denied = await eddy(s, ['show', 'streams']);
    assert.equal(denied.code, 4);
    assert.match(denied.stderr, /unauthorized: missing_token/);
    const ok = await eddy(s, ['--json', 'show', 'streams'], { EDDY_TOKEN: token });
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout), []);
  } finally {
    await s.dispose();
    rmSync(home, { recursive: true, force: true });
  }
});

test('eddy start runs the server; eddy status talks to it', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-cli-start-'));
  const child = spawn(process.execPath, [bin, 'start'], {
    env: {
      ...process.env,
      EDDY_HOME: home,
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  try {
    const url = await until('the banner', () => /REST API on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1]);
    const r = await eddy({ url }, ['status']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^version: 1\.14\.7-eddy/m);
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    rmSync(home, { recursive: true, force: true });
  }
});
