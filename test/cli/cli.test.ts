/**
 * The `eddy` command line, spawned as a user runs it (`bin/eddy.mjs`) against a real server: kuiper-compatible
 * commands, readable and `--json` output, exit codes, import with progress, the query shell, authentication.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { bin, buildOnce, eddy } from './helpers.js';

before(buildOnce);

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
    assert.match(r.stdout, /^clifile +clifile +Running +running$/m);
    assert.match(r.stdout, /^clihot +clihot +Running +running$/m);
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
    // kuiper's stream file: the statement without its CREATE STREAM; a whole statement and a name + fields too
    const sqlFile = join(s.homeDir, 'stream.sql');
    writeFileSync(sqlFile, 'clifile1 (a BIGINT) WITH (TYPE="memory", DATASOURCE="cli/f1", FORMAT="json");\n');
    r = await eddy(s, ['create', 'stream', '-f', sqlFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Stream clifile1 is created/);
    writeFileSync(
      sqlFile,
      'CREATE TABLE clifile2 (a BIGINT) WITH (TYPE="memory", DATASOURCE="cli/f2", KIND="lookup", KEY="a");',
    );
    r = await eddy(s, ['create', 'table', '-f', sqlFile]);
    assert.equal(r.code, 0, r.stderr);
    writeFileSync(sqlFile, '(a BIGINT) WITH (TYPE="memory", DATASOURCE="cli/f3")');
    r = await eddy(s, ['create', 'stream', 'clifile3', '-f', sqlFile]);
    assert.equal(r.code, 0, r.stderr);
    r = await eddy(s, ['--json', 'describe', 'stream', 'clifile3']);
    assert.equal((JSON.parse(r.stdout) as { Name: string }).Name, 'clifile3');
    // bare show: everything at once
    r = await eddy(s, ['show']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Stream\n-+\n(.*\n)*clifile1\n/m);
    assert.match(r.stdout, /^Table\n-+\nclifile2$/m);
    assert.match(r.stdout, /^clihot +clihot +Running$/m);
    assert.match(r.stdout, /also: eddy show services/);
    for (const n of ['clifile1', 'clifile3']) assert.equal((await eddy(s, ['drop', 'stream', n])).code, 0);
    assert.equal((await eddy(s, ['drop', 'table', 'clifile2'])).code, 0);
    // bad usage: 2; a verb without its noun names what it takes
    assert.equal((await eddy(s, ['frobnicate', 'rules'])).code, 2);
    r = await eddy(s, ['create']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /say what to create:\n {2}create stream\|table/);
    r = await eddy(s, ['help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^usage: eddy/);
    assert.match(r.stdout, /import ekuiper <eKuiper home>/);
    for (const v of ['--version', '-v', 'version']) {
      r = await eddy(s, [v]);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /^eddy version 1\.14\.7-eddy\.\d+\.\d+\.\d+\n$/);
    }
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
    assert.match(r.stderr, /importing .*bundle\.json \[#{30}\] 51\/51 imported\n/);
    assert.match(r.stdout, /^imported 51 items$/m);
    r = await eddy(s, ['--json', 'show', 'rules']);
    assert.equal((JSON.parse(r.stdout) as unknown[]).length, 50);
    const out = join(s.homeDir, 'export.json');
    r = await eddy(s, ['export', 'data', out]);
    assert.equal(r.code, 0, r.stderr);
    const exported = JSON.parse(readFileSync(out, 'utf8')) as { rules: Record<string, string> };
    assert.equal(Object.keys(exported.rules).length, 50);
    r = await eddy(s, ['getstatus', 'import']);
    assert.equal(r.code, 0);
    // items the server refuses: listed, the bar stops short of them, and the command ends with 1
    const partial = join(s.homeDir, 'partial.json');
    writeFileSync(
      partial,
      JSON.stringify({
        rules: {
          impok: JSON.stringify({ id: 'impok', sql: 'SELECT * FROM climp', actions: [{ nop: {} }] }),
          impbad: JSON.stringify({ id: 'impbad', sql: 'SELECT * FROM climp' }),
          impbad2: JSON.stringify({ id: 'impbad2', sql: 'SELECT * FROM nosuchstream', actions: [{ nop: {} }] }),
        },
      }),
    );
    r = await eddy(s, ['import', 'data', '-f', partial, '-p', 'true']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /\[#{10}\.{20}\] 1\/3 imported, 2 failed\n/);
    assert.match(r.stdout, /^imported 1 of 3 items; these failed:$/m);
    assert.match(r.stdout, /^rules +impbad +.+$/m);
    assert.match(r.stdout, /^rules +impbad2 +.+$/m);
    assert.match(r.stderr, /2 of 3 items could not be imported/);
    assert.equal((await s.req('GET', '/rules/impok')).status, 200);
    // a bundle whose statement does not parse: refused, nothing imported
    writeFileSync(file, '{"streams": {"x": "CREATE STREAM x (a BIGNT) WITH (TYPE=\\"memory\\")"}}');
    r = await eddy(s, ['import', 'data', '-f', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /\[\.{30}\] 0\/1 imported, 1 failed\n/);
    assert.match(r.stdout, /^streams +x +.+$/m);
    // a bundle that is no JSON: the server's message
    writeFileSync(file, '{"streams": ');
    r = await eddy(s, ['import', 'data', '-f', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /import error: /);
  } finally {
    await s.dispose();
  }
});

async function queries(s: TestServer): Promise<Array<{ id: string; readers: number; running: boolean }>> {
  return (await s.req('GET', '/eddy/queries')).json() as Array<{ id: string; readers: number; running: boolean }>;
}

async function pushTo(s: TestServer, path: string, body: unknown): Promise<void> {
  const port = ((await s.req('GET', '/eddy/server')).json() as { dataServer: { port: number } }).dataServer.port;
  await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body: JSON.stringify(body) });
}

async function httppushStream(s: TestServer, name: string): Promise<void> {
  const created = await s.req('POST', '/streams', {
    sql: `CREATE STREAM ${name} () WITH (TYPE="httppush", DATASOURCE="/${name}", FORMAT="json")`,
  });
  assert.equal(created.status, 201, created.text);
}

test('query: rows of an ad-hoc SELECT as they arrive, syntax errors with their position; the query is never a stored rule', async () => {
  const s = await startTestServer();
  try {
    const name = `cliq${process.pid}`;
    await httppushStream(s, name);
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
    await until('the query', async () => (/\(query q\w+ running/.test(stderr) ? true : undefined));
    await until('rows on the console', async () => {
      await pushTo(s, `/${name}`, { temperature: 21 });
      await pushTo(s, `/${name}`, { temperature: 5 });
      return /^t2\n42\n/m.test(stdout) ? true : undefined;
    });
    assert.ok(!stdout.includes('10\n'), 'the WHERE clause filters');
    // a query of its own kind: listed there, never among the rules nor in an export
    const running = await queries(s);
    assert.equal(running.length, 1);
    assert.equal(running[0].readers, 1);
    assert.equal(running[0].running, true);
    assert.deepEqual((await s.req('GET', '/rules')).json(), []);
    const bundle = (await s.req('GET', '/data/export')).json() as { rules: Record<string, string> };
    assert.deepEqual(bundle.rules, {});
    child.stdin.end();
    assert.equal(await exited, 0);
    await until('the query removed', async () => ((await queries(s)).length === 0 ? true : undefined));
  } finally {
    await s.dispose();
  }
});

test('query: a shell killed with kill -9 leaves no query behind; a query with no reader goes away; none survives a restart', async () => {
  const s = await startTestServer();
  try {
    const name = `cliqk${process.pid}`;
    await httppushStream(s, name);
    const child = spawn(process.execPath, [bin, '--port', new URL(s.url).port, 'query'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<unknown>((r) => child.on('close', r));
    child.stdin.write(`SELECT * FROM ${name}\n`);
    await until('the query', async () => (/\(query q\w+ running/.test(stderr) ? true : undefined));
    assert.equal((await queries(s)).length, 1);
    child.kill('SIGKILL');
    await exited;
    await until('the query removed', async () => ((await queries(s)).length === 0 ? true : undefined));

    // created over REST and never read: still planned, its errors answered at once
    const bad = await s.req('POST', '/eddy/queries', { sql: 'SELECT * FROM nosuchstream' });
    assert.equal(bad.status, 400, bad.text);
    const notSelect = await s.req('POST', '/eddy/queries', { sql: `DROP STREAM ${name}` });
    assert.equal(notSelect.status, 400);
    const made = await s.req('POST', '/eddy/queries', { sql: `SELECT * FROM ${name}` });
    assert.equal(made.status, 201, made.text);
    const { id, path } = made.json() as { id: string; path: string };
    assert.equal(path, `/eddy/query/${id}`);
    assert.deepEqual(
      (await queries(s)).map((q) => [q.id, q.running]),
      [[id, false]],
    );
    await s.stop();
    const again = await startTestServer({ home: s.homeDir });
    try {
      assert.deepEqual(await queries(again), []);
      assert.deepEqual((await again.req('GET', '/rules')).json(), []);
    } finally {
      await again.stop();
    }
  } finally {
    await s.dispose();
  }
});

/** the escape character that starts the terminal's control sequences */
const ESC = String.fromCharCode(27);

/** `eddy query` on a terminal: `script` gives it a pseudo-terminal, so keys arrive as a person types them. */
test('query on a terminal: rows print above the prompt, Ctrl-C stops the query, clears the line, and twice on an empty line quits', async () => {
  const s = await startTestServer();
  try {
    const name = `cliqt${process.pid}`;
    await httppushStream(s, name);
    const cmd = `${process.execPath} ${bin} --port ${new URL(s.url).port} query`;
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, HOME: s.homeDir, TERM: 'xterm' },
    });
    let screen = '';
    child.stdout.on('data', (d: Buffer) => (screen += d.toString()));
    const exited = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    const typed = (keys: string) => child.stdin.write(keys);
    await until('the prompt', () => (screen.includes('eddy> ') ? true : undefined));
    typed(`SELECT temperature FROM ${name}\r`);
    await until('the query', () => (/\(query q\w+ running/.test(screen) ? true : undefined));
    typed('SELECT half');
    await until('the typing echoed', () => (screen.endsWith('SELECT half') ? true : undefined));
    await until('a row above the prompt', async () => {
      await pushTo(s, `/${name}`, { temperature: 77 });
      // the row, then the prompt drawn again with the half-typed line
      const plain = screen.replaceAll(`${ESC}[`, '<CSI>').replace(/<CSI>[0-9;]*[A-Za-z]/g, '');
      return /77\r?\neddy> SELECT half/.test(plain) ? true : undefined;
    });
    typed('\x03');
    await until('the query stopped', async () => (screen.includes('(stopped)') ? true : undefined));
    await until('no query left', async () => ((await queries(s)).length === 0 ? true : undefined));
    const mark = screen.length;
    typed('\x03');
    await until('the line cleared', () => (screen.slice(mark).includes('^C') ? true : undefined));
    typed('\x03');
    await until('the hint', () => (screen.includes('press Ctrl-C again or Ctrl-D to quit') ? true : undefined));
    assert.equal(child.exitCode, null, 'one Ctrl-C on an empty line does not quit');
    typed('\x03');
    assert.equal(await exited, 0);
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
