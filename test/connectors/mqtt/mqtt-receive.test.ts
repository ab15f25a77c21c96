/**
 * The QoS 0 receive path of pooled MQTT connections (src/connectors/mqtt/receive.ts), against a scripted broker on
 * loopback that writes exactly the bytes a test chooses, split where it chooses: messages arrive whole and in order
 * whatever the split, QoS 1 messages among them keep their place, a connection held back delivers nothing until it
 * is released, and bytes that are not MQTT reach MQTT.js's parser, which reports them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { loadMqttClient, MqttPool, type MqttConn } from '../../../src/connectors/mqtt/connection.js';
import { until } from '../helpers.js';

/** the remaining-length field of an MQTT packet */
function remaining(n: number): number[] {
  const out: number[] = [];
  do {
    let digit = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) digit |= 0x80;
    out.push(digit);
  } while (n > 0);
  return out;
}

function publish(topic: string, payload: string | Buffer, qos: 0 | 1 = 0, messageId = 1, retain = false): Buffer {
  const t = Buffer.from(topic, 'utf8');
  const p = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const id = qos > 0 ? [messageId >> 8, messageId & 0xff] : [];
  const body = Buffer.concat([Buffer.from([t.length >> 8, t.length & 0xff]), t, Buffer.from(id), p]);
  return Buffer.concat([Buffer.from([0x30 | (qos << 1) | (retain ? 1 : 0), ...remaining(body.length)]), body]);
}

/** A broker that answers CONNECT and SUBSCRIBE and then writes what the test gives it. */
class ScriptedBroker {
  private server: Server | undefined;
  socket: Socket | undefined;
  port = 0;
  /** packet types (high nibble) the client sent */
  readonly received: number[] = [];
  subscribed = false;

  async start(): Promise<void> {
    this.server = createServer((socket) => {
      this.socket = socket;
      socket.setNoDelay(true);
      let pending = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        pending = Buffer.concat([pending, chunk]);
        for (;;) {
          if (pending.length < 2) return;
          let at = 1;
          let length = 0;
          let factor = 1;
          let digit: number;
          do {
            if (at >= pending.length) return;
            digit = pending[at++];
            length += (digit & 0x7f) * factor;
            factor *= 128;
          } while (digit & 0x80);
          if (pending.length < at + length) return;
          const type = pending[0] >> 4;
          const body = pending.subarray(at, at + length);
          pending = pending.subarray(at + length);
          this.received.push(type);
          if (type === 1) socket.write(Buffer.from([0x20, 0x02, 0x00, 0x00]));
          if (type === 8) {
            socket.write(Buffer.from([0x90, 0x03, body[0], body[1], 0x01]));
            this.subscribed = true;
          }
          if (type === 12) socket.write(Buffer.from([0xd0, 0x00]));
        }
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server!.address() as AddressInfo).port;
  }

  /** writes `bytes` in pieces of `step` bytes, waiting `gapMs` between pieces so that they arrive as separate reads */
  async write(bytes: Buffer, step = bytes.length, gapMs = 2): Promise<void> {
    for (let i = 0; i < bytes.length; i += step) {
      this.socket!.write(bytes.subarray(i, i + step));
      await new Promise((r) => setTimeout(r, gapMs));
    }
  }

  async stop(): Promise<void> {
    this.socket?.destroy();
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }
}

interface Session {
  broker: ScriptedBroker;
  pool: MqttPool;
  conn: MqttConn;
  /** [topic, payload text, qos] of every message handed to the subscription */
  got: Array<[string, string, number]>;
  /** messages MQTT.js itself emitted (the ones the tap left to it) */
  viaMqttJs: () => number;
}

async function session(filter = 'a/#'): Promise<Session> {
  const broker = new ScriptedBroker();
  await broker.start();
  // MQTT.js is imported when the mqtt connectors load (connectors/mqtt/index.ts); a bare pool loads it first
  await loadMqttClient();
  const pool = new MqttPool();
  const conn = pool.acquire({ server: `tcp://127.0.0.1:${broker.port}`, protocolVersion: 4 });
  const got: Array<[string, string, number]> = [];
  let viaMqttJs = 0;
  conn.client.on('message', () => viaMqttJs++);
  await conn.waitConnected();
  await conn.subscribe(filter, 1, (topic, payload, qos) => got.push([topic, payload.toString('utf8'), qos]));
  await until(() => broker.subscribed);
  return { broker, pool, conn, got, viaMqttJs: () => viaMqttJs };
}

async function end(s: Session): Promise<void> {
  await s.pool.close();
  await s.broker.stop();
}

test('QoS 0 messages are read off the socket by the tap, whole and in order, however the reads split them', async () => {
  const s = await session();
  try {
    assert.equal(s.conn.tapped, true);
    const sizes = [0, 1, 90, 126, 127, 128, 5000, 16_384, 300_000];
    const expected = sizes.map((n, i) => [`a/${i}/é`, String(i % 10).repeat(n), 0] as [string, string, number]);
    const bytes = Buffer.concat(expected.map(([t, p]) => publish(t, p)));
    // one piece per read at first (every split point inside the first packets), then larger pieces
    await s.broker.write(bytes.subarray(0, 200), 1, 1);
    await s.broker.write(bytes.subarray(200), 7_001, 1);
    await until(() => s.got.length === expected.length, 15_000, 'every message');
    assert.deepEqual(s.got, expected);
    assert.equal(s.viaMqttJs(), 0, 'no QoS 0 message went through MQTT.js');
  } finally {
    await end(s);
  }
});

test('a QoS 1 message among QoS 0 messages keeps its place, and is acknowledged by MQTT.js', async () => {
  const s = await session();
  try {
    await s.broker.write(
      Buffer.concat([
        publish('a/1', 'one'),
        publish('a/2', 'two', 1, 7),
        publish('a/3', 'three'),
        publish('a/4', 'four', 0, 0, true),
      ]),
    );
    await s.broker.write(publish('a/5', 'five'));
    await until(() => s.got.length === 5);
    assert.deepEqual(
      s.got.map(([t, p, q]) => `${t}=${p}@${q}`),
      ['a/1=one@0', 'a/2=two@1', 'a/3=three@0', 'a/4=four@0', 'a/5=five@0'],
    );
    // what followed the QoS 1 message in the same read went to MQTT.js too; the next read came back to the tap
    assert.equal(s.viaMqttJs(), 3);
    await until(() => s.broker.received.includes(4), 5000, 'the PUBACK');
  } finally {
    await end(s);
  }
});

test('a connection held back delivers nothing until released, then everything in order', async () => {
  const s = await session();
  try {
    const holder = {};
    s.conn.holdReading(holder);
    await s.broker.write(Buffer.concat([publish('a/1', 'one'), publish('a/2', 'two')]));
    await s.broker.write(publish('a/3', 'three'));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(s.got.length, 0);
    s.conn.releaseReading(holder);
    await until(() => s.got.length === 3);
    assert.deepEqual(
      s.got.map(([t, p]) => `${t}=${p}`),
      ['a/1=one', 'a/2=two', 'a/3=three'],
    );
    await s.broker.write(publish('a/4', 'four'));
    await until(() => s.got.length === 4);
  } finally {
    await end(s);
  }
});

test('bytes that are not MQTT (a five-byte length) go to MQTT.js, whose parser reports them', async () => {
  const s = await session();
  const errors: string[] = [];
  s.conn.client.on('error', (err) => errors.push(err.message));
  try {
    await s.broker.write(Buffer.concat([publish('a/1', 'one'), Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01])]));
    await until(() => errors.length > 0, 10_000, 'the parser error');
    assert.match(errors[0], /variable byte integer/i);
    assert.deepEqual(
      s.got.map(([t]) => t),
      ['a/1'],
    );
  } finally {
    await end(s);
  }
});
