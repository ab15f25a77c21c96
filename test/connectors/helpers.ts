/** Shared pieces of the connector tests: a real MQTT subscriber, a stoppable TCP proxy to the broker, waiting. */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { connectAsync, type MqttClient } from 'mqtt';

export const BROKER = 'tcp://127.0.0.1:1883';

let counter = 0;
/** A topic nobody else uses. */
export function uniqueTopic(name: string): string {
  return `eddy-test/${process.pid}/${Date.now()}/${counter++}/${name}`;
}

export async function until(cond: () => boolean, timeoutMs = 15_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface Received {
  topic: string;
  text: string;
  retain: boolean;
}

/** Subscribes to `filter` on the real broker and collects messages. */
export async function subscriber(
  filter: string,
): Promise<{ messages: Received[]; client: MqttClient; close: () => Promise<void> }> {
  const client = await connectAsync(BROKER, { reconnectPeriod: 0 });
  const messages: Received[] = [];
  // attached before subscribing: a retained message may arrive together with the SUBACK
  client.on('message', (topic, payload, packet) =>
    messages.push({ topic, text: payload.toString('utf8'), retain: packet.retain }),
  );
  await client.subscribeAsync(filter, { qos: 1 });
  return { messages, client, close: () => client.endAsync(true) };
}

export async function publisher(): Promise<MqttClient> {
  return connectAsync(BROKER, { reconnectPeriod: 0 });
}

/**
 * A TCP proxy in front of the broker that can be taken down (listener closed, connections cut) and brought back on
 * the same port: a broker outage as clients see it.
 */
export class BrokerProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;
  /** the first bytes each client sent (its CONNECT packet) */
  readonly firstPackets: Buffer[] = [];

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(1883, '127.0.0.1');
      this.sockets.add(client);
      this.sockets.add(upstream);
      client.once('data', (d: Buffer) => this.firstPackets.push(d));
      client.pipe(upstream);
      upstream.pipe(client);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop);
      upstream.on('error', drop);
      client.on('close', drop);
      upstream.on('close', drop);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  get url(): string {
    return `tcp://127.0.0.1:${this.port}`;
  }

  /** Number of client connections currently open through the proxy. */
  get connections(): number {
    return this.sockets.size / 2;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
