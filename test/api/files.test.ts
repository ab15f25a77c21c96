/**
 * No access outside the home (src/core/files.ts FileRoots): `file://` URLs of schemas, uploads, services, plugins and
 * imports are read only under the home's data/ folder and `basic.fileAccessRoots`; with authentication on, file
 * sources and sinks are held to the same folders.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startTestServer } from '../helpers/server.js';

const PROTO = 'syntax = "proto3"; message M { string a = 1; }';

async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const r = await fetch(url, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
  return { status: r.status, text: await r.text() };
}

test('file:// URLs given over the API are read only under the home data folder by default', async () => {
  const outside = mkdtempSync(join(tmpdir(), 'eddy-outside-'));
  // the default roots: the helper widens them to the temporary folder for other tests
  const s = await startTestServer({ env: { KUIPER__BASIC__FILEACCESSROOTS: '[]' } });
  try {
    const secret = join(outside, 'secret.proto');
    writeFileSync(secret, PROTO);
    const inside = join(s.app.home.data, 'mine.proto');
    writeFileSync(inside, PROTO);
    // a link inside data/ that leads out of it
    const link = join(s.app.home.data, 'link.proto');
    symlinkSync(secret, link);
    const denied: Array<[string, unknown]> = [
      ['/schemas/protobuf', { name: 'x', file: 'file:///etc/passwd' }],
      ['/schemas/protobuf', { name: 'x', file: pathToFileURL(secret).href }],
      ['/schemas/protobuf', { name: 'x', file: pathToFileURL(link).href }],
      ['/schemas/protobuf', { name: 'x', file: `file://${s.app.home.data}/../etc/kuiper.yaml` }],
      ['/config/uploads', { name: 'passwd', file: 'file:///etc/passwd' }],
      ['/services', { name: 'svc', file: pathToFileURL(join(outside, 'svc.zip')).href }],
      ['/plugins/portables', { name: 'pp', file: pathToFileURL(join(outside, 'pp.zip')).href }],
      ['/data/import', { file: 'file:///etc/passwd' }],
      ['/ruleset/import', { file: 'file:///etc/passwd' }],
    ];
    for (const [path, body] of denied) {
      const r = await postJson(s.url + path, body);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
      assert.match(r.text, /is denied: it is outside the folders the API may use/, path);
    }
    assert.equal(existsSync(join(s.app.home.data, 'uploads', 'passwd')), false, 'nothing was copied');
    const ok = await postJson(`${s.url}/schemas/protobuf`, { name: 'mine', file: pathToFileURL(inside).href });
    assert.equal(ok.status, 201, ok.text);
  } finally {
    await s.dispose();
    rmSync(outside, { recursive: true, force: true });
  }
});

test('basic.fileAccessRoots widens the folders', async () => {
  const extra = mkdtempSync(join(tmpdir(), 'eddy-extra-'));
  const s = await startTestServer({ env: { KUIPER__BASIC__FILEACCESSROOTS: `[${extra}]` } });
  try {
    writeFileSync(join(extra, 'shared.proto'), PROTO);
    const r = await postJson(`${s.url}/schemas/protobuf`, {
      name: 'shared',
      file: pathToFileURL(join(extra, 'shared.proto')).href,
    });
    assert.equal(r.status, 201, r.text);
    assert.equal((await postJson(`${s.url}/config/uploads`, { name: 'p', file: 'file:///etc/passwd' })).status, 400);
  } finally {
    await s.dispose();
    rmSync(extra, { recursive: true, force: true });
  }
});

test('with authentication on, file sources and sinks must use paths under the allowed folders', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-auth-files-'));
  const outside = mkdtempSync(join(tmpdir(), 'eddy-outside-'));
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  mkdirSync(join(home, 'etc', 'mgmt'), { recursive: true });
  writeFileSync(join(home, 'etc', 'mgmt', 'console.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const head = `${enc({ alg: 'RS256', typ: 'JWT' })}.${enc({ iss: 'console.pub', aud: ['eKuiper'], exp: Math.floor(Date.now() / 1000) + 600 })}`;
  const token = `${head}.${sign('RSA-SHA256', Buffer.from(head), privateKey).toString('base64url')}`;
  const s = await startTestServer({
    home,
    env: { KUIPER__BASIC__AUTHENTICATION: 'true', KUIPER__BASIC__FILEACCESSROOTS: '[]' },
  });
  const auth = { authorization: token };
  try {
    writeFileSync(join(outside, 'rows.json'), '[{"a":1}]');
    mkdirSync(join(home, 'data', 'in'), { recursive: true });
    writeFileSync(join(home, 'data', 'in', 'rows.json'), '[{"a":1}]');
    const stream = (name: string, folder: string) =>
      postJson(
        `${s.url}/streams`,
        { sql: `CREATE STREAM ${name} () WITH (DATASOURCE="rows.json", TYPE="file", CONF_KEY="${name}")` },
        auth,
      ).then(async (r) => {
        assert.equal(r.status, 201, r.text);
        const put = await fetch(`${s.url}/metadata/sources/file/confKeys/${name}`, {
          method: 'PUT',
          headers: auth,
          body: JSON.stringify({ path: folder, fileType: 'json' }),
        });
        assert.equal(put.status, 200, await put.text());
      });
    await stream('outsrc', outside);
    await stream('insrc', join(home, 'data', 'in'));
    // the source is opened when the rule starts: the rule stops with the reason
    const bad = await postJson(
      `${s.url}/rules`,
      { id: 'outsrc', sql: 'SELECT * FROM outsrc', actions: [{ nop: {} }] },
      auth,
    );
    assert.equal(bad.status, 201, bad.text);
    const deadline = Date.now() + 20_000;
    let st = '';
    while (!/denied/.test(st) && Date.now() < deadline) {
      st = await (await fetch(`${s.url}/rules/outsrc/status`, { headers: auth })).text();
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(st, /is denied: it is outside the folders the API may use/);
    const sinkOut = await postJson(
      `${s.url}/rules`,
      { id: 'outsink', sql: 'SELECT * FROM insrc', actions: [{ file: { path: join(outside, 'out.txt') } }] },
      auth,
    );
    assert.equal(sinkOut.status, 400, sinkOut.text);
    assert.match(sinkOut.text, /is denied/);
    const good = await postJson(
      `${s.url}/rules`,
      { id: 'insink', sql: 'SELECT * FROM insrc', actions: [{ file: { path: join(home, 'data', 'out.txt') } }] },
      auth,
    );
    assert.equal(good.status, 201, good.text);
    while (!existsSync(join(home, 'data', 'out.txt')) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    assert.ok(existsSync(join(home, 'data', 'out.txt')));
    assert.equal(existsSync(join(outside, 'out.txt')), false);
  } finally {
    await s.dispose();
    rmSync(outside, { recursive: true, force: true });
  }
});
