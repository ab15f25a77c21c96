/**
 * Transport conventions of the whole REST API (docs/rest-api.md §1) and `PATCH /configs` (docs/rest-api.md §16.5), on a real server.
 * Raw paths go through node:http because fetch would normalise `.` segments before sending.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { defaultZone, setDefaultZone } from '../../src/values/datetime.js';
import { cleanPath } from '../../src/api/server.js';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.dispose();
});

interface RawRes {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function raw(
  method: string,
  path: string,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<RawRes> {
  const url = new URL(s.url);
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: {
          ...(opts.body !== undefined ? { 'content-length': Buffer.byteLength(opts.body) } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    r.on('error', reject);
    r.end(opts.body);
  });
}

test('unclean paths are redirected (301) to their clean form, query kept', async () => {
  for (const [path, location] of [
    ['//rules', '/rules'],
    ['/rules//x', '/rules/x'],
    ['/rules/./x', '/rules/x'],
    ['/rules/x/../y', '/rules/y'],
    ['/streams/%2e/s1', '/streams/s1'],
    ['//tables?kind=lookup', '/tables?kind=lookup'],
    ['/rules/a//', '/rules/a/'],
  ]) {
    const r = await raw('GET', path);
    assert.equal(r.status, 301, path);
    assert.equal(r.headers.location, location, path);
  }
  // the redirect comes before routing: any method, any path
  const post = await raw('POST', '/rules/../streams', { body: '{"sql":"SHOW STREAMS"}' });
  assert.equal(post.status, 301);
  assert.equal(post.headers.location, '/streams');
  // a trailing slash alone is clean: no redirect, no route
  const slash = await raw('GET', '/rules/');
  assert.equal(slash.status, 404);
  assert.equal(slash.text, '404 page not found\n');
});

test('an encoded slash separates path segments, as in the decoded path eKuiper routes on', async () => {
  for (const path of ['/streams/a%2Fb', '/rules/a%2fb/status', '/tables/x%2F']) {
    const r = await raw('GET', path);
    assert.equal(r.status, 404, path);
    assert.equal(r.text, '404 page not found\n', path);
  }
  const moved = await raw('GET', '/rules/a%2F..%2Fb');
  assert.equal(moved.status, 301);
  assert.equal(moved.headers.location, '/rules/b');
  // other encoded characters stay inside their segment
  const s1 = await raw('GET', '/streams/no%20such');
  assert.equal(s1.status, 404);
  assert.equal(JSON.parse(s1.text).message, 'describe stream error: Describe stream fails, no such is not found.');
});

test('cleanPath follows Go path.Clean and keeps a trailing slash', () => {
  assert.equal(cleanPath('/rules'), '/rules');
  assert.equal(cleanPath('/'), '/');
  assert.equal(cleanPath('/rules/'), '/rules/');
  assert.equal(cleanPath('/a/b/..'), '/a');
  assert.equal(cleanPath('/a/../..'), '/');
  assert.equal(cleanPath('/..'), '/');
  assert.equal(cleanPath('/a/./'), '/a/');
  assert.equal(cleanPath('///'), '/');
});

test('405 with an empty body for a known path with another method; 404 text for unknown paths', async () => {
  const r = await raw('PATCH', '/streams');
  assert.equal(r.status, 405);
  assert.equal(r.text, '');
  const g = await raw('GET', '/configs');
  assert.equal(g.status, 405);
  const h = await raw('HEAD', '/rules');
  assert.equal(h.status, 405);
  const n = await raw('GET', '/nosuchthing');
  assert.equal(n.status, 404);
  assert.equal(n.text, '404 page not found\n');
  assert.match(String(n.headers['content-type']), /^text\/plain; charset=utf-8/);
  assert.equal(n.headers['x-content-type-options'], 'nosniff');
});

test('JSON bodies are read whatever the content type, fields case-insensitively', async () => {
  const r = await raw('POST', '/streams', {
    body: JSON.stringify({ SQL: 'CREATE STREAM tr_ct (a BIGINT) WITH (DATASOURCE="t/ct")' }),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.text, 'Stream tr_ct is created.');
  const x = await raw('POST', '/rules', {
    body: JSON.stringify({ id: 'tr_rule', sql: 'SELECT * FROM tr_ct', actions: [{ nop: {} }] }),
    headers: { 'content-type': 'text/xml' },
  });
  assert.equal(x.status, 201, x.text);
  assert.equal((await s.req('DELETE', '/rules/tr_rule')).status, 200);
  assert.equal((await s.req('DELETE', '/streams/tr_ct')).status, 200);
});

test('CORS: Origin gets Allow-Origin (also on errors); a pre-flight never reaches the router', async () => {
  const r = await raw('GET', '/rules/nosuch', { headers: { origin: 'http://ui' } });
  assert.equal(r.status, 404);
  assert.equal(r.headers['access-control-allow-origin'], '*');
  const pre = await raw('OPTIONS', '//rules', {
    headers: {
      origin: 'http://ui',
      'access-control-request-method': 'PATCH',
      'access-control-request-headers': 'Content-Type',
    },
  });
  assert.equal(pre.status, 200);
  assert.equal(pre.headers['access-control-allow-methods'], 'PATCH');
  assert.equal(pre.headers['access-control-allow-headers'], 'Content-Type');
  const bad = await raw('OPTIONS', '/rules', {
    headers: { origin: 'http://ui', 'access-control-request-method': 'TRACE' },
  });
  assert.equal(bad.status, 405);
  const noMethod = await raw('OPTIONS', '/rules', { headers: { origin: 'http://ui' } });
  assert.equal(noMethod.status, 400);
  const header = await raw('OPTIONS', '/rules', {
    headers: {
      origin: 'http://ui',
      'access-control-request-method': 'GET',
      'access-control-request-headers': 'X-Custom',
    },
  });
  assert.equal(header.status, 403);
});

test('PATCH /configs changes the time zone (204) and rejects an unknown zone or bad JSON (400)', async () => {
  const before = defaultZone();
  try {
    let r = await s.req('PATCH', '/configs', { timezone: 'Asia/Shanghai' });
    assert.equal(r.status, 204);
    assert.equal(r.text, '');
    assert.equal(defaultZone(), 'Asia/Shanghai');
    assert.equal(s.app.config.basic.timezone, 'Asia/Shanghai');

    // eKuiper's own test: an empty zone is accepted (UTC), an empty body is not
    r = await s.req('PATCH', '/configs', { debug: true, timezone: '' });
    assert.equal(r.status, 204);
    assert.equal(defaultZone(), 'UTC');
    r = await s.req('PATCH', '/configs', { debug: false, timezone: 'Asia/Shanghai' });
    assert.equal(r.status, 204);
    r = await s.req('PATCH', '/configs', '');
    assert.equal(r.status, 400);

    r = await s.req('PATCH', '/configs', { timezone: 'Mars/Olympus' });
    assert.equal(r.status, 400);
    const e = r.json() as { error: number; message: string };
    assert.equal(e.error, 1000);
    assert.match(e.message, /unknown time zone Mars\/Olympus/);
    assert.equal(defaultZone(), 'Asia/Shanghai', 'a rejected zone changes nothing');

    r = await s.req('PATCH', '/configs', '{"timezone":');
    assert.equal(r.status, 400);
    assert.match((r.json() as { message: string }).message, /^Invalid body: /);

    r = await s.req('PATCH', '/configs', { debug: 'yes' });
    assert.equal(r.status, 400);

    // the whole body is checked first: a bad level leaves the zone alone
    r = await s.req('PATCH', '/configs', { timezone: 'UTC', logLevel: 'loud' });
    assert.equal(r.status, 400);
    assert.equal(defaultZone(), 'Asia/Shanghai');
  } finally {
    setDefaultZone(before);
  }
});

test('PATCH /configs switches file logging and the level at run time', async () => {
  const file = join(s.homeDir, 'log', 'stream.log');
  let r = await s.req('PATCH', '/configs', { fileLog: true, logLevel: 'debug', consoleLog: false });
  assert.equal(r.status, 204);
  assert.equal(s.app.logger.level, 'debug');
  s.app.logger.info('switched-on-marker');
  s.app.logger.flush?.();
  await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').includes('switched-on-marker'));

  r = await s.req('PATCH', '/configs', { FileLog: false, Debug: false });
  assert.equal(r.status, 204);
  assert.equal(s.app.logger.level, 'silent', 'no output left: nothing is formatted');
  r = await s.req('PATCH', '/configs', { fileLog: true, logLevel: 'warn' });
  assert.equal(r.status, 204);
  assert.equal(s.app.logger.level, 'warn');
  r = await s.req('PATCH', '/configs', { fileLog: false });
  assert.equal(r.status, 204);
});

async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
