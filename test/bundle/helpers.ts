/**
 * Helpers of the bundle tests: JSON requests with a JSON content type, unique names, polling, and an MQTT client on
 * the loopback Mosquitto that collects what rules publish.
 */
import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import type { TestServer } from '../helpers/server.js';

export interface Res {
  status: number;
  text: string;
  headers: Headers;
  json(): any;
}

export async function call(s: TestServer, method: string, path: string, body?: unknown): Promise<Res> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const res = await fetch(s.url + path, init);
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) };
}

/** Asserting wrapper: the request must answer `status`. */
export async function ok(s: TestServer, method: string, path: string, body?: unknown, status?: number): Promise<Res> {
  const r = await call(s, method, path, body);
  const want =
    status ??
    (method === 'POST' &&
    !path.startsWith('/data') &&
    !path.startsWith('/ruleset') &&
    !path.startsWith('/async') &&
    !path.includes('/start') &&
    !path.includes('/stop')
      ? 201
      : 200);
  if (r.status !== want) throw new Error(`${method} ${path} answered ${r.status} (want ${want}): ${r.text}`);
  return r;
}

export function uid(prefix: string): string {
  return `${prefix}_${randomBytes(4).toString('hex')}`;
}

export async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 10000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}

/** Rule id → status text of `GET /rules`. */
export async function ruleStates(s: TestServer): Promise<Record<string, string>> {
  const list = (await ok(s, 'GET', '/rules')).json() as Array<{ id: string; status: string }>;
  return Object.fromEntries(list.map((r) => [r.id, r.status]));
}

export class Broker {
  private constructor(
    readonly client: MqttClient,
    private readonly got: Map<string, Buffer[]>,
  ) {}

  static async connect(): Promise<Broker> {
    const client = await mqtt.connectAsync('mqtt://127.0.0.1:1883', {
      clientId: uid('eddy_bundle_test'),
      reconnectPeriod: 0,
    });
    const got = new Map<string, Buffer[]>();
    client.on('message', (topic, payload) => {
      const list = got.get(topic) ?? [];
      list.push(Buffer.from(payload));
      got.set(topic, list);
    });
    return new Broker(client, got);
  }

  async subscribe(topic: string): Promise<void> {
    await this.client.subscribeAsync(topic, { qos: 1 });
  }

  async publish(topic: string, payload: string | Uint8Array): Promise<void> {
    await this.client.publishAsync(topic, Buffer.from(payload), { qos: 1 });
  }

  messages(topic: string): Buffer[] {
    return this.got.get(topic) ?? [];
  }

  clear(topic: string): void {
    this.got.delete(topic);
  }

  /** Publishes `payload` every 300 ms until `topic` received something; returns the first message. */
  async roundTrip(inTopic: string, payload: string | Uint8Array, outTopic: string, timeoutMs = 15000): Promise<Buffer> {
    this.clear(outTopic);
    return until(
      `a message on ${outTopic}`,
      async () => {
        const m = this.messages(outTopic);
        if (m.length > 0) return m[0];
        await this.publish(inTopic, payload);
        await new Promise((r) => setTimeout(r, 200));
        return undefined;
      },
      timeoutMs,
    );
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }
}
