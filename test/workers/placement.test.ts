/**
 * Where a rule runs follows its connectors' declarations (docs/runtime.md §1.10): rules over the generators (random,
 * nexmark), the memory bus, a websocket client, a data-server websocket endpoint or the protobuf format run on a
 * worker, and the generators deliver from there; so do rules over zmq, whose sockets stay on the main thread
 * (connectors/main-relay.ts): rows cross from the zmq source to its rule's worker and from a rule to its zmq sink.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { subscriber, uniqueTopic, until } from '../connectors/helpers.js';
import { status } from './helpers.js';

async function create(s: TestServer, stream: string, rule: Record<string, unknown>): Promise<void> {
  let r = await s.req('POST', '/streams', { sql: stream });
  assert.equal(r.status, 201, r.text);
  r = await s.req('POST', '/rules', rule);
  assert.equal(r.status, 201, r.text);
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

test('rules over random, nexmark, memory, endpoints, protobuf and zmq run on a worker and deliver', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('place');
  const sub = await subscriber(`${topic}/#`);
  const id = (name: string) => `${name}_${topic.replace(/\W/g, '_')}`;
  const mqttOut = (leaf: string) => ({ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/${leaf}` } });
  try {
    await create(s, `CREATE STREAM ${id('rs')} () WITH (TYPE="random", DATASOURCE="x")`, {
      id: id('random'),
      sql: `SELECT count FROM ${id('rs')}`,
      actions: [mqttOut('random')],
      options: {},
    });
    await create(s, `CREATE STREAM ${id('nx')} () WITH (TYPE="nexmark", DATASOURCE="x")`, {
      id: id('nexmark'),
      sql: `SELECT * FROM ${id('nx')}`,
      actions: [{ nop: {} }],
    });
    const port = await freePort();
    const key = id('zk');
    const r = await s.req('PUT', `/metadata/sources/zmq/confKeys/${key}`, { server: `tcp://127.0.0.1:${port}` });
    assert.equal(r.status, 200, r.text);
    await create(s, `CREATE STREAM ${id('zs')} () WITH (TYPE="zmq", DATASOURCE="", FORMAT="json", CONF_KEY="${key}")`, {
      id: id('zmqin'),
      sql: `SELECT * FROM ${id('zs')}`,
      actions: [mqttOut('zmq')],
    });
    await create(s, `CREATE STREAM ${id('zfeed')} () WITH (TYPE="random", DATASOURCE="x")`, {
      id: id('zmqout'),
      sql: `SELECT count FROM ${id('zfeed')}`,
      actions: [{ zmq: { server: `tcp://127.0.0.1:${port}` } }],
    });
    await create(s, `CREATE STREAM ${id('mem')} () WITH (TYPE="memory", DATASOURCE="${topic}/mem")`, {
      id: id('memory'),
      sql: `SELECT * FROM ${id('mem')}`,
      actions: [{ log: {} }],
    });
    await create(s, `CREATE STREAM ${id('wsin')} () WITH (TYPE="websocket", DATASOURCE="/${id('ep')}")`, {
      id: id('endpoint'),
      sql: `SELECT * FROM ${id('wsin')}`,
      actions: [{ log: {} }],
    });
    // a websocket client of an endpoint of the server's own data server
    const ep = `/${id('target')}`;
    assert.equal((await s.req('POST', '/connection/websocket', { endpoint: ep })).status, 200);
    await create(s, `CREATE STREAM ${id('nx2')} () WITH (TYPE="nexmark", DATASOURCE="x")`, {
      id: id('wsclient'),
      sql: `SELECT * FROM ${id('nx2')}`,
      actions: [{ websocket: { addr: `127.0.0.1:${s.app.connectors.dataServer.port}`, path: ep } }],
    });
    const schema = id('schema');
    const content = 'syntax = "proto3";\nmessage Bid {\n  int64 price = 1;\n}\n';
    assert.equal((await s.req('POST', '/schemas/protobuf', { name: schema, content })).status, 201);
    await create(s, `CREATE STREAM ${id('nx3')} () WITH (TYPE="nexmark", DATASOURCE="x")`, {
      id: id('protobuf'),
      sql: `SELECT * FROM ${id('nx3')}`,
      actions: [{ nop: { format: 'protobuf', schemaId: `${schema}.Bid` } }],
    });

    for (const name of ['random', 'nexmark', 'wsclient', 'memory', 'endpoint', 'protobuf', 'zmqin', 'zmqout']) {
      const st = await status(s, id(name));
      assert.equal(st.worker, s.app.workers?.place(id(name)), `${name} runs on its worker: ${JSON.stringify(st)}`);
    }
    // the generators deliver from the workers
    await until(() => sub.messages.some((m) => m.topic === `${topic}/random`), 30_000, 'rows of the random rule');
    await until(() => sub.messages.some((m) => m.topic === `${topic}/zmq`), 30_000, 'rows through zmq');
    // nexmark events are counted by the worker's source node
    const counted = async (): Promise<boolean> =>
      Object.entries(await status(s, id('nexmark'))).some(
        ([k, v]) => k.startsWith('source_') && k.endsWith('_records_out_total') && Number(v) > 0,
      );
    const end = Date.now() + 30_000;
    while (!(await counted())) {
      assert.ok(Date.now() < end, 'nexmark events counted by the worker');
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await sub.close();
    await s.dispose();
  }
});

test('the memory bus spans the threads: rows a memory sink publishes on one worker reach memory sources on the other worker and on the main thread', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('membus');
  const sub = await subscriber(`${topic}/#`);
  const tag = topic.replace(/\W/g, '_');
  try {
    const pool = s.app.workers!;
    // a publisher rule and a reader rule on different workers
    const pubId = `mpub_${tag}`;
    let readId = '';
    for (let i = 0; readId === ''; i++)
      if (pool.place(`mread${i}_${tag}`) !== pool.place(pubId)) readId = `mread${i}_${tag}`;
    await create(s, `CREATE STREAM gen_${tag} () WITH (TYPE="random", DATASOURCE="x")`, {
      id: pubId,
      sql: `SELECT count FROM gen_${tag}`,
      actions: [{ memory: { topic: `${topic}/bus` } }],
    });
    await create(s, `CREATE STREAM mem_${tag} () WITH (TYPE="memory", DATASOURCE="${topic}/+")`, {
      id: readId,
      sql: `SELECT count FROM mem_${tag}`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/worker` } }],
    });
    // a reader on the main thread: the main thread's own bus, as the REST API's trial runs and queries read it
    let readOnMain = 0;
    const unsubscribe = s.app.connectors.memory.subscribe(`${topic}/+`, () => readOnMain++);
    assert.notEqual((await status(s, pubId)).worker, (await status(s, readId)).worker);
    await until(() => sub.messages.some((m) => m.topic === `${topic}/worker`), 30_000, 'rows on the other worker');
    await until(() => readOnMain > 0, 30_000, 'rows on the main thread');
    unsubscribe();
  } finally {
    await sub.close();
    await s.dispose();
  }
});
