import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.js';
import { freePort } from '../helpers/process.js';

function token(privateKey: KeyObject, claims: Record<string, unknown>): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const head = `${enc({ alg: 'RS256', typ: 'JWT' })}.${enc(claims)}`;
  return `${head}.${sign('RSA-SHA256', Buffer.from(head), privateKey).toString('base64url')}`;
}

test('with basic.authentication, routes need an RS256 token whose iss names a key in etc/mgmt', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-auth-'));
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
  mkdirSync(join(home, 'etc', 'mgmt'), { recursive: true });
  writeFileSync(join(home, 'etc', 'mgmt', 'Console.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const s = await startTestServer({ home, env: { KUIPER__BASIC__AUTHENTICATION: 'true' } });
  try {
    const now = Math.floor(Date.now() / 1000);
    const get = (auth?: string) =>
      fetch(`${s.url}/streams`, { headers: auth === undefined ? {} : { authorization: auth } }).then(async (r) => ({
        status: r.status,
        text: await r.text(),
      }));
    assert.equal((await s.req('GET', '/ping')).status, 200, '/ping is open');
    assert.equal((await s.req('GET', '/')).status, 200, '/ is open');
    assert.equal((await s.req('GET', '/no/such/path')).status, 404, 'unmatched paths are not authenticated');
    assert.deepEqual(await get(), { status: 401, text: 'missing_token\n' });
    const good = token(privateKey, { iss: 'console.pub', aud: ['eKuiper'], exp: now + 60 });
    assert.equal((await get(good)).status, 200);
    assert.equal((await get(`Bearer ${good}`)).status, 401, 'the raw token, not a Bearer value');
    const expired = await get(token(privateKey, { iss: 'console.pub', aud: 'eKuiper', exp: now - 10 }));
    assert.equal(expired.status, 401);
    assert.match(expired.text, /^validate token error: token is expired/);
    const forged = await get(token(other.privateKey, { iss: 'console.pub', aud: 'eKuiper' }));
    assert.equal(forged.status, 401);
    assert.match(forged.text, /^validate token error/);
    const wrongAud = await get(token(privateKey, { iss: 'console.pub', aud: 'x', exp: now + 60 }));
    assert.deepEqual(wrongAud, { status: 401, text: 'audience field should contain eKuiper, but got [x]\n' });
    // a token that never expires is refused
    const forever = await get(token(privateKey, { iss: 'console.pub', aud: ['eKuiper'] }));
    assert.deepEqual(forever, { status: 401, text: 'validate token error: token has no expiry (exp claim)\n' });
    const unknownIssuer = await get(token(privateKey, { iss: 'nobody.pub', aud: 'eKuiper' }));
    assert.equal(unknownIssuer.status, 401);
    const plain = await fetch(`${s.url}/rules`);
    assert.equal(plain.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(plain.headers.get('x-content-type-options'), 'nosniff');
    // the router answers before authentication: 405 for another method, 301 for an unclean path
    assert.equal((await fetch(`${s.url}/streams`, { method: 'PATCH' })).status, 405);
    const moved = await fetch(`${s.url}//streams`, { redirect: 'manual' });
    assert.equal(moved.status, 301);
    assert.equal(moved.headers.get('location'), '/streams');
  } finally {
    await s.dispose();
  }
});

test('with basic.authentication, the data server (httppush and websocket endpoints) needs the REST token', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-auth-'));
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  mkdirSync(join(home, 'etc', 'mgmt'), { recursive: true });
  writeFileSync(join(home, 'etc', 'mgmt', 'console.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const s = await startTestServer({ home, env: { KUIPER__BASIC__AUTHENTICATION: 'true' } });
  const good = token(privateKey, { iss: 'console.pub', aud: ['eKuiper'], exp: Math.floor(Date.now() / 1000) + 600 });
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${s.url}${path}`, {
      method,
      headers: { authorization: good },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  try {
    assert.equal(
      (await api('POST', '/streams', { sql: 'CREATE STREAM pushed () WITH (DATASOURCE="/pushed", TYPE="httppush")' }))
        .status,
      201,
    );
    const rule = await api('POST', '/rules', { id: 'pushed', sql: 'SELECT * FROM pushed', actions: [{ nop: {} }] });
    assert.equal(rule.status, 201, await rule.text());
    const port = () => s.app.connectors.dataServer.port;
    const deadline = Date.now() + 20_000;
    while (port() === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const push = (auth?: string) =>
      fetch(`http://127.0.0.1:${port()}/pushed`, {
        method: 'POST',
        body: '{"a":1}',
        headers: auth ? { authorization: auth } : {},
      });
    const none = await push();
    assert.equal(none.status, 401);
    assert.equal(await none.text(), 'missing_token\n');
    const forever = await push(token(privateKey, { iss: 'console.pub', aud: ['eKuiper'] }));
    assert.equal(forever.status, 401);
    await forever.text();
    const ok = await push(good);
    assert.equal(ok.status, 200, await ok.text());
    const status = async () => (await (await api('GET', '/rules/pushed/status')).json()) as Record<string, unknown>;
    let st = await status();
    while (Number(st.source_pushed_0_records_in_total) < 1 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      st = await status();
    }
    assert.equal(st.source_pushed_0_records_in_total, 1, 'only the authenticated body reached the rule');
    // a websocket endpoint refuses the upgrade without the token and accepts it with
    assert.equal((await api('POST', '/connection/websocket', { endpoint: '/wsauth' })).status, 200);
    const { WebSocket } = await import('ws');
    const open = (headers: Record<string, string>) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port()}/wsauth`, { headers });
        ws.on('open', () => {
          ws.close();
          resolve(101);
        });
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
          ws.terminate();
        });
        ws.on('error', () => undefined);
      });
    assert.equal(await open({}), 401);
    assert.equal(await open({ authorization: good }), 101);
  } finally {
    await s.dispose();
  }
});

test('with basic.authentication, GET /metrics needs the token too, on a port of its own and on the REST port', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-auth-'));
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  mkdirSync(join(home, 'etc', 'mgmt'), { recursive: true });
  writeFileSync(join(home, 'etc', 'mgmt', 'Console.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const now = Math.floor(Date.now() / 1000);
  const good = token(privateKey, { iss: 'console.pub', aud: ['eKuiper'], exp: now + 60 });
  const scrape = async (url: string, auth?: string) => {
    const r = await fetch(url, { headers: auth === undefined ? {} : { authorization: auth } });
    return { status: r.status, text: await r.text() };
  };
  const own = await startTestServer({
    home,
    env: {
      KUIPER__BASIC__AUTHENTICATION: 'true',
      KUIPER__BASIC__PROMETHEUS: 'true',
      KUIPER__BASIC__PROMETHEUSPORT: String(await freePort()),
    },
  });
  try {
    const url = own.metricsUrl!;
    assert.notEqual(new URL(url).port, new URL(own.url).port, 'metrics on a port of their own');
    assert.deepEqual(await scrape(url), { status: 401, text: 'missing_token\n' });
    const forged = await scrape(
      url,
      token(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, {
        iss: 'console.pub',
        aud: 'eKuiper',
        exp: now + 60,
      }),
    );
    assert.equal(forged.status, 401);
    assert.doesNotMatch(forged.text, /kuiper_/);
    const ok = await scrape(url, good);
    assert.equal(ok.status, 200);
    assert.match(ok.text, /kuiper_rule_count/);
    // what a Prometheus scrape configuration sends (`authorization: {credentials: …}`)
    assert.equal((await scrape(url, `Bearer ${good}`)).status, 200);
  } finally {
    await own.stop();
  }
  // prometheusPort = restPort (0, ephemeral, for the test server): the REST API's check covers /metrics
  const shared = await startTestServer({
    home,
    env: {
      KUIPER__BASIC__AUTHENTICATION: 'true',
      KUIPER__BASIC__PROMETHEUS: 'true',
      KUIPER__BASIC__PROMETHEUSPORT: '0',
    },
  });
  try {
    const url = shared.metricsUrl!;
    assert.equal(url, `${shared.url}/metrics`);
    assert.deepEqual(await scrape(url), { status: 401, text: 'missing_token\n' });
    assert.equal((await scrape(url, good)).status, 200);
    assert.equal((await scrape(url, `Bearer ${good}`)).status, 200);
  } finally {
    await shared.dispose();
  }
});
