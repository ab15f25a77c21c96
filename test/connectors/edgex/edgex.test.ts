import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { connectAsync } from 'mqtt';
import { connect as natsConnect } from 'nats';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import type { ValueObject } from '../../../src/values/value.js';
import { until } from '../helpers.js';

const uid = (): string => Math.random().toString(36).slice(2, 8);

/** A plain client of one transport: publish raw bytes on a bus topic, collect what arrives on a bus topic. */
interface Peer {
  publish(topic: string, data: string): Promise<void>;
  subscribe(topic: string, got: Array<[string, string]>): Promise<void>;
  close(): Promise<void>;
}

async function redisPeer(): Promise<Peer> {
  const pub = new Redis({ host: '127.0.0.1', port: 6379 });
  const sub = new Redis({ host: '127.0.0.1', port: 6379 });
  return {
    publish: async (t, d) => void (await pub.publish(t, d)),
    subscribe: async (t, got) => {
      sub.on('pmessage', (_p: string, c: string, m: string) => got.push([c, m]));
      await sub.psubscribe(t);
    },
    close: async () => {
      pub.disconnect();
      sub.disconnect();
    },
  };
}

async function mqttPeer(): Promise<Peer> {
  const c = await connectAsync('tcp://127.0.0.1:1883', { reconnectPeriod: 0 });
  return {
    publish: async (t, d) => void (await c.publishAsync(t, d, { qos: 1 })),
    subscribe: async (t, got) => {
      c.on('message', (topic, m) => got.push([topic, m.toString('utf8')]));
      await c.subscribeAsync(t, { qos: 1 });
    },
    close: () => c.endAsync(true),
  };
}

async function natsPeer(): Promise<Peer> {
  const nc = await natsConnect({ servers: '127.0.0.1:4222' });
  return {
    publish: async (t, d) => {
      nc.publish(t, new TextEncoder().encode(d));
      await nc.flush();
    },
    subscribe: async (t, got) => {
      nc.subscribe(t, { callback: (_e, m) => got.push([m.subject, new TextDecoder().decode(m.data)]) });
      await nc.flush();
    },
    close: () => nc.close(),
  };
}

const ORIGIN = 1_700_000_000_123_456_789n;

/** A hand-built EdgeX v3 envelope of one event with typed readings. */
function edgexEnvelope(deviceName: string, request: boolean, base64: boolean): string {
  const reading = (resourceName: string, valueType: string, extra: Record<string, unknown>) => ({
    id: `r-${resourceName}`,
    origin: '__ORIGIN__',
    deviceName,
    resourceName,
    profileName: 'thermo',
    valueType,
    ...extra,
  });
  const event = {
    apiVersion: 'v3',
    id: 'ev-1',
    deviceName,
    profileName: 'thermo',
    sourceName: 'climate',
    origin: '__ORIGIN__',
    tags: { site: 'north' },
    readings: [
      reading('Temperature', 'Float64', { value: '2.150000e+01' }),
      reading('Count', 'Uint32', { value: '42' }),
      reading('Open', 'Bool', { value: 'true' }),
      reading('Label', 'String', { value: 'hall' }),
      reading('Levels', 'Int16Array', { value: '[1, 2, 3]' }),
      reading('Raw', 'Binary', {
        binaryValue: Buffer.from('hi').toString('base64'),
        mediaType: 'text/plain',
        value: '',
      }),
      reading('Cfg', 'Object', { objectValue: { mode: 'auto' }, value: '' }),
    ],
  };
  const payload = request ? { apiVersion: 'v3', requestId: 'req-1', event } : event;
  const text = (o: unknown) => JSON.stringify(o).replace(/"__ORIGIN__"/g, ORIGIN.toString());
  const inner = text(payload);
  const body = base64 ? `"${Buffer.from(inner).toString('base64')}"` : inner;
  return `{"apiVersion":"v3","receivedTopic":"","correlationID":"c-1","requestID":"","errorCode":0,"contentType":"application/json","payload":${body}}`;
}

const transports: Array<{ type: string; port: number; peer: () => Promise<Peer>; topic: (t: string) => string }> = [
  { type: 'redis', port: 6379, peer: redisPeer, topic: (t) => t.replace(/\//g, '.') },
  { type: 'mqtt', port: 1883, peer: mqttPeer, topic: (t) => t },
  { type: 'nats-core', port: 4222, peer: natsPeer, topic: (t) => t.replace(/\//g, '.') },
];

async function running(s: TestServer, rid: string): Promise<void> {
  let text = '';
  const end = Date.now() + 15_000;
  while (!/"status":\s*"running"/.test(text)) {
    if (Date.now() > end) throw new Error(`rule ${rid} not running: ${text}`);
    text = (await s.req('GET', `/rules/${rid}/status`)).text;
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const tr of transports) {
  test(`edgex source and sink over ${tr.type}: typed readings and metadata in, events out (plain ${tr.type} client as the peer)`, async () => {
    const s = await startTestServer();
    const peer = await tr.peer();
    const id = uid();
    const rows: ValueObject[] = [];
    const closeMem = s.app.connectors.memory.subscribe(`edgex/${id}/out`, (m) => rows.push(m.row));
    try {
      const bus = { type: tr.type, protocol: 'tcp', server: '127.0.0.1', port: tr.port };
      assert.equal(
        (await s.req('PUT', `/metadata/sources/edgex/confKeys/ev${id}`, { ...bus, topic: `edgex/${id}/events/#` }))
          .status,
        200,
      );
      assert.equal(
        (
          await s.req('PUT', `/metadata/sources/edgex/confKeys/rq${id}`, {
            ...bus,
            topic: `edgex/${id}/requests/#`,
            messageType: 'request',
          })
        ).status,
        200,
      );
      for (const k of ['ev', 'rq'])
        assert.equal(
          (
            await s.req('POST', '/streams', {
              sql: `CREATE STREAM ex${k}${id} () WITH (TYPE="edgex", CONF_KEY="${k}${id}")`,
            })
          ).status,
          201,
        );
      const sql = (k: string) =>
        `SELECT *, meta(deviceName) AS dev, meta(profileName) AS prof, meta(sourceName) AS src, meta(origin) AS origin, meta(tags) AS tags, meta(Temperature) AS tmeta, Count / 5 AS fifth FROM ex${k}${id}`;
      for (const k of ['ev', 'rq']) {
        assert.equal(
          (
            await s.req('POST', '/rules', {
              id: `r${k}${id}`,
              sql: sql(k),
              actions: [{ memory: { topic: `edgex/${id}/out`, sendSingle: true } }],
            })
          ).status,
          201,
        );
        await running(s, `r${k}${id}`);
      }
      await peer.publish(tr.topic(`edgex/${id}/events/thermo/dev1`), edgexEnvelope('dev1', false, false));
      await peer.publish(tr.topic(`edgex/${id}/requests/thermo/dev2`), edgexEnvelope('dev2', true, true));
      // an event without readings is dropped
      await peer.publish(
        tr.topic(`edgex/${id}/events/x`),
        '{"apiVersion":"v3","contentType":"application/json","payload":{"apiVersion":"v3","id":"e","deviceName":"d","readings":[]}}',
      );
      await until(() => rows.length >= 2, 15_000, 'edgex rows');
      const byDev = Object.fromEntries(rows.map((r) => [r.dev, r]));
      const r1 = byDev.dev1;
      assert.equal(r1.Temperature, 21.5);
      assert.equal(r1.Count, 42n);
      assert.equal(r1.fifth, 8n, 'an unsigned reading is an integer');
      assert.equal(r1.Open, true);
      assert.equal(r1.Label, 'hall');
      assert.deepEqual(r1.Levels, [1n, 2n, 3n]);
      assert.equal(Buffer.from(r1.Raw as Uint8Array).toString(), 'hi');
      assert.deepEqual(r1.Cfg, { mode: 'auto' });
      assert.equal(r1.prof, 'thermo');
      assert.equal(r1.src, 'climate');
      assert.equal(r1.origin, ORIGIN, 'the nanosecond origin keeps all its digits');
      assert.deepEqual(r1.tags, { site: 'north' });
      assert.deepEqual(r1.tmeta, {
        id: 'r-Temperature',
        origin: ORIGIN,
        deviceName: 'dev1',
        profileName: 'thermo',
        valueType: 'Float64',
      });
      assert.equal(byDev.dev2.Label, 'hall', 'an AddEventRequest with a base64 payload');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(rows.length, 2);

      // sink: rows of a memory stream published as EdgeX events, read back by the plain client
      const got: Array<[string, string]> = [];
      await peer.subscribe(tr.topic(`edgex/${id}/app/#`).replace(/\.#$/, tr.type === 'nats-core' ? '.>' : '.*'), got);
      assert.equal(
        (
          await s.req('POST', '/streams', {
            sql: `CREATE STREAM exin${id} () WITH (TYPE="memory", DATASOURCE="edgex/${id}/in")`,
          })
        ).status,
        201,
      );
      assert.equal(
        (
          await s.req('POST', '/rules', {
            id: `sk${id}`,
            sql: `SELECT temperature, count, ok, name, levels, m FROM exin${id}`,
            actions: [
              { edgex: { ...bus, topicPrefix: `edgex/${id}/app`, metadata: 'm', profileName: 'fallbackProfile' } },
            ],
          })
        ).status,
        201,
      );
      assert.equal(
        (
          await s.req('POST', '/rules', {
            id: `sr${id}`,
            sql: `SELECT temperature FROM exin${id}`,
            actions: [
              { edgex: { ...bus, topic: `edgex/${id}/app/fixed`, messageType: 'request', deviceName: 'devX' } },
            ],
          })
        ).status,
        201,
      );
      await running(s, `sk${id}`);
      await running(s, `sr${id}`);
      s.app.connectors.memory.publish({
        topic: `edgex/${id}/in`,
        row: {
          temperature: 21.5,
          count: 7n,
          ok: false,
          name: 'n1',
          levels: [1.5, 2],
          m: { deviceName: 'devM', temperature: { valueType: 'Float32' } },
        } as ValueObject,
      });
      await until(() => got.length >= 2, 15_000, 'edgex sink messages');
      const byTopic = Object.fromEntries(got.map(([t, m]) => [t, JSON.parse(m) as Record<string, unknown>]));
      const evTopic = tr.topic(`edgex/${id}/app/fallbackProfile/devM/sk${id}`);
      const env = byTopic[evTopic] as { apiVersion: string; contentType: string; payload: Record<string, unknown> };
      assert.ok(env, `event on ${evTopic}; got ${Object.keys(byTopic).join(', ')}`);
      assert.equal(env.apiVersion, 'v3');
      assert.equal(env.contentType, 'application/json');
      const ev = env.payload as {
        deviceName: string;
        profileName: string;
        sourceName: string;
        readings: Array<Record<string, unknown>>;
      };
      assert.equal(ev.deviceName, 'devM');
      assert.equal(ev.profileName, 'fallbackProfile');
      assert.equal(ev.sourceName, `sk${id}`);
      const readings = Object.fromEntries(ev.readings.map((r) => [r.resourceName, r]));
      assert.deepEqual(Object.keys(readings).sort(), ['count', 'levels', 'name', 'ok', 'temperature']);
      assert.equal(readings.temperature.valueType, 'Float32', 'type from the metadata field');
      assert.equal(readings.temperature.value, '2.15e+01');
      assert.equal(readings.count.valueType, 'Int64');
      assert.equal(readings.count.value, '7');
      assert.equal(readings.ok.valueType, 'Bool');
      assert.equal(readings.ok.value, 'false');
      assert.equal(readings.name.value, 'n1');
      assert.equal(readings.levels.valueType, 'Float64Array');
      assert.equal(readings.levels.value, '[1.5e+00, 2e+00]');
      const req = byTopic[tr.topic(`edgex/${id}/app/fixed`)] as {
        payload: { requestId: string; event: { deviceName: string; readings: unknown[] } };
      };
      assert.ok(req.payload.requestId);
      assert.equal(req.payload.event.deviceName, 'devX');
      assert.equal(req.payload.event.readings.length, 1);
    } finally {
      closeMem();
      await peer.close();
      await s.dispose();
    }
  });
}

test('edgex connectionSelector: the bus settings come from a shared edgex connection config key', async () => {
  const s = await startTestServer();
  const peer = await mqttPeer();
  const id = uid();
  const rows: ValueObject[] = [];
  const closeMem = s.app.connectors.memory.subscribe(`edgex/${id}/sel`, (m) => rows.push(m.row));
  try {
    assert.equal(
      (
        await s.req('PUT', `/metadata/connections/edgex/confKeys/bus${id}`, {
          type: 'mqtt',
          protocol: 'tcp',
          server: '127.0.0.1',
          port: 1883,
        })
      ).status,
      200,
    );
    // the key's own bus properties point nowhere: the selected connection wins
    assert.equal(
      (
        await s.req('PUT', `/metadata/sources/edgex/confKeys/k${id}`, {
          type: 'redis',
          server: '127.0.0.1',
          port: 1,
          topic: `edgex/${id}/sel/#`,
          connectionSelector: `edgex.bus${id}`,
        })
      ).status,
      200,
    );
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM exsel${id} () WITH (TYPE="edgex", CONF_KEY="k${id}")` }))
        .status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `rsel${id}`,
          sql: `SELECT Label FROM exsel${id}`,
          actions: [{ memory: { topic: `edgex/${id}/sel`, sendSingle: true } }],
        })
      ).status,
      201,
    );
    await running(s, `rsel${id}`);
    await peer.publish(`edgex/${id}/sel/thermo/dev1`, edgexEnvelope('dev1', false, false));
    await until(() => rows.length >= 1, 15_000, 'a row through the selected connection');
    assert.deepEqual(rows[0], { Label: 'hall' });
    const missing = await s.req('POST', '/rules', {
      id: `rmiss${id}`,
      sql: `SELECT * FROM exsel${id}`,
      actions: [{ edgex: { connectionSelector: `edgex.none${id}` } }],
    });
    assert.equal(missing.status, 400);
    assert.match(missing.text, /connection selector edgex\.none\w+ is not found/);
  } finally {
    closeMem();
    await peer.close();
    await s.dispose();
  }
});
