/**
 * Rules using the protobuf format run on the rule workers (docs/runtime.md §1.10): each worker reads the schema files
 * registered under `/schemas/protobuf` itself, and a rule opened after a schema was replaced or removed sees the change,
 * on a worker that had parsed the earlier version too. A missing schema or message type is answered as on the main
 * thread.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { BROKER, publisher, uniqueTopic } from '../connectors/helpers.js';
import { connectAsync } from 'mqtt';
import { status } from './helpers.js';

const V1 = `syntax = "proto3";
message Reading {
  int64 id = 1;
  string name = 2;
}
`;

// the schema replaced: a field more, and a message of its own for the output
const V2 = `syntax = "proto3";
message Reading {
  int64 id = 1;
  string name = 2;
  double temp = 3;
}
message Alert {
  string label = 1;
  int64 id = 2;
  double temp = 3;
}
`;

async function created(s: TestServer, path: string, body: unknown): Promise<void> {
  const r = await s.req('POST', path, body);
  assert.equal(r.status, 201, r.text);
}

/** A rule id placed on `worker` (placement hashes the id). */
function idOn(s: TestServer, prefix: string, worker: number): string {
  for (let i = 0; ; i++) if (s.app.workers!.place(`${prefix}${i}`) === worker) return `${prefix}${i}`;
}

test('protobuf streams and sinks run on a worker, and a rule opened after a schema changed reads the new one', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('protoworker');
  const tag = topic.replace(/\W/g, '_');
  const schema = `pw_${tag}`;
  const outputs: Array<{ topic: string; payload: Buffer }> = [];
  const sub = await connectAsync(BROKER, { reconnectPeriod: 0 });
  sub.on('message', (t, payload) => outputs.push({ topic: t, payload }));
  await sub.subscribeAsync(`${topic}/out/#`, { qos: 1 });
  const pub = await publisher();
  const mqttOut = (leaf: string, schemaId: string) => ({
    mqtt: { server: BROKER, topic: `${topic}/out/${leaf}`, format: 'protobuf', schemaId, sendSingle: true },
  });
  /** publishes `row` encoded with `type` until an output arrived on `leaf` */
  const feedUntil = async (type: protobuf.Type, row: Record<string, unknown>, leaf: string): Promise<Buffer> => {
    const bytes = type.encode(type.fromObject(row)).finish();
    const end = Date.now() + 30_000;
    const got = () => outputs.find((o) => o.topic === `${topic}/out/${leaf}`);
    while (!got()) {
      if (Date.now() > end) assert.fail(`no output on ${leaf}`);
      await pub.publishAsync(`${topic}/in`, Buffer.from(bytes));
      await new Promise((r) => setTimeout(r, 50));
    }
    return got()!.payload;
  };
  try {
    await created(s, '/schemas/protobuf', { name: schema, content: V1 });
    await created(s, '/streams', {
      sql: `CREATE STREAM in_${tag} () WITH (DATASOURCE="${topic}/in", FORMAT="protobuf", SCHEMAID="${schema}.Reading")`,
    });
    const first = idOn(s, `pw1_${tag}_`, 0);
    await created(s, '/rules', {
      id: first,
      sql: `SELECT id, name FROM in_${tag}`,
      actions: [mqttOut('first', `${schema}.Reading`)],
    });
    const st1 = await status(s, first);
    assert.equal(st1.worker, 0, `the protobuf rule runs on its worker: ${JSON.stringify(st1)}`);

    const v1 = protobuf.parse(V1, { keepCase: true }).root.lookupType('Reading');
    // an int64 beyond 2^53 crosses decode and encode exactly
    const big = '9007199254740993';
    const out1 = v1.toObject(v1.decode(await feedUntil(v1, { id: big, name: 'one' }, 'first')), { longs: String });
    assert.deepEqual(out1, { id: big, name: 'one' });

    // replaced: a rule created afterwards, on the same worker, reads and writes the new messages
    const r = await s.req('PUT', `/schemas/protobuf/${schema}`, { name: schema, content: V2 });
    assert.equal(r.status, 200, r.text);
    const second = idOn(s, `pw2_${tag}_`, 0);
    await created(s, '/rules', {
      id: second,
      sql: `SELECT name AS label, id, temp FROM in_${tag}`,
      actions: [mqttOut('second', `${schema}.Alert`)],
    });
    assert.equal((await status(s, second)).worker, 0);
    const v2 = protobuf.parse(V2, { keepCase: true }).root;
    const alert = v2.lookupType('Alert');
    const out2 = alert.toObject(
      alert.decode(await feedUntil(v2.lookupType('Reading'), { id: 7, name: 'two', temp: 21.5 }, 'second')),
      { longs: String },
    );
    assert.deepEqual(out2, { label: 'two', id: '7', temp: 21.5 });
  } finally {
    await pub.endAsync();
    await sub.endAsync(true);
    await s.dispose();
  }
});

test('a missing message type or schema is refused as on the main thread', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const tag = uniqueTopic('protoerr').replace(/\W/g, '_');
  const schema = `pe_${tag}`;
  const refused = async (schemaId: string): Promise<unknown> => {
    const r = await s.req('POST', '/rules', {
      id: idOn(s, `pe_${tag}_`, 1),
      sql: `SELECT id FROM in_${tag}`,
      actions: [{ nop: { format: 'protobuf', schemaId } }],
    });
    assert.equal(r.status, 400, r.text);
    return r.json();
  };
  try {
    await created(s, '/schemas/protobuf', { name: schema, content: V2 });
    await created(s, '/streams', {
      sql: `CREATE STREAM in_${tag} () WITH (DATASOURCE="${tag}/in", FORMAT="protobuf", SCHEMAID="${schema}.Reading")`,
    });
    assert.deepEqual(await refused(`${schema}.Nope`), {
      error: 2201,
      message: `cannot find message Nope in schema ${schema}`,
    });
    assert.equal((await s.req('DELETE', `/schemas/protobuf/${schema}`)).status, 200);
    assert.deepEqual(await refused(`${schema}.Alert`), {
      error: 4000,
      message: `schema type protobuf, file ${schema} not found`,
    });
  } finally {
    await s.dispose();
  }
});
