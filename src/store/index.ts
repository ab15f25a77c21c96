import { join } from 'node:path';
import type { EddyConfig, Home } from '../config/index.js';
import type { KVStore } from './kv.js';
import { SqliteStore } from './sqlite.js';

export type { KVStore, KVOp } from './kv.js';
export { SqliteStore } from './sqlite.js';

/** Opens the store named by `store.type` (sqlite by default, in the data folder). */
export async function openStore(config: EddyConfig, home: Home, redisPrefix?: string): Promise<KVStore> {
  if (config.store?.type === 'redis') {
    // ioredis is loaded only by servers that keep their metadata in Redis
    const { RedisStore } = await import('./redis.js');
    const r = config.store.redis;
    const db = Number(r.db ?? 0);
    const store = new RedisStore({
      host: r.host,
      port: r.port,
      password: r.password,
      timeout: r.timeout,
      database: Number.isInteger(db) ? db : 0,
      prefix: redisPrefix,
    });
    await store.connect();
    return store;
  }
  return new SqliteStore(join(home.data, config.store?.sqlite?.name || 'sqliteKV.db'));
}
