import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectorsService, ctx } from '../e2-helpers.js';
import type { SourceEvent } from '../../../src/contracts/index.js';
import { EddyError } from '../../../src/core/errors.js';

const text = (ev: SourceEvent): string => Buffer.from(ev.payload as Uint8Array).toString('utf8');

test('httppush: JSON object bodies reach every source of the endpoint; 200 ok', async () => {
  const { conns, close } = await connectorsService();
  const a = conns.registry.source('httppush')!();
  const b = conns.registry.source('httppush')!();
  a.provision(ctx(), '/push/e2a', { method: 'POST' });
  b.provision(ctx(), '/push/e2a', {});
  const got: string[][] = [[], []];
  await a.connect(
    ctx(),
    (ev) => got[0].push(text(ev)),
    () => undefined,
  );
  await b.connect(
    ctx(),
    (ev) => got[1].push(text(ev)),
    () => undefined,
  );
  const base = `http://127.0.0.1:${conns.dataServer.port}`;
  const res = await fetch(`${base}/push/e2a`, {
    method: 'POST',
    body: '{"temperature":21.5,"n":1}',
    headers: { 'Content-Type': 'application/json' },
  });
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'ok');
  assert.deepEqual(got, [['{"temperature":21.5,"n":1}'], ['{"temperature":21.5,"n":1}']]);
  // another method on the same path is not routed
  const put = await fetch(`${base}/push/e2a`, { method: 'PUT', body: '{}' });
  assert.equal(put.status, 405);
  await a.close(ctx());
  // b still receives after a left
  await fetch(`${base}/push/e2a`, { method: 'POST', body: '{"n":2}' });
  assert.deepEqual(got[1], ['{"temperature":21.5,"n":1}', '{"n":2}']);
  await b.close(ctx());
  assert.equal(conns.dataServer.hasRoute('POST', '/push/e2a'), false, 'the route goes with its last source');
  await close();
});

test('httppush rejects arrays and malformed JSON with 400 and reports the error to the rule', async () => {
  const { conns, close } = await connectorsService();
  const s = conns.registry.source('httppush')!();
  s.provision(ctx(), '/push/e2b', { method: 'put' });
  const events: string[] = [];
  const errors: string[] = [];
  await s.connect(
    ctx(),
    (ev) => events.push(text(ev)),
    (e) => errors.push(e.message),
  );
  const url = `http://127.0.0.1:${conns.dataServer.port}/push/e2b`;
  const r1 = await fetch(url, { method: 'PUT', body: '[{"a":1}]' });
  assert.equal(r1.status, 400);
  assert.match(
    await r1.text(),
    /^Fail to decode data: json: cannot unmarshal array into Go value of type map\[string\]interface \{\}/,
  );
  const r2 = await fetch(url, { method: 'PUT', body: '{"a":' });
  assert.equal(r2.status, 400);
  assert.match(await r2.text(), /^Fail to decode data: /);
  const r3 = await fetch(url, { method: 'PUT', body: '{"a":1}' });
  assert.equal(r3.status, 200);
  assert.deepEqual(events, ['{"a":1}']);
  assert.equal(errors.length, 2);
  await s.close(ctx());
  await close();
});

test('httppush validates datasource, method and content type', async () => {
  const { conns, close } = await connectorsService();
  const mk = () => conns.registry.source('httppush')!();
  assert.throws(
    () => mk().provision(ctx(), 'nopath', {}),
    (e: unknown) => e instanceof EddyError && /must start with '\/'/.test(e.message),
  );
  assert.throws(() => mk().provision(ctx(), '/p', { method: 'GET' }), /method must be POST or PUT/);
  assert.throws(
    () => mk().provision(ctx(), '/p', { contentType: 'text/plain' }),
    /contentType must be application\/json/,
  );
  await close();
});

test('data server over TLS (source.httpServerTls): httppush over https, websocket endpoints over wss', async () => {
  const { execFileSync } = await import('node:child_process');
  const { readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const https = await import('node:https');
  const { WebSocket } = await import('ws');
  const { loadConfig, prepareHome, resolveHome } = await import('../../../src/config/index.js');
  const { SqliteStore } = await import('../../../src/store/index.js');
  const { Connectors } = await import('../../../src/connectors/index.js');
  const { logger, tempDir, sinkNode } = await import('../e2-helpers.js');
  const t = tempDir('eddy-tls-home-');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(t.dir, 'k.pem'),
      '-out',
      join(t.dir, 'c.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const ca = readFileSync(join(t.dir, 'c.pem'));
  const home = resolveHome(join(t.dir, 'home'));
  prepareHome(home);
  const env = { KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1', KUIPER__SOURCE__HTTPSERVERPORT: '0' };
  const config = loadConfig(home, env);
  Object.assign(config.source, { httpServerTls: { certfile: join(t.dir, 'c.pem'), keyfile: join(t.dir, 'k.pem') } });
  const store = new SqliteStore(join(home.data, 'test.db'));
  const conns = await Connectors.create({ home, config, env, store, logger });
  try {
    const src = conns.registry.source('httppush')!();
    src.provision(ctx(), '/tls/in', {});
    const got: string[] = [];
    await src.connect(
      ctx(),
      (ev) => got.push(text(ev)),
      () => undefined,
    );
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request(`https://127.0.0.1:${conns.dataServer.port}/tls/in`, { method: 'POST', ca }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end('{"secure":true}');
    });
    assert.deepEqual(answer, { status: 200, body: 'ok' });
    assert.deepEqual(got, ['{"secure":true}']);
    await src.close(ctx());

    const sink = sinkNode(conns, 'websocket', { path: '/tls/ws', sendSingle: true });
    await sink.open();
    const peer = await new Promise<InstanceType<typeof WebSocket>>((resolve, reject) => {
      const ws = new WebSocket(`wss://127.0.0.1:${conns.dataServer.port}/tls/ws`, { ca });
      ws.once('open', () => resolve(ws));
      ws.once('error', reject);
    });
    const frames: string[] = [];
    peer.on('message', (d) => frames.push(d.toString()));
    sink.push([{ n: 1 }]);
    const end = Date.now() + 15_000;
    while (frames.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(frames, ['{"n":1}']);
    peer.close();
    await sink.close();
  } finally {
    await conns.close();
    await store.close();
    t.remove();
  }
});
