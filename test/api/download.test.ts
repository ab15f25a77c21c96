/**
 * Export downloads behave like eKuiper's (a file served with Go's content server): headers, byte ranges, and
 * conditional requests, on GET /data/export, POST /data/export and POST /ruleset/export.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.js';

async function get(s: TestServer, method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  const res = await fetch(s.url + path, {
    method,
    headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

test('export downloads: attachment headers, single and multiple byte ranges, unsatisfiable ranges', async () => {
  const s = await startTestServer();
  try {
    await s.req('POST', '/streams', { sql: 'CREATE STREAM dl_s (a BIGINT) WITH (DATASOURCE="dl/a")' });
    const full = await get(s, 'GET', '/data/export');
    assert.equal(full.status, 200);
    assert.equal(full.headers.get('content-type'), 'application/octet-stream');
    assert.match(full.headers.get('content-disposition') ?? '', /^Attachment/);
    assert.equal(full.headers.get('accept-ranges'), 'bytes');
    assert.equal(Number(full.headers.get('content-length')), Buffer.byteLength(full.text));
    assert.ok(!Number.isNaN(Date.parse(full.headers.get('last-modified') ?? '')));
    const size = Buffer.byteLength(full.text);

    const head = await get(s, 'GET', '/data/export', { range: 'bytes=0-9' });
    assert.equal(head.status, 206);
    assert.equal(head.text, full.text.slice(0, 10));
    assert.equal(head.headers.get('content-range'), `bytes 0-9/${size}`);

    const tail = await get(s, 'GET', '/data/export', { range: 'bytes=-5' });
    assert.equal(tail.status, 206);
    assert.equal(tail.text, full.text.slice(-5));

    const open = await get(s, 'GET', '/data/export', { range: `bytes=${size - 3}-` });
    assert.equal(open.text, full.text.slice(-3));

    const multi = await get(s, 'GET', '/data/export', { range: 'bytes=0-1,4-5' });
    assert.equal(multi.status, 206);
    const boundary = /^multipart\/byteranges; boundary=(\S+)$/.exec(multi.headers.get('content-type') ?? '')?.[1];
    assert.ok(boundary);
    assert.ok(
      multi.text.includes(
        `Content-Range: bytes 0-1/${size}\r\nContent-Type: application/octet-stream\r\n\r\n${full.text.slice(0, 2)}`,
      ),
    );
    assert.ok(multi.text.endsWith(`--${boundary}--\r\n`));

    const beyond = await get(s, 'GET', '/data/export', { range: `bytes=${size}-` });
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers.get('content-range'), `bytes */${size}`);
    assert.equal(beyond.text, 'invalid range: failed to overlap\n');
    assert.equal((await get(s, 'GET', '/data/export', { range: 'items=0-1' })).status, 416);

    // ranges covering more than the body: the whole body
    assert.equal((await get(s, 'GET', '/data/export', { range: `bytes=0-${size},0-${size}` })).status, 200);

    // the other downloads share it
    const partial = await get(s, 'POST', '/data/export', { range: 'bytes=0-0' }, '["nosuch"]');
    assert.equal(partial.status, 206);
    assert.equal(partial.text, '{');
    const rs = await get(s, 'POST', '/ruleset/export', { range: 'bytes=0-10' });
    assert.equal(rs.status, 206);
    assert.equal(rs.text, '{"streams":');
  } finally {
    await s.dispose();
  }
});

test('export downloads are modified now: If-Modified-Since in the future gives 304, a stale If-Range the whole body', async () => {
  const s = await startTestServer();
  try {
    const later = new Date(Date.now() + 3600_000).toUTCString();
    const earlier = new Date(Date.now() - 3600_000).toUTCString();
    const notModified = await get(s, 'GET', '/data/export', { 'if-modified-since': later });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.text, '');
    assert.equal((await get(s, 'GET', '/data/export', { 'if-modified-since': earlier })).status, 200);
    // only GET and HEAD are conditional
    assert.equal((await get(s, 'POST', '/ruleset/export', { 'if-modified-since': later })).status, 200);
    const stale = await get(s, 'GET', '/data/export', { range: 'bytes=0-1', 'if-range': earlier });
    assert.equal(stale.status, 200);
    assert.ok(stale.text.startsWith('{"streams"'));
  } finally {
    await s.dispose();
  }
});
