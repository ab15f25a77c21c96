import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { startTestServer } from '../helpers/server.js';
import { BROKER, until } from './helpers.js';
import { testSink } from '../helpers/declare.js';

/** A port that was free a moment ago and has nothing listening. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** GET with a JSON body (fetch refuses one), as eKuiper clients send it. */
function getWithBody(url: string, body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) };
    const req = request(url, { method: 'GET', headers }, (res) => {
      let out = '';
      res.on('data', (c) => (out += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: out }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

test('connection checks: mqtt broker up → 200 empty, closed port → clear error, unsupported and unknown types', async () => {
  const s = await startTestServer();
  try {
    const up = await s.req('POST', '/metadata/sinks/connection/mqtt', { server: BROKER, topic: 'x' });
    assert.equal(up.status, 200);
    assert.equal(up.text, '');
    assert.equal(
      (await s.req('POST', '/metadata/sources/connection/mqtt', { server: BROKER, DATASOURCE: 'a/b' })).status,
      200,
    );
    // the sink check configures the sink: its topic is required
    assert.deepEqual((await s.req('POST', '/metadata/sinks/connection/mqtt', { server: BROKER })).json(), {
      error: 1000,
      message: 'mqtt sink is missing property topic',
    });
    const sinkError = async (props: Record<string, unknown>) =>
      (
        (await s.req('POST', '/metadata/sinks/connection/mqtt', { server: BROKER, ...props })).json() as {
          message: string;
        }
      ).message;
    assert.equal(await sinkError({ topic: 'a/#' }), "mqtt sink topic shouldn't contain # or +");
    assert.equal(
      await sinkError({ topic: 'a', qos: 3 }),
      'invalid qos value 3, the value could be only int 0 or 1 or 2',
    );

    const port = await closedPort();
    const down = await s.req('POST', '/metadata/sources/connection/mqtt', { server: `tcp://127.0.0.1:${port}` });
    assert.equal(down.status, 400);
    const body = down.json() as { error: number; message: string };
    assert.equal(body.error, 1000);
    assert.match(body.message, new RegExp(`found error when connecting for tcp://127.0.0.1:${port}: .*ECONNREFUSED`));

    assert.deepEqual((await s.req('POST', '/metadata/sinks/connection/log', {})).json(), {
      error: 1000,
      message: "sink log doesn't support ping connection",
    });
    // memory has no probe in eKuiper 1.14 (docs/runtime.md §4), as source, sink or lookup
    for (const [seg, kind] of [
      ['sinks', 'sink'],
      ['sources', 'source'],
      ['lookups', 'lookup'],
    ]) {
      assert.deepEqual((await s.req('POST', `/metadata/${seg}/connection/memory`, {})).json(), {
        error: 1000,
        message: `${kind} memory doesn't support ping connection`,
      });
    }
    assert.deepEqual((await s.req('POST', '/metadata/lookups/connection/httppull', {})).json(), {
      error: 1000,
      message: "lookup httppull doesn't support ping connection",
    });
    const unknown = await s.req('POST', '/metadata/sinks/connection/nosuch', {});
    assert.equal(unknown.status, 400);
    assert.match((unknown.json() as { message: string }).message, /nosuch not found/);
    assert.equal((await s.req('POST', '/metadata/sinks/connection/mqtt', '{"server":')).status, 400);
    assert.equal(
      (await s.req('POST', '/metadata/sources/connection/mqtt', { server: BROKER, DATASOURCE: 5 })).status,
      400,
    );
  } finally {
    await s.dispose();
  }
});

test('connection check restores a masked password from the resourceId config key', async () => {
  const s = await startTestServer();
  try {
    assert.equal(
      (await s.req('PUT', '/metadata/sinks/mqtt/confKeys/k1', { server: 'tcp://127.0.0.1:1', password: 'real' }))
        .status,
      200,
    );
    let seen: unknown;
    s.app.connectors.registry.declare(
      testSink(
        'probe',
        () => {
          throw new Error('only its connection check is used');
        },
        async (props) => {
          seen = props.password;
        },
      ),
    );
    assert.equal((await s.req('PUT', '/metadata/sinks/probe/confKeys/k1', { password: 'real' })).status, 200);
    assert.equal(
      (await s.req('POST', '/metadata/sinks/connection/probe', { resourceId: 'k1', password: '******' })).status,
      200,
    );
    assert.equal(seen, 'real');
  } finally {
    await s.dispose();
  }
});

test('websocket endpoints: POST starts the data server endpoint, GET answers true/false, DELETE removes it', async () => {
  const s = await startTestServer();
  try {
    const bad = await s.req('POST', '/connection/websocket', '{"endpoint": ');
    assert.equal(bad.status, 400);
    assert.match((bad.json() as { message: string }).message, /^Invalid body: /);
    assert.deepEqual((await s.req('POST', '/connection/websocket', {})).json(), {
      error: 1000,
      message: 'Invalid body: endpoint should be defined',
    });

    const get0 = await getWithBody(`${s.url}/connection/websocket`, { endpoint: '/ws/plant' });
    assert.equal(get0.status, 200);
    assert.equal(get0.text, 'false');
    assert.equal(s.app.connectors.dataServer.port, undefined, 'the data server starts lazily');

    const post = await s.req('POST', '/connection/websocket', { endpoint: '/ws/plant' });
    assert.equal(post.status, 200);
    assert.equal(post.text, '');
    assert.equal((await s.req('POST', '/connection/websocket', { endpoint: '/ws/plant' })).status, 200, 'idempotent');
    assert.equal((await getWithBody(`${s.url}/connection/websocket`, { endpoint: '/ws/plant' })).text, 'true');

    const port = s.app.connectors.dataServer.port;
    assert.ok(port && port > 0);
    const inbound: string[] = [];
    s.app.connectors.wsEndpoints.listen('/ws/plant', (data) => inbound.push(data.toString('utf8')));
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/plant`);
    const received: string[] = [];
    ws.on('message', (d) => received.push(d.toString()));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send('{"a":1}');
    await until(() => inbound.length === 1);
    assert.equal(inbound[0], '{"a":1}');
    assert.equal(s.app.connectors.wsEndpoints.broadcast('/ws/plant', '{"b":2}'), 1);
    await until(() => received.length === 1);
    assert.equal(received[0], '{"b":2}');

    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    assert.equal((await s.req('DELETE', '/connection/websocket', { endpoint: '/ws/plant' })).status, 200);
    await closed;
    assert.equal((await getWithBody(`${s.url}/connection/websocket`, { endpoint: '/ws/plant' })).text, 'false');
    assert.equal(s.app.connectors.dataServer.port, undefined, 'the data server stops with its last endpoint');
    assert.equal((await s.req('DELETE', '/connection/websocket', { endpoint: '/ws/none' })).status, 200);
  } finally {
    await s.dispose();
  }
});

test('data server routes: handlers get the whole body; unknown paths 404, other methods 405', async () => {
  const s = await startTestServer();
  try {
    const ds = s.app.connectors.dataServer;
    const remove = await ds.addRoute('POST', '/push/a', (_req, body, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`got ${body.length}`);
    });
    const base = `http://127.0.0.1:${ds.port}`;
    const ok = await fetch(`${base}/push/a`, { method: 'POST', body: 'x'.repeat(100000) });
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'got 100000');
    assert.equal(ok.headers.get('access-control-allow-origin'), '*');
    assert.equal((await fetch(`${base}/push/b`, { method: 'POST', body: '{}' })).status, 404);
    assert.equal((await fetch(`${base}/push/a`)).status, 405);
    await assert.rejects(
      ds.addRoute('POST', '/push/a', () => undefined),
      /already registered/,
    );
    await remove();
    assert.equal(ds.port, undefined);
  } finally {
    await s.dispose();
  }
});

test('sink connection check restores a masked password from a stored rule action (ruleId + index)', async () => {
  const s = await startTestServer();
  try {
    assert.equal(
      (await s.req('POST', '/streams', { sql: 'CREATE STREAM cs1 () WITH (TYPE="memory", DATASOURCE="cs1")' })).status,
      201,
    );
    const rule = {
      id: 'rcheck',
      sql: 'SELECT * FROM cs1',
      triggered: false,
      actions: [{ log: {} }, { mqtt: { server: BROKER, topic: 'x', password: 'secret' } }],
    };
    assert.equal((await s.req('POST', '/rules', rule)).status, 201);
    let seen: unknown;
    const mqtt = s.app.connectors.registry.declaration('sink', 'mqtt')!;
    s.app.connectors.registry.declare({
      ...mqtt,
      check: async (props) => {
        seen = props.password;
      },
    });
    const res = await s.req('POST', '/metadata/sinks/connection/mqtt', {
      server: BROKER,
      password: '******',
      ruleId: 'rcheck',
      index: 1,
    });
    assert.equal(res.status, 200);
    assert.equal(seen, 'secret');
  } finally {
    await s.dispose();
  }
});
