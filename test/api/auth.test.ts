import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.js';

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
    const wrongAud = await get(token(privateKey, { iss: 'console.pub', aud: 'x' }));
    assert.deepEqual(wrongAud, { status: 401, text: 'audience field should contain eKuiper, but got [x]\n' });
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
