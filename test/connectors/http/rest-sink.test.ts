import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectorsService, recordingServer, sinkNode, waitFor, freePort } from '../e2-helpers.js';
import { EddyError } from '../../../src/core/errors.js';
import { gunzipSync, gzipSync } from 'node:zlib';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const rows = [
  { room: 'a', temp: 31.5 },
  { room: 'b', temp: 29 },
];

test('rest sink posts the rows of a trigger as one JSON array, to a templated url with templated headers', async () => {
  const srv = await recordingServer();
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', {
    url: `${srv.url}/in/{{len .}}`,
    method: 'post',
    headers: { 'X-Count': '{{len .}}', 'X-Static': 'yes' },
  });
  await node.open();
  node.push(rows);
  await waitFor(() => srv.received.length === 1, 'one request');
  const r = srv.received[0];
  assert.equal(r.method, 'POST');
  assert.equal(r.url, '/in/2');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['x-count'], '2');
  assert.equal(r.headers['x-static'], 'yes');
  assert.equal(r.body, '[{"room":"a","temp":31.5},{"room":"b","temp":29}]');
  assert.equal(node.metrics.exceptions, 0);
  await node.close();
  await close();
  await srv.close();
});

test('rest sink sendSingle with dataTemplate sends one request per row with the exact template output', async () => {
  const srv = await recordingServer();
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', {
    url: `${srv.url}/rooms/{{.room}}`,
    method: 'PUT',
    bodyType: 'text',
    sendSingle: true,
    dataTemplate: '{"r":"{{.room}}","t":{{.temp}}}',
  });
  await node.open();
  node.push(rows);
  await waitFor(() => srv.received.length === 2, 'two requests');
  assert.deepEqual(
    srv.received.map((r) => [r.method, r.url, r.headers['content-type'], r.body]),
    [
      ['PUT', '/rooms/a', 'text/plain', '{"r":"a","t":31.5}'],
      ['PUT', '/rooms/b', 'text/plain', '{"r":"b","t":29}'],
    ],
  );
  await node.close();
  await close();
  await srv.close();
});

test('rest sink: default method GET sends no body; form body url-encodes a row', async () => {
  const srv = await recordingServer();
  const { conns, close } = await connectorsService();
  const get = sinkNode(conns, 'rest', { url: `${srv.url}/get` });
  const form = sinkNode(conns, 'rest', { url: `${srv.url}/form`, method: 'POST', bodyType: 'form', sendSingle: true });
  await get.open();
  await form.open();
  get.push([rows[0]]);
  await waitFor(() => srv.received.length === 1, 'GET');
  form.push([{ a: 'x y', n: 2 }]);
  await waitFor(() => srv.received.length === 2, 'form POST');
  assert.equal(srv.received[0].method, 'GET');
  assert.equal(srv.received[0].body, '');
  assert.equal(srv.received[1].headers['content-type'], 'application/x-www-form-urlencoded;param=value');
  assert.equal(srv.received[1].body, 'a=x+y&n=2');
  await get.close();
  await form.close();
  await close();
  await srv.close();
});

test('rest sink headers given as one template rendering a JSON object', async () => {
  const srv = await recordingServer();
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', {
    url: srv.url,
    method: 'post',
    sendSingle: true,
    headers: '{"X-Room":"{{.room}}","X-Temp":"{{.temp}}"}',
  });
  const bad = sinkNode(conns, 'rest', { url: srv.url, method: 'post', sendSingle: true, headers: '[{{.room}}]' });
  await node.open();
  await bad.open();
  node.push([rows[0]]);
  bad.push([rows[0]]);
  await waitFor(() => srv.received.length === 1 && bad.metrics.exceptions === 1, 'one request, one failure');
  assert.equal(srv.received[0].headers['x-room'], 'a');
  assert.equal(srv.received[0].headers['x-temp'], '31.5');
  assert.match(bad.metrics.lastException, /not a JSON object/);
  await node.close();
  await bad.close();
  await close();
  await srv.close();
});

test('rest sink renders a templated body type per row', async () => {
  const srv = await recordingServer();
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', { url: srv.url, method: 'post', sendSingle: true, bodyType: '{{.kind}}' });
  await node.open();
  node.push([
    { kind: 'text', v: 1 },
    { kind: 'form', v: 2 },
    { kind: 'yaml', v: 3 },
  ]);
  await waitFor(() => srv.received.length === 2 && node.metrics.exceptions === 1, 'two sends and one failure');
  assert.deepEqual(
    srv.received.map((r) => [r.headers['content-type'], r.body]),
    [
      ['text/plain', '{"kind":"text","v":1}'],
      ['application/x-www-form-urlencoded;param=value', 'kind=form&v=2'],
    ],
  );
  assert.match(node.metrics.lastException, /Not valid body type value yaml/);
  await node.close();
  await close();
  await srv.close();
});

test('rest sink: a 4xx answer or a failed body check is an exception and is not resent', async () => {
  let n = 0;
  const srv = await recordingServer((r, res) => {
    n++;
    if (r.url === '/bad') res.writeHead(400).end('no');
    else res.writeHead(200).end('{"code":500,"msg":"boom"}');
  });
  const { conns, close } = await connectorsService();
  const bad = sinkNode(conns, 'rest', { url: `${srv.url}/bad`, method: 'post', enableCache: true });
  const body = sinkNode(conns, 'rest', { url: `${srv.url}/body`, method: 'post', responseType: 'body' });
  await bad.open();
  await body.open();
  bad.push([rows[0]]);
  body.push([rows[0]]);
  await waitFor(() => bad.metrics.exceptions === 1 && body.metrics.exceptions === 1, 'two exceptions');
  assert.match(bad.metrics.lastException, /400/);
  assert.match(body.metrics.lastException, /500/);
  await new Promise((r) => setTimeout(r, 1300));
  assert.equal(n, 2, 'nothing is retried');
  assert.equal(bad.metrics.bufferLength, 0);
  await bad.close();
  await body.close();
  await close();
  await srv.close();
});

test('rest sink with the cache: a server down at start, then answering 503 and 429, gets everything in order', async () => {
  const port = await freePort();
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', {
    url: `http://127.0.0.1:${port}/x`,
    method: 'post',
    sendSingle: true,
    enableCache: true,
    timeout: 5000,
  });
  await node.open();
  node.push([{ n: 1 }, { n: 2 }]);
  await waitFor(() => node.metrics.exceptions >= 1, 'connection refused');
  assert.match(node.metrics.lastException, /ECONNREFUSED|refused/i);
  // the server comes up answering 503, then 429, then 200
  const answers = [503, 429];
  const srv = await recordingServer((_r, res) => {
    const status = answers.shift() ?? 200;
    res.writeHead(status).end(status === 200 ? 'ok' : 'busy');
  }, port);
  node.push([{ n: 3 }]);
  await waitFor(() => srv.received.filter((r) => r.body !== '').length >= 5, 'resends', 15_000);
  const bodies = srv.received.map((r) => r.body);
  // 5xx and 429 are transient (eKuiper drops a 5xx): n:1 is kept and resent until accepted, the rest follow in order
  assert.deepEqual(bodies, ['{"n":1}', '{"n":1}', '{"n":1}', '{"n":2}', '{"n":3}']);
  assert.match(node.metrics.lastException, /429/);
  await waitFor(() => node.metrics.bufferLength === 0, 'cache drained');
  await node.close();
  await close();
  await srv.close();
});

test('rest sink: a request that times out is recoverable', async () => {
  const srv = await recordingServer((r, res) => {
    if (r.body.includes('slow')) setTimeout(() => res.writeHead(200).end('late'), 1500);
    else res.writeHead(200).end('ok');
  });
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', { url: srv.url, method: 'post', timeout: 200, sendSingle: true });
  await node.open();
  node.push([{ v: 'slow' }]);
  await waitFor(() => node.metrics.exceptions === 1, 'timeout');
  assert.match(node.metrics.lastException, /timed out/);
  await node.close();
  await close();
  await srv.close();
});

test('rest sink rejects bad properties with clear messages', async () => {
  const { conns, close } = await connectorsService();
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ url: 'http://h', method: 'PATCH' }, /Not supported HTTP method PATCH/],
    [{ url: 'ftp://h/x' }, /Invalid url, expect http or https scheme/],
    [{ url: 'http://h', method: 'post', bodyType: 'yaml' }, /Not valid body type value yaml/],
    [{ url: 'http://h', responseType: 'status' }, /Not valid response type value status/],
    [{ url: 'http://h', timeout: '5' }, /'timeout' expected type 'int'/],
  ];
  for (const [props, re] of cases) {
    assert.throws(
      () => sinkNode(conns, 'rest', props),
      (e: unknown) => e instanceof EddyError && e.code === 2201 && re.test(e.message),
      JSON.stringify(props),
    );
  }
  await close();
});

test('rest sink oauth: the access token is fetched on open and used in headers; bad credentials fail open with the reason', async () => {
  const srv = await recordingServer((r, res) => {
    if (r.url === '/login') {
      const ok = JSON.parse(r.body).pass === 'right';
      if (ok) res.writeHead(200).end('{"token":"T1","expires_in":3600}');
      else res.writeHead(401).end('{"error":"invalid credentials"}');
    } else res.writeHead(200).end('ok');
  });
  const { conns, close } = await connectorsService();
  const mk = (pass: string) =>
    sinkNode(conns, 'rest', {
      url: `${srv.url}/data`,
      method: 'post',
      sendSingle: true,
      headers: { Authorization: 'Bearer {{.token}}' },
      oauth: { access: { url: `${srv.url}/login`, body: `{"user":"u","pass":"${pass}"}`, expire: '{{.expires_in}}' } },
    });
  const good = mk('right');
  await good.open();
  good.push([{ a: 1 }]);
  await waitFor(() => srv.received.some((r) => r.url === '/data'), 'data request');
  assert.equal(srv.received.find((r) => r.url === '/data')!.headers.authorization, 'Bearer T1');
  await good.close();
  const bad = mk('wrong');
  await assert.rejects(bad.open(), /fail to get access token: http return code error: 401.*invalid credentials/);
  await bad.close();
  await close();
  await srv.close();
});

test('rest sink compression gzips the body and announces it', async () => {
  const got: Array<{ enc: string | undefined; accept: string | undefined; body: string }> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({
        enc: req.headers['content-encoding'],
        accept: req.headers['accept-encoding'],
        body: gunzipSync(Buffer.concat(chunks)).toString(),
      });
      res.writeHead(200, { 'Content-Encoding': 'gzip' }).end(gzipSync('{"code":200}'));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    method: 'post',
    compression: 'gzip',
    responseType: 'body',
  });
  await node.open();
  node.push(rows);
  await waitFor(() => node.metrics.recordsOut === 1, 'sent');
  assert.deepEqual(got, [{ enc: 'gzip', accept: 'gzip', body: '[{"room":"a","temp":31.5},{"room":"b","temp":29}]' }]);
  assert.equal(node.metrics.exceptions, 0, 'the gzip answer was decoded for the body check');
  assert.throws(
    () => sinkNode(conns, 'rest', { url: 'http://h', compression: 'zstd' }),
    /unsupported compressor: zstd/,
  );
  await node.close();
  await close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

test('rest sink resendDestination: with the alternate queue, items the url refused are resent to the templated destination', async () => {
  const deadPort = await freePort();
  const srv = await recordingServer();
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', {
    url: `http://127.0.0.1:${deadPort}/live`,
    method: 'post',
    sendSingle: true,
    timeout: 5000,
    enableCache: true,
    resendAlterQueue: true,
    resendIndicatorField: 'again',
    resendDestination: `${srv.url}/resent/{{.n}}`,
  });
  await node.open();
  node.push([{ n: 1 }, { n: 2 }]);
  await waitFor(() => srv.received.length === 2, 'both items resent', 15_000);
  assert.deepEqual(
    srv.received.map((r) => [r.url, r.body]),
    [
      ['/resent/1', '{"again":true,"n":1}'],
      ['/resent/2', '{"again":true,"n":2}'],
    ],
  );
  await waitFor(() => node.metrics.bufferLength === 0, 'cache drained');
  await node.close();
  await close();
  await srv.close();
});

test('rest sink: a form body of a whole list is the JSON array under the single key result', async () => {
  const srv = await recordingServer();
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'rest', { url: `${srv.url}/form`, method: 'post', bodyType: 'form' });
  await node.open();
  node.push(rows);
  await waitFor(() => srv.received.length === 1, 'one request');
  const body = new URLSearchParams(srv.received[0].body);
  assert.deepEqual([...body.keys()], ['result']);
  assert.equal(body.get('result'), '[{"room":"a","temp":31.5},{"room":"b","temp":29}]');
  await node.close();
  await close();
  await srv.close();
});
