import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { connectorsService, ctx, sinkNode, waitFor, freePort } from '../e2-helpers.js';
import type { SourceEvent } from '../../../src/contracts/index.js';

const text = (ev: SourceEvent): string => Buffer.from(ev.payload as Uint8Array).toString('utf8');

async function wsServer(
  port = 0,
): Promise<{ wss: WebSocketServer; port: number; received: string[]; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ port, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const received: string[] = [];
  wss.on('connection', (ws) => ws.on('message', (d) => received.push(d.toString())));
  return {
    wss,
    port: (wss.address() as AddressInfo).port,
    received,
    close: () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  };
}

function openClient(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

test('websocket source (client mode) receives messages, survives a lost connection, and fails clearly when down', async () => {
  const srv = await wsServer();
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('websocket')!();
  src.provision(ctx(), '/feed', { addr: `127.0.0.1:${srv.port}` });
  const events: string[] = [];
  const errors: string[] = [];
  await src.connect(
    ctx(),
    (ev) => events.push(text(ev)),
    (e) => errors.push(e.message),
  );
  await waitFor(() => srv.wss.clients.size === 1, 'client connected');
  for (const c of srv.wss.clients) c.send('{"a":1}');
  await waitFor(() => events.length === 1, 'first message');
  // the server drops the connection; the source reconnects by itself
  for (const c of srv.wss.clients) c.terminate();
  await waitFor(() => [...srv.wss.clients].some((c) => c.readyState === WebSocket.OPEN), 'reconnected', 10_000);
  for (const c of srv.wss.clients) c.send('{"a":2}');
  await waitFor(() => events.length === 2, 'message after reconnect');
  assert.deepEqual(events, ['{"a":1}', '{"a":2}']);
  assert.deepEqual(errors, []);
  await src.close(ctx());
  await srv.close();

  const down = conns.registry.source('websocket')!();
  down.provision(ctx(), '/feed', { addr: `127.0.0.1:${await freePort()}` });
  await assert.rejects(
    down.connect(
      ctx(),
      () => undefined,
      () => undefined,
    ),
    /ECONNREFUSED/,
  );
  await down.close(ctx());
  await close();
});

test('websocket source (server mode) serves its path on the data server; non-object frames are errors', async () => {
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('websocket')!();
  src.provision(ctx(), '/e2/ws/in', { addr: '' });
  const events: string[] = [];
  const errors: string[] = [];
  await src.connect(
    ctx(),
    (ev) => events.push(text(ev)),
    (e) => errors.push(e.message),
  );
  const client = await openClient(`ws://127.0.0.1:${conns.dataServer.port}/e2/ws/in`);
  client.send('{"t":1.5}');
  client.send('[1,2]');
  client.send('nope');
  await waitFor(() => events.length + errors.length === 3, 'three frames');
  assert.deepEqual(events, ['{"t":1.5}']);
  assert.equal(errors.length, 2);
  client.close();
  await src.close(ctx());
  assert.equal(conns.wsEndpoints.has('/e2/ws/in'), false);
  await close();
});

test('websocket sink sends the encoded payload as text frames, as client and as server endpoint', async () => {
  const srv = await wsServer();
  const { conns, close } = await connectorsService();
  const client = sinkNode(conns, 'websocket', { addr: `127.0.0.1:${srv.port}`, path: '/out' });
  const server = sinkNode(conns, 'websocket', {
    path: '/e2/ws/out',
    sendSingle: true,
    dataTemplate: '{{.room}}={{.temp}}',
  });
  await client.open();
  await server.open();
  const peer = await openClient(`ws://127.0.0.1:${conns.dataServer.port}/e2/ws/out`);
  const got: string[] = [];
  peer.on('message', (d) => got.push(d.toString()));
  const rows = [
    { room: 'a', temp: 31.5 },
    { room: 'b', temp: 29 },
  ];
  client.push(rows);
  server.push(rows);
  await waitFor(() => srv.received.length === 1 && got.length === 2, 'frames');
  assert.deepEqual(srv.received, ['[{"room":"a","temp":31.5},{"room":"b","temp":29}]']);
  assert.deepEqual(got, ['a=31.5', 'b=29']);
  peer.close();
  await client.close();
  await server.close();
  await srv.close();
  await close();
});

test('websocket sink (client) with the cache resends what failed while the server was gone', async () => {
  const srv = await wsServer();
  const port = srv.port;
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'websocket', {
    addr: `127.0.0.1:${port}`,
    path: '/out',
    sendSingle: true,
    enableCache: true,
  });
  await node.open();
  node.push([{ n: 1 }]);
  await waitFor(() => srv.received.length === 1, 'first frame');
  await srv.close();
  // let the client see the close (a frame written before that is lost in TCP, as with any websocket client)
  await new Promise((r) => setTimeout(r, 300));
  node.push([{ n: 2 }]);
  await waitFor(() => node.metrics.exceptions >= 1, 'send failure');
  assert.match(node.metrics.lastException, /not connected/);
  const back = await wsServer(port);
  await waitFor(() => back.received.length >= 1, 'resent after the server is back', 10000);
  assert.deepEqual(back.received, ['{"n":2}']);
  await node.close();
  await back.close();
  await close();
});

test('websocket connection checks: client mode connects, server mode cannot ping', async () => {
  const srv = await wsServer();
  const { conns, close } = await connectorsService();
  const sink = conns.registry.connectionCheck('sink', 'websocket')!;
  const source = conns.registry.connectionCheck('source', 'websocket')!;
  await sink({ addr: `127.0.0.1:${srv.port}`, path: '/x' });
  await source({ addr: `127.0.0.1:${srv.port}`, DATASOURCE: '/x' });
  await assert.rejects(sink({ addr: `127.0.0.1:${await freePort()}`, path: '/x' }), /ECONNREFUSED/);
  await assert.rejects(source({ addr: '', DATASOURCE: '/x' }), /can't ping/);
  await srv.close();
  await close();
});

test('websocket sink sendError: an item that cannot be transformed is reported to the peers as {"error":...}', async () => {
  const { conns, close } = await connectorsService();
  const props = { sendSingle: true, dataTemplate: 'x={{index .xs 1}}' };
  const withErr = sinkNode(conns, 'websocket', { ...props, path: '/e2/ws/err', sendError: true });
  const without = sinkNode(conns, 'websocket', { ...props, path: '/e2/ws/noerr' });
  await withErr.open();
  await without.open();
  const p1 = await openClient(`ws://127.0.0.1:${conns.dataServer.port}/e2/ws/err`);
  const p2 = await openClient(`ws://127.0.0.1:${conns.dataServer.port}/e2/ws/noerr`);
  const got1: string[] = [];
  const got2: string[] = [];
  p1.on('message', (d) => got1.push(d.toString()));
  p2.on('message', (d) => got2.push(d.toString()));
  const rows = [{ xs: [1n, 2n] }, { xs: [1n] }, { xs: [3n, 4n] }];
  withErr.push(rows);
  without.push(rows);
  await waitFor(() => got1.length === 3 && got2.length === 2, 'frames');
  assert.equal(got1[0], 'x=2');
  assert.match(got1[1], /^\{"error":".*index out of range.*"\}$/);
  assert.equal(got1[2], 'x=4');
  assert.deepEqual(got2, ['x=2', 'x=4']);
  assert.equal(withErr.metrics.exceptions, 1);
  assert.equal(without.metrics.exceptions, 1);
  p1.close();
  p2.close();
  await withErr.close();
  await without.close();
  await close();
});

test('websocket client mode over TLS: with TLS properties the sink and source connect with wss', async () => {
  const { execFileSync } = await import('node:child_process');
  const { readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { createServer } = await import('node:https');
  const { tempDir } = await import('../e2-helpers.js');
  const t = tempDir('eddy-wss-');
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
  const cert = readFileSync(join(t.dir, 'c.pem'));
  const https = createServer({ cert, key: readFileSync(join(t.dir, 'k.pem')) });
  const wss = new WebSocketServer({ server: https });
  const received: string[] = [];
  wss.on('connection', (ws) => {
    ws.on('message', (d) => received.push(d.toString()));
    ws.send('{"from":"server"}');
  });
  await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
  const addr = `127.0.0.1:${(https.address() as AddressInfo).port}`;
  const { conns, close } = await connectorsService();
  try {
    const sink = sinkNode(conns, 'websocket', { addr, path: '/in', rootCARaw: cert.toString('base64') });
    await sink.open();
    sink.push([{ n: 1 }]);
    await waitFor(() => received.length === 1, 'frame over wss');
    assert.deepEqual(received, ['[{"n":1}]']);
    await sink.close();

    const src = conns.registry.source('websocket')!();
    src.provision(ctx(), '/out', { addr, insecureSkipVerify: true });
    const events: string[] = [];
    await src.connect(
      ctx(),
      (ev) => events.push(text(ev)),
      () => undefined,
    );
    await waitFor(() => events.length === 1, 'message over wss');
    assert.deepEqual(events, ['{"from":"server"}']);
    await src.close(ctx());

    // without trust material the self-signed certificate is refused
    const check = conns.registry.connectionCheck('sink', 'websocket')!;
    await assert.rejects(check({ addr, path: '/x', insecureSkipVerify: false }), /certificate|self.signed/i);
    await check({ addr, path: '/x', insecureSkipVerify: true });
  } finally {
    await close();
    for (const c of wss.clients) c.terminate();
    wss.close();
    https.closeAllConnections();
    await new Promise<void>((r) => https.close(() => r()));
    t.remove();
  }
});
