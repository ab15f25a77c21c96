import { tmpdir } from 'node:os';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startTestServer, type TestServer } from '../helpers/server.js';

async function postJson(s: TestServer, body: unknown, contentType = 'application/json') {
  const res = await fetch(`${s.url}/config/uploads`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** A tiny HTTP server: GET /ok.txt answers `served text`, anything else 404. */
async function fileServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const srv: Server = createServer((req, res) => {
    if (req.url === '/ok.txt') res.end('served text');
    else {
      res.statusCode = 404;
      res.end('nope');
    }
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => srv.close(() => r())) };
}

test('JSON content upload: stored under data/uploads, listed by absolute path, overwritten, deleted', async () => {
  const s = await startTestServer();
  try {
    const dir = join(s.homeDir, 'data', 'uploads');
    const created = await postJson(s, { name: 'cert.pem', content: 'first' });
    assert.equal(created.status, 201);
    assert.equal(created.text, join(dir, 'cert.pem'));
    assert.equal(readFileSync(join(dir, 'cert.pem'), 'utf8'), 'first');

    // case-insensitive field names, as eKuiper's own tests send them
    assert.equal((await postJson(s, { Name: 'a.json', Content: '{"x":1}' })).status, 201);
    assert.equal((await postJson(s, { name: 'cert.pem', content: 'second' })).status, 201);
    assert.equal(readFileSync(join(dir, 'cert.pem'), 'utf8'), 'second');

    const list = await s.req('GET', '/config/uploads');
    assert.equal(list.status, 200);
    assert.deepEqual(list.json(), [join(dir, 'a.json'), join(dir, 'cert.pem')]);

    const records = (await s.req('GET', '/data/export')).json() as { uploads: Record<string, string> };
    assert.deepEqual(Object.keys(records.uploads).sort(), ['a.json', 'cert.pem']);
    assert.equal(JSON.parse(records.uploads['cert.pem']).content, 'second');

    const del = await s.req('DELETE', '/config/uploads/cert.pem');
    assert.equal(del.status, 200);
    assert.equal(del.text, 'ok');
    assert.equal(existsSync(join(dir, 'cert.pem')), false);
    assert.deepEqual((await s.req('GET', '/config/uploads')).json(), [join(dir, 'a.json')]);
    const after = (await s.req('GET', '/data/export')).json() as { uploads: Record<string, string> };
    assert.deepEqual(Object.keys(after.uploads), ['a.json']);

    const again = await s.req('DELETE', '/config/uploads/cert.pem');
    assert.equal(again.status, 404);
    assert.deepEqual(again.json(), {
      error: 1002,
      message: `Error deleting the file: remove ${join(dir, 'cert.pem')}: no such file or directory`,
    });
  } finally {
    await s.dispose();
  }
});

test('JSON file upload from http and file URLs; a failed download leaves the previous file intact', async () => {
  const s = await startTestServer();
  const web = await fileServer();
  try {
    const dir = join(s.homeDir, 'data', 'uploads');
    const fromHttp = await postJson(s, { name: 'web.txt', file: `${web.url}/ok.txt` });
    assert.equal(fromHttp.status, 201);
    assert.equal(readFileSync(join(dir, 'web.txt'), 'utf8'), 'served text');

    const local = join(s.homeDir, 'local-source.txt');
    writeFileSync(local, 'local text');
    const fromFile = await postJson(s, { name: 'local.txt', file: pathToFileURL(local).href });
    assert.equal(fromFile.status, 201);
    assert.equal(readFileSync(join(dir, 'local.txt'), 'utf8'), 'local text');

    const failed = await postJson(s, { name: 'web.txt', file: `${web.url}/missing.txt` });
    assert.equal(failed.status, 400);
    assert.deepEqual(JSON.parse(failed.text), {
      error: 1000,
      message: 'Upload error: getFile has error: cannot download the file with status: 404 Not Found',
    });
    assert.equal(readFileSync(join(dir, 'web.txt'), 'utf8'), 'served text');

    const noFile = await postJson(s, { name: 'gone.txt', file: `file://${tmpdir()}/nonexistent/eddy/x.txt` });
    assert.equal(noFile.status, 400);
    assert.match(JSON.parse(noFile.text).message, /no such file or directory/);
    const ftp = await postJson(s, { name: 'gone.txt', file: 'ftp://example.com/x' });
    assert.equal(JSON.parse(ftp.text).message, 'Upload error: getFile has error: unsupported url scheme ftp');
    // nothing half-written is left in the folder
    assert.deepEqual(readdirSync(dir).sort(), ['local.txt', 'web.txt']);
  } finally {
    await web.close();
    await s.dispose();
  }
});

test('multipart upload with field uploadFile stores the client file name; binary content kept byte for byte', async () => {
  const s = await startTestServer();
  try {
    const dir = join(s.homeDir, 'data', 'uploads');
    const bytes = new Uint8Array([0, 1, 2, 250, 255, 10, 13]);
    const form = new FormData();
    form.append('other', 'ignored');
    form.append('uploadFile', new Blob([bytes]), 'blob.bin');
    const res = await fetch(`${s.url}/config/uploads`, { method: 'POST', body: form });
    assert.equal(res.status, 201);
    assert.equal(await res.text(), join(dir, 'blob.bin'));
    assert.deepEqual(new Uint8Array(readFileSync(join(dir, 'blob.bin'))), bytes);

    // a text file uploaded by form is recorded for export too (docs/compatibility.md D14); bytes that are no text cannot travel in a bundle
    const textForm = new FormData();
    textForm.append('uploadFile', new Blob(['a: 1\n']), 'conf.yaml');
    assert.equal((await fetch(`${s.url}/config/uploads`, { method: 'POST', body: textForm })).status, 201);
    const exported = (await s.req('GET', '/data/export')).json() as { uploads: Record<string, string> };
    assert.deepEqual(Object.keys(exported.uploads), ['conf.yaml']);
    assert.deepEqual(JSON.parse(exported.uploads['conf.yaml']), { name: 'conf.yaml', content: 'a: 1\n', file: '' });

    const noPart = new FormData();
    noPart.append('wrongName', new Blob(['x']), 'x.txt');
    const missing = await fetch(`${s.url}/config/uploads`, { method: 'POST', body: noPart });
    assert.equal(missing.status, 400);
    assert.deepEqual(await missing.json(), { error: 1000, message: 'Error Retrieving the File: http: no such file' });

    // broken multipart bodies are refused, never crash or hang the request
    const noBoundary = await postJson(s, 'garbage', 'multipart/form-data');
    assert.equal(noBoundary.status, 400);
    const truncated = await postJson(
      s,
      '--xyz\r\nContent-Disposition: form-data; name="uploadFile"; filename="t.txt"\r\n\r\nabc',
      'multipart/form-data; boundary=xyz',
    );
    assert.equal(truncated.status, 400);
    assert.equal(existsSync(join(dir, 't.txt')), false);

    const plain = await postJson(s, 'hello', 'text/plain');
    assert.equal(plain.status, 400);
    assert.match(JSON.parse(plain.text).message, /^Error parse the multi part form: /);
  } finally {
    await s.dispose();
  }
});

test('bad upload requests answer 400 with eKuiper texts and never touch files outside the folder', async () => {
  const s = await startTestServer();
  try {
    const cases: Array<[unknown, string]> = [
      [{ content: 'x' }, 'Invalid body: missing necessary field: invalid body: name is required'],
      [
        { name: 'x.txt', contents: 'typo' },
        'Invalid body: missing necessary field: invalid body: content or FilePath is required',
      ],
    ];
    for (const [body, message] of cases) {
      const r = await postJson(s, body);
      assert.equal(r.status, 400);
      assert.deepEqual(JSON.parse(r.text), { error: 1000, message });
    }
    const bad = await postJson(s, '{"name": "x.txt", "content": test}');
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.text).message, /^Invalid body: Error decoding file json: /);
    // JSON detection accepts media-type parameters (docs/compatibility.md D18)
    assert.equal((await postJson(s, { name: 'p.txt', content: 'p' }, 'application/json; charset=utf-8')).status, 201);

    for (const name of ['../escape.txt', 'a/b.txt', 'a\\b.txt', '..', '.']) {
      const r = await postJson(s, { name, content: 'x' });
      assert.equal(r.status, 400, name);
      assert.match(JSON.parse(r.text).message, /^Invalid body: invalid name/);
    }
    assert.equal(existsSync(join(s.homeDir, 'data', 'escape.txt')), false);
    const del = await s.req('DELETE', '/config/uploads/..%5Cuploads');
    assert.equal(del.status, 400);
    assert.ok(existsSync(join(s.homeDir, 'data')));
  } finally {
    await s.dispose();
  }
});
