/**
 * Redis clients of the redis lookup table and sink: one ioredis client per connector, connected eagerly and
 * checked with PING, so an unreachable server or bad credentials fail with the server's own reason.
 */
import { Redis } from 'ioredis';

export interface RedisSettings {
  addr: string;
  username?: string;
  password?: string;
  db: number;
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
  const client = new Redis({
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
