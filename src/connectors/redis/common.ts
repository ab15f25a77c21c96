/**
 * Redis clients of the redis connectors (and the sinks' common part): one ioredis client per connector, connected eagerly and
 * checked with PING, so an unreachable server or bad credentials fail with the server's own reason.
 */
import type { Redis } from 'ioredis';
import { lazy } from '../../core/lazy.js';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { propInt, propString } from '../props.js';
import { recoverable } from '../../contracts/failures.js';

const ioredis = lazy(() => import('ioredis'));

export interface RedisSettings {
  addr: string;
  username?: string;
  password?: string;
  db: number;
}

/**
 * The connection settings of the redis sink, redisPub sink and redisSub source: the address under `addrKey` and a
 * db of 0-15. `who` and `dbWho` begin the error messages, in the wording each connector has in eKuiper.
 */
export function redisSettings(props: Props, addrKey: 'addr' | 'address', who: string, dbWho = who): RedisSettings {
  const addr = propString(props, addrKey, '');
  if (!addr) throw new EddyError(ErrorCode.Executor, `${who} ${addrKey} is required`);
  const db = propInt(props, 'db', 0);
  if (db < 0 || db > 15) throw new EddyError(ErrorCode.Executor, `${dbWho} db should be in range 0-15, got ${db}`);
  return { addr, db, username: propString(props, 'username'), password: propString(props, 'password') };
}

/** Parses `host:port` (port defaults to 6379). */
function hostPort(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(':');
  if (i < 0) return { host: addr, port: 6379 };
  return { host: addr.slice(0, i).replace(/^\[|\]$/g, '') || '127.0.0.1', port: Number(addr.slice(i + 1)) || 6379 };
}

/** Connects and PINGs; rejects (and disconnects) with the reason when the server is unreachable or refuses us. */
export async function openRedis(s: RedisSettings, connectTimeoutMs = 5000): Promise<Redis> {
  const { host, port } = hostPort(s.addr);
  const { Redis: RedisClient } = await ioredis();
  const client = new RedisClient({
    host,
    port,
    username: s.username || undefined,
    password: s.password || undefined,
    db: s.db,
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // the first connection is tried once so its failure reason can be reported
    retryStrategy: () => null,
  });
  let lastError: Error | undefined;
  client.on('error', (e: Error) => (lastError = e));
  try {
    await client.connect();
    await client.ping();
  } catch (e) {
    client.disconnect();
    const reason = lastError && /Connection is closed/.test((e as Error).message) ? lastError : (e as Error);
    throw new Error(`redis ${s.addr}: ${reason.message}`);
  }
  // once connected, keep reconnecting after a loss
  client.options.retryStrategy = (times: number) => Math.min(times * 200, 2000);
  return client;
}

/** Connection check: connect, PING, disconnect. */
export async function pingRedis(s: RedisSettings): Promise<void> {
  const c = await openRedis(s, 3000);
  c.disconnect();
}

/**
 * The redis and redisPub sinks: properties read by `configure` (a failure is a 2201 error), one client opened on
 * connect and dropped on close; a send without a client is recoverable, so the failure cache keeps it.
 */
export abstract class RedisClientSink implements SinkConnector {
  protected settings!: RedisSettings;
  private client: Redis | undefined;

  constructor(private readonly type: string) {}

  protected abstract configure(props: Props): void;

  protected abstract send(client: Redis, payload: SinkPayload): Promise<void>;

  provision(_ctx: SinkContext, props: Props): void {
    try {
      this.configure(props);
    } catch (e) {
      throw e instanceof EddyError ? e : new EddyError(ErrorCode.Executor, (e as Error).message);
    }
  }

  async connect(_ctx: SinkContext): Promise<void> {
    this.client = await openRedis(this.settings);
  }

  async collect(_ctx: SinkContext, payload: SinkPayload): Promise<void> {
    if (!this.client) throw recoverable(new Error(`${this.type} sink is not connected`));
    await this.send(this.client, payload);
  }

  async close(_ctx: SinkContext): Promise<void> {
    this.client?.disconnect();
    this.client = undefined;
  }
}
