import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectorsService, ctx, recordingServer, waitFor, freePort } from '../e2-helpers.js';
import type { SourceEvent } from '../../../src/contracts/index.js';
import { EddyError } from '../../../src/core/errors.js';

const text = (ev: SourceEvent): string => Buffer.from(ev.payload as Uint8Array).toString('utf8');

test('httppull pulls url+DATASOURCE immediately and then every interval, rendering PullTime/LastPullTime', async () => {
  let n = 0;
  const srv = await recordingServer((_r, res) =>
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(`[{"n":${++n}},{"n":${n + 100}}]`),
  );
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('httppull')!();
  src.provision(ctx(), '/api/data', {
    url: `${srv.url}`,
    method: 'post',
    interval: 200,
    headers: { 'X-Pull': '{{.PullTime}}' },
    body: '{"since":{{.LastPullTime}},"now":{{.PullTime}}}',
  });
  const events: SourceEvent[] = [];
  await src.connect(
    ctx(),
    (ev) => events.push(ev),
    (e) => assert.fail(e),
  );
  await waitFor(() => events.length >= 3, 'three pulls');
  await src.close(ctx());
  assert.equal(text(events[0]), '[{"n":1},{"n":101}]');
  assert.equal(text(events[1]), '[{"n":2},{"n":102}]');
  const r0 = srv.received[0];
  const r1 = srv.received[1];
  assert.equal(r0.method, 'POST');
  assert.equal(r0.url, '/api/data');
  assert.equal(r0.headers['content-type'], 'application/json');
  const b0 = JSON.parse(r0.body);
  const b1 = JSON.parse(r1.body);
  assert.equal(String(b0.now), r0.headers['x-pull']);
  assert.equal(b1.since, b0.now, 'LastPullTime is the PullTime of the previous successful pull');
  assert.ok(b1.now - b0.now >= 150);
  await close();
  await srv.close();
});

test('httppull makes its first request on start, not after the first interval', async () => {
  const srv = await recordingServer((_r, res) => res.writeHead(200).end('{"a":1}'));
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('httppull')!();
  src.provision(ctx(), '', { url: srv.url, interval: 3600000 });
  const events: string[] = [];
  await src.connect(
    ctx(),
    (ev) => events.push(text(ev)),
    () => undefined,
  );
  await waitFor(() => events.length === 1, 'the first pull');
  assert.equal(srv.received[0].method, 'GET', 'GET is the method when none is set');
  await src.close(ctx());
  await close();
  await srv.close();
});

test('httppull incremental skips an unchanged body', async () => {
  const bodies = ['{"v":1}', '{"v":1}', '{"v":2}', '{"v":2}', '{"v":3}'];
  let i = 0;
  const srv = await recordingServer((_r, res) => res.writeHead(200).end(bodies[Math.min(i++, bodies.length - 1)]));
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('httppull')!();
  src.provision(ctx(), '', { url: srv.url, method: 'get', interval: 50, incremental: true });
  const events: string[] = [];
  await src.connect(
    ctx(),
    (ev) => events.push(text(ev)),
    () => undefined,
  );
  await waitFor(() => events.length >= 3 && srv.received.length >= 5, 'five pulls, three changes');
  await src.close(ctx());
  assert.deepEqual(events, ['{"v":1}', '{"v":2}', '{"v":3}']);
  assert.equal(srv.received[0].method, 'GET');
  await close();
  await srv.close();
});

test('httppull reports a server down at start, bad statuses and failed body checks, and resumes when the server is back', async () => {
  const port = await freePort();
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('httppull')!();
  src.provision(ctx(), '/d', {
    url: `http://127.0.0.1:${port}`,
    method: 'get',
    interval: 100,
    responseType: 'body',
    timeout: 5000,
  });
  const events: string[] = [];
  const errors: string[] = [];
  await src.connect(
    ctx(),
    (ev) => events.push(text(ev)),
    (e) => errors.push(e.message),
  );
  await waitFor(() => errors.length >= 1, 'refused');
  assert.match(errors[0], /ECONNREFUSED/);
  let k = 0;
  const srv = await recordingServer((_r, res) => {
    k++;
    if (k === 1) res.writeHead(500).end('down');
    else if (k === 2) res.writeHead(200).end('{"code":404,"data":1}');
    else res.writeHead(200).end('{"code":200,"data":1}');
  }, port);
  await waitFor(() => events.length >= 1, 'data after recovery');
  await src.close(ctx());
  assert.ok(
    errors.some((e) => /http return code error: 500/.test(e)),
    errors.join('|'),
  );
  assert.ok(
    errors.some((e) => /http status code is not 200: 404/.test(e)),
    errors.join('|'),
  );
  assert.equal(events[0], '{"code":200,"data":1}');
  await close();
  await srv.close();
});

test('httppull rejects a zero interval and bad urls', async () => {
  const { conns, close } = await connectorsService();
  const mk = () => conns.registry.source('httppull')!();
  assert.throws(
    () => mk().provision(ctx(), '', { url: 'http://h', interval: 0 }),
    (e: unknown) => e instanceof EddyError && /interval/.test(e.message),
  );
  assert.throws(() => mk().provision(ctx(), '', { url: 'tcp://h', interval: 10 }), /Invalid url/);
  assert.throws(
    () => mk().provision(ctx(), '', { url: 'http://h', method: 'head', interval: 10 }),
    /Not supported HTTP method head/,
  );
  await close();
});

test('httppull oauth: access on start, refresh when expired, tokens usable in headers', async () => {
  let tokenNo = 0;
  const srv = await recordingServer((r, res) => {
    if (r.url === '/login')
      res.writeHead(200).end(`{"access_token":"A${++tokenNo}","refresh_token":"R","expires_in":1}`);
    else if (r.url === '/refresh') {
      assert.equal(r.headers['x-refresh'], 'R');
      res.writeHead(200).end(`{"access_token":"F${++tokenNo}","expires_in":100,"refresh_token":null}`);
    } else res.writeHead(200).end('{"ok":true}');
  });
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('httppull')!();
  src.provision(ctx(), '/data', {
    url: srv.url,
    method: 'get',
    interval: 400,
    headers: { Authorization: 'Bearer {{.access_token}}' },
    oauth: {
      access: { url: `${srv.url}/login`, body: '{"u":"x"}', expire: '{{.expires_in}}' },
      refresh: { url: `${srv.url}/refresh`, headers: { 'X-Refresh': '{{.refresh_token}}' }, body: '' },
    },
  });
  await src.connect(
    ctx(),
    () => undefined,
    (e) => assert.fail(e),
  );
  await waitFor(() => srv.received.filter((r) => r.url === '/data').length >= 4, 'four data pulls', 6000);
  await src.close(ctx());
  const auth = srv.received.filter((r) => r.url === '/data').map((r) => r.headers.authorization);
  assert.equal(auth[0], 'Bearer A1');
  assert.ok(auth.includes('Bearer F2'), auth.join(','));
  assert.equal(srv.received.filter((r) => r.url === '/login').length, 1);
  await close();
  await srv.close();
});

test('httppull lookup returns the rows whose key columns equal the probe values', async () => {
  const srv = await recordingServer((_r, res) =>
    res.writeHead(200).end('[{"id":1,"name":"a"},{"id":2,"name":"b"},{"id":2,"name":"c"},{"id":"2","name":"s"}]'),
  );
  const { conns, close } = await connectorsService();
  const lk = conns.registry.lookup('httppull')!();
  lk.provision(ctx(), '/table', { url: srv.url, method: 'get' });
  await lk.connect(ctx());
  const rows = await lk.lookup(ctx(), ['id', 'name'], ['id'], [2n]);
  assert.deepEqual(rows, [
    { id: 2, name: 'b' },
    { id: 2, name: 'c' },
  ]);
  assert.deepEqual(await lk.lookup(ctx(), ['id'], ['id'], [9n]), []);
  assert.equal(srv.received.length, 2, 'one request per lookup');
  await lk.close(ctx());
  await close();
  await srv.close();
});

test('httppull on a protobuf stream: protobuf bodies decode with the schema, a JSON body falls back to plain JSON', async () => {
  const protobufjs = (await import('protobufjs')).default;
  const { startTestServer } = await import('../../helpers/server.js');
  const PROTO = 'syntax = "proto3";\nmessage Reading { int64 id = 1; string name = 2; }\n';
  const Reading = protobufjs.parse(PROTO, { keepCase: true }).root.lookupType('Reading');
  let n = 0;
  const srv = await recordingServer((_r, res) => {
    n++;
    if (n === 1) res.writeHead(200).end(Buffer.from(Reading.encode(Reading.create({ id: 300, name: 'pé' })).finish()));
    else res.writeHead(200).end('{"id":8,"name":"json"}');
  });
  const s = await startTestServer();
  const out: Array<Record<string, unknown>> = [];
  const stop = s.app.connectors.memory.subscribe('pullpb/out', (m) => out.push(m.row));
  try {
    assert.equal((await s.req('POST', '/schemas/protobuf', { name: 'pullpb', content: PROTO })).status, 201);
    assert.equal(
      (await s.req('PUT', '/metadata/sources/httppull/confKeys/pb', { url: srv.url, method: 'get', interval: 100 }))
        .status,
      200,
    );
    const create = await s.req('POST', '/streams', {
      sql: 'CREATE STREAM pullpb () WITH (TYPE="httppull", CONF_KEY="pb", DATASOURCE="/r", FORMAT="protobuf", SCHEMAID="pullpb.Reading")',
    });
    assert.equal(create.status, 201);
    const rule = await s.req('POST', '/rules', {
      id: 'pullpb',
      sql: 'SELECT id, name FROM pullpb',
      actions: [{ memory: { topic: 'pullpb/out', sendSingle: true } }],
    });
    assert.equal(rule.status, 201);
    await waitFor(() => out.length >= 2, 'two rows', 15_000);
    // 300 is a varint with a byte above 0x7f: the body is kept as bytes, never taken for text
    assert.deepEqual(out[0], { id: 300n, name: 'pé' });
    // plain JSON numbers are floats, as in any schemaless decode
    assert.deepEqual(out[1], { id: 8, name: 'json' });
    const status = (await s.req('GET', '/rules/pullpb/status')).json() as Record<string, unknown>;
    assert.equal(status.source_pullpb_0_exceptions_total, 0);
  } finally {
    stop();
    await s.dispose();
    await srv.close();
  }
});
