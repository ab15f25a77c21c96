import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { startTestServer } from '../../helpers/server.js';
import { ProtobufFormat, protobufFields } from '../../../src/connectors/formats/protobuf.js';

const PROTO = `syntax = "proto3";
enum Level { LOW = 0; HIGH = 1; }
message Point { double x = 1; double y = 2; }
message Reading {
  int64 id = 1;
  uint64 big = 2;
  int32 small = 3;
  double temp = 4;
  float ratio = 5;
  bool ok = 6;
  string name = 7;
  bytes raw = 8;
  Level level = 9;
  Point where = 10;
  repeated Point path = 11;
  repeated int64 counts = 12;
  map<string, int32> tags = 13;
  repeated string labels = 14;
}
`;

/** An independent protobufjs view of the same schema, as a client of Eddy would use. */
const client = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('Reading');

test('protobuf decode: int64 as bigint beyond 2^53, nested and repeated messages, enums, bytes, defaults', async () => {
  const s = await startTestServer();
  try {
    assert.equal((await s.req('POST', '/schemas/protobuf', { name: 'sensors', content: PROTO })).status, 201);
    const fmt = new ProtobufFormat(s.app.schemas, { schemaId: 'sensors.Reading' });
    const bytes = client
      .encode(
        client.fromObject({
          id: '9007199254740993',
          big: '18446744073709551615',
          small: -7,
          temp: 21.5,
          ratio: 0.5,
          ok: true,
          name: 'kitchen',
          raw: Buffer.from([1, 2, 3]),
          level: 'HIGH',
          where: { x: 1, y: 2 },
          path: [
            { x: 0, y: 0 },
            { x: 3.5, y: -1 },
          ],
          counts: ['-5', '12'],
          tags: { a: 1, b: 2 },
          labels: ['x', 'y'],
        }),
      )
      .finish();
    assert.deepEqual(fmt.decode(bytes), {
      id: 9007199254740993n,
      big: 18446744073709551615n,
      small: -7n,
      temp: 21.5,
      ratio: 0.5,
      ok: true,
      name: 'kitchen',
      raw: new Uint8Array([1, 2, 3]),
      level: 1n,
      where: { x: 1, y: 2 },
      path: [
        { x: 0, y: 0 },
        { x: 3.5, y: -1 },
      ],
      counts: [-5n, 12n],
      tags: { a: 1n, b: 2n },
      labels: ['x', 'y'],
    });

    // an empty message reads every scalar at its default, an unset message as null, repeated as []
    assert.deepEqual(fmt.decode(new Uint8Array(0)), {
      id: 0n,
      big: 0n,
      small: 0n,
      temp: 0,
      ratio: 0,
      ok: false,
      name: '',
      raw: new Uint8Array(0),
      level: 0n,
      where: null,
      path: [],
      counts: [],
      tags: {},
      labels: [],
    });
  } finally {
    await s.dispose();
  }
});

test('protobuf encode: a row reads back identically with an independent decoder; extra keys ignored', async () => {
  const s = await startTestServer();
  try {
    await s.req('POST', '/schemas/protobuf', { name: 'sensors', content: PROTO });
    const fmt = new ProtobufFormat(s.app.schemas, { schemaId: 'sensors.Reading' });
    const row = {
      id: -9007199254740993n,
      big: 18446744073709551615n,
      small: 42n,
      temp: 3.25,
      ok: true,
      name: 'hall',
      raw: new Uint8Array([9, 8]),
      level: 1n,
      where: { x: 0.5, y: 1.5 },
      path: [{ x: 1, y: 1 }],
      counts: [1n, 2n, 3n],
      tags: { k: 7n },
      labels: ['a'],
      notInSchema: 'dropped',
      alsoNull: null,
    };
    const out = fmt.encode([row]);
    const back = client.toObject(client.decode(out), { longs: String, enums: String, bytes: Array, defaults: true });
    assert.deepEqual(back, {
      id: '-9007199254740993',
      big: '18446744073709551615',
      small: 42,
      temp: 3.25,
      ratio: 0,
      ok: true,
      name: 'hall',
      raw: [9, 8],
      level: 'HIGH',
      where: { x: 0.5, y: 1.5 },
      path: [{ x: 1, y: 1 }],
      counts: ['1', '2', '3'],
      tags: { k: 7 },
      labels: ['a'],
    });
    // and Eddy's own decoder gives the row back (minus the keys the message does not have)
    const { notInSchema: _a, alsoNull: _b, ...expected } = row;
    assert.deepEqual(fmt.decode(out), { ...expected, ratio: 0 });

    // numbers of the other kind convert; impossible values fail with the field named
    const converted = client.toObject(client.decode(fmt.encode({ id: 5, temp: 2n, name: 12n })), { longs: String });
    assert.deepEqual(converted, { id: '5', temp: 2, name: '12' });
    assert.throws(() => fmt.encode({ where: 'nope' }), /where/);
    assert.throws(() => fmt.encode({ small: 'abc' }), /small/);
    assert.throws(() => fmt.encode([row, row]), /sendSingle/);
  } finally {
    await s.dispose();
  }
});

test('protobuf schemaId errors and the fields a message describes', async () => {
  const s = await startTestServer();
  try {
    await s.req('POST', '/schemas/protobuf', { name: 'sensors', content: PROTO });
    assert.throws(
      () => new ProtobufFormat(s.app.schemas, { schemaId: 'nosuch.Reading' }),
      /schema type protobuf, file nosuch not found/,
    );
    assert.throws(() => new ProtobufFormat(s.app.schemas, { schemaId: 'sensors.Nope' }), /Nope/);
    assert.throws(() => new ProtobufFormat(s.app.schemas, {}), /schemaId/);
    const fields = protobufFields(s.app.schemas, 'sensors.Point');
    assert.deepEqual(fields, [
      { name: 'x', type: { kind: 'float' } },
      { name: 'y', type: { kind: 'float' } },
    ]);
    const reading = protobufFields(s.app.schemas, 'sensors.Reading');
    assert.deepEqual(
      reading.map((f) => [f.name, f.type.kind]),
      [
        ['id', 'bigint'],
        ['big', 'bigint'],
        ['small', 'bigint'],
        ['temp', 'float'],
        ['ratio', 'float'],
        ['ok', 'boolean'],
        ['name', 'string'],
        ['raw', 'bytea'],
        ['level', 'bigint'],
        ['where', 'struct'],
        ['path', 'array'],
        ['counts', 'array'],
        ['tags', 'struct'],
        ['labels', 'array'],
      ],
    );
    assert.deepEqual(reading[10].type, {
      kind: 'array',
      element: { kind: 'struct', fields: fields },
    });
  } finally {
    await s.dispose();
  }
});

const E2E_PROTO = `syntax = "proto3";
message Point { double x = 1; double y = 2; }
message Reading {
  int64 id = 1;
  double t = 2;
  string name = 3;
  Point loc = 4;
  repeated Point path = 5;
  repeated int64 counts = 6;
}
`;

test('a protobuf stream decodes messages from Mosquitto; a protobuf sink publishes what protobufjs reads back', async () => {
  const { Broker, ok, uid } = await import('../../bundle/helpers.js');
  const s = await startTestServer();
  const broker = await Broker.connect();
  const pb = protobuf.parse(E2E_PROTO, { keepCase: true }).root.lookupType('Reading');
  try {
    const schema = uid('pb');
    const stream = uid('ps');
    const inTopic = `eddy/protobuf/${uid('in')}`;
    const jsonOut = `eddy/protobuf/${uid('json')}`;
    const pbOut = `eddy/protobuf/${uid('pb')}`;
    await ok(s, 'POST', '/schemas/protobuf', { name: schema, content: E2E_PROTO });
    await ok(s, 'POST', '/streams', {
      sql: `CREATE STREAM ${stream} () WITH (DATASOURCE="${inTopic}", FORMAT="protobuf", SCHEMAID="${schema}.Reading")`,
    });
    const schemaView = (await ok(s, 'GET', `/streams/${stream}/schema`)).json();
    assert.deepEqual(schemaView.id, { type: 'bigint' });
    assert.deepEqual(schemaView.loc, { type: 'struct', properties: { x: { type: 'float' }, y: { type: 'float' } } });
    assert.deepEqual(schemaView.counts, { type: 'array', items: { type: 'bigint' } });

    await broker.subscribe(jsonOut);
    await broker.subscribe(pbOut);
    const mqttSink = (topic: string, extra: Record<string, unknown> = {}) => ({
      mqtt: { server: 'tcp://127.0.0.1:1883', topic, sendSingle: true, ...extra },
    });
    await ok(s, 'POST', '/rules', {
      id: uid('pj'),
      sql: `SELECT id, t, name, loc, path, counts FROM ${stream}`,
      actions: [mqttSink(jsonOut)],
    });
    await ok(s, 'POST', '/rules', {
      id: uid('pp'),
      sql: `SELECT id + 1 AS id, t * 2 AS t, upper(name) AS name, loc, path, counts FROM ${stream}`,
      actions: [mqttSink(pbOut, { format: 'protobuf', schemaId: `${schema}.Reading` })],
    });

    const input = {
      id: '9007199254740993',
      t: 1.25,
      name: 'north',
      loc: { x: 1.5, y: -2 },
      path: [
        { x: 0, y: 0 },
        { x: 2, y: 3 },
      ],
      counts: ['1', '-2'],
    };
    const bytes = pb.encode(pb.fromObject(input)).finish();
    const json = (await broker.roundTrip(inTopic, bytes, jsonOut)).toString();
    // int64 stays exact beyond 2^53
    assert.match(json, /"id":9007199254740993[,}]/);
    const parsed = JSON.parse(json);
    assert.equal(parsed.name, 'north');
    assert.equal(parsed.t, 1.25);
    assert.deepEqual(parsed.loc, { x: 1.5, y: -2 });
    assert.deepEqual(parsed.path, [
      { x: 0, y: 0 },
      { x: 2, y: 3 },
    ]);
    assert.deepEqual(parsed.counts, [1, -2]);

    const out = await broker.roundTrip(inTopic, bytes, pbOut);
    assert.deepEqual(pb.toObject(pb.decode(out), { longs: String, defaults: true }), {
      id: '9007199254740994',
      t: 2.5,
      name: 'NORTH',
      loc: { x: 1.5, y: -2 },
      path: [
        { x: 0, y: 0 },
        { x: 2, y: 3 },
      ],
      counts: ['1', '-2'],
    });
  } finally {
    await broker.close();
    await s.dispose();
  }
});
