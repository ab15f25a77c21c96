/**
 * The EdgeX message bus as the edgex source and sink see it (docs/connectors.md edgex): publish and subscribe of
 * message envelopes on EdgeX topics (`/` separated, `#` and `+` wildcards) over Redis pub/sub, MQTT or NATS core.
 * Redis and NATS spell topics with `.` (EdgeX's own clients translate the same way: `/` → `.`, `#` → `*` on
 * Redis and `>` on NATS, `+` → `*`); MQTT carries them as they are. Connection settings come from the connector
 * properties or, with `connectionSelector: edgex.<key>`, from a shared connection config key.
 */
import type { Redis } from 'ioredis';
import type { NatsConnection, Subscription } from 'nats';
import { lazy } from '../../core/lazy.js';
import type { Props } from '../../contracts/index.js';
import type { ConfKeys } from '../confkeys.js';
import type { MqttConn, MqttPool } from '../mqtt/connection.js';
import { openRedis } from '../redis/common.js';
import { prop, propInt, propString } from '../props.js';

const nats = lazy(() => import('nats'));

export type BusType = 'redis' | 'mqtt' | 'nats-core';

export interface BusSettings {
  type: BusType;
  protocol: string;
  host: string;
  port: number;
  /** the `optional` map: ClientId, Username, Password, Qos, Retained, … (string values) */
  optional: Record<string, string>;
}

export type BusHandler = (topic: string, payload: Uint8Array) => void;

export interface EdgexBus {
  subscribe(topic: string, handler: BusHandler): Promise<void>;
  publish(topic: string, payload: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

/** Reads the bus settings, resolving a `connectionSelector`; throws naming the bad property. */
export function busSettings(props: Props, confKeys: ConfKeys): BusSettings {
  let p = props;
  const selector = propString(props, 'connectionSelector');
  if (selector) {
    const dot = selector.indexOf('.');
    const type = dot < 0 ? selector : selector.slice(0, dot);
    const conn =
      type === 'edgex' ? confKeys.connectionProps('edgex', dot < 0 ? '' : selector.slice(dot + 1)) : undefined;
    if (!conn) throw new Error(`connection selector ${selector} is not found`);
    p = conn;
  }
  const type = propString(p, 'type', 'redis');
  if (type === 'nats-jetstream')
    throw new Error('edgex message bus type nats-jetstream is not supported, use nats-core');
  if (type !== 'redis' && type !== 'mqtt' && type !== 'nats-core')
    throw new Error(`specified wrong type value ${type}`);
  const host = propString(p, 'server') ?? propString(p, 'host', 'localhost');
  const port = propInt(p, 'port', 6379);
  if (port < 0) throw new Error(`specified wrong port value, expect positive integer but got ${port}`);
  const optionalRaw = prop(p, 'optional');
  const optional: Record<string, string> = {};
  if (optionalRaw !== undefined && optionalRaw !== null) {
    if (typeof optionalRaw !== 'object' || Array.isArray(optionalRaw))
      throw new Error('optional should be a map of strings');
    for (const [k, v] of Object.entries(optionalRaw)) optional[k] = String(v);
  }
  return { type, protocol: propString(p, 'protocol', 'redis'), host, port, optional };
}

/** The bus spelling of an EdgeX topic (filters included). */
export function busTopic(type: BusType, topic: string): string {
  if (type === 'mqtt') return topic;
  return topic
    .replace(/\//g, '.')
    .replace(/\+/g, '*')
    .replace(/#/g, type === 'redis' ? '*' : '>');
}

function opt(s: BusSettings, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(s.optional)) if (k.toLowerCase() === lower && v !== '') return v;
  return undefined;
}

class RedisBus implements EdgexBus {
  private sub: Redis | undefined;
  private pub: Redis | undefined;
  private readonly handlers: Array<[string, BusHandler]> = [];

  constructor(private readonly s: BusSettings) {}

  private settings() {
    return {
      addr: `${this.s.host}:${this.s.port}`,
      db: 0,
      username: opt(this.s, 'Username'),
      password: opt(this.s, 'Password'),
    };
  }

  async subscribe(topic: string, handler: BusHandler): Promise<void> {
    if (!this.sub) {
      const client = await openRedis(this.settings());
      this.sub = client;
      client.on('pmessageBuffer', (pattern: Buffer, channel: Buffer, message: Buffer) => {
        const p = pattern.toString('utf8');
        for (const [filter, h] of this.handlers) if (filter === p) h(channel.toString('utf8'), new Uint8Array(message));
      });
    }
    const pattern = busTopic('redis', topic);
    this.handlers.push([pattern, handler]);
    await this.sub.psubscribe(pattern);
  }

  async publish(topic: string, payload: Uint8Array): Promise<void> {
    if (!this.pub) this.pub = await openRedis(this.settings());
    await this.pub.publish(
      busTopic('redis', topic),
      Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
    );
  }

  async close(): Promise<void> {
    this.sub?.disconnect();
    this.pub?.disconnect();
    this.sub = this.pub = undefined;
  }
}

class MqttBus implements EdgexBus {
  private conn: MqttConn | undefined;
  private readonly unsubscribes: Array<() => void> = [];
  private readonly qos: 0 | 1 | 2;
  private readonly retained: boolean;

  constructor(
    private readonly s: BusSettings,
    private readonly pool: MqttPool,
  ) {
    const q = Number(opt(s, 'Qos') ?? 0);
    this.qos = q === 1 || q === 2 ? q : 0;
    this.retained = opt(s, 'Retained') === 'true';
  }

  private async open(): Promise<MqttConn> {
    if (this.conn) return this.conn;
    const scheme =
      this.s.protocol === 'ssl' || this.s.protocol === 'tls' ? 'ssl' : this.s.protocol === 'ws' ? 'ws' : 'tcp';
    const conn = this.pool.acquire({
      server: `${scheme}://${this.s.host}:${this.s.port}`,
      protocolVersion: 4,
      ...(opt(this.s, 'ClientId') ? { clientId: opt(this.s, 'ClientId') } : {}),
      ...(opt(this.s, 'Username') ? { username: opt(this.s, 'Username'), password: opt(this.s, 'Password') } : {}),
    });
    this.conn = conn;
    try {
      await conn.waitConnected();
    } catch (e) {
      this.conn = undefined;
      conn.release();
      throw e;
    }
    return conn;
  }

  async subscribe(topic: string, handler: BusHandler): Promise<void> {
    const conn = await this.open();
    this.unsubscribes.push(await conn.subscribe(topic, this.qos, (t, payload) => handler(t, new Uint8Array(payload))));
  }

  async publish(topic: string, payload: Uint8Array): Promise<void> {
    const conn = await this.open();
    await conn.publish(topic, payload, this.qos, this.retained);
  }

  async close(): Promise<void> {
    for (const u of this.unsubscribes.splice(0)) u();
    this.conn?.release();
    this.conn = undefined;
  }
}

class NatsBus implements EdgexBus {
  private nc: NatsConnection | undefined;
  private readonly subs: Subscription[] = [];

  constructor(private readonly s: BusSettings) {}

  private async open(): Promise<NatsConnection> {
    if (!this.nc) {
      const { connect } = await nats();
      this.nc = await connect({
        servers: `${this.s.host}:${this.s.port}`,
        user: opt(this.s, 'Username'),
        pass: opt(this.s, 'Password'),
        name: opt(this.s, 'ClientId'),
        timeout: 5000,
        maxReconnectAttempts: -1,
      });
    }
    return this.nc;
  }

  async subscribe(topic: string, handler: BusHandler): Promise<void> {
    const nc = await this.open();
    const sub = nc.subscribe(busTopic('nats-core', topic), {
      callback: (err, msg) => {
        if (!err) handler(msg.subject, msg.data);
      },
    });
    this.subs.push(sub);
  }

  async publish(topic: string, payload: Uint8Array): Promise<void> {
    const nc = await this.open();
    nc.publish(busTopic('nats-core', topic), payload);
  }

  async close(): Promise<void> {
    for (const s of this.subs.splice(0)) s.unsubscribe();
    const nc = this.nc;
    this.nc = undefined;
    if (nc) await nc.close();
  }
}

export function openBus(s: BusSettings, pool: MqttPool): EdgexBus {
  switch (s.type) {
    case 'redis':
      return new RedisBus(s);
    case 'mqtt':
      return new MqttBus(s, pool);
    case 'nats-core':
      return new NatsBus(s);
  }
}
