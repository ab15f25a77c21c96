import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { INITIALIZED_MARKER as INITIALIZED, type EddyConfig, type Home } from '../config/index.js';
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
  const file = join(home.data, config.store?.sqlite?.name || 'sqliteKV.db');
  checkStoreFile(file, home);
  return new SqliteStore(file);
}

/**
 * A home that has run before (`data/initialized`, written at the first start) whose store file is missing or empty
 * lost its rules, streams and checkpoints: starting would make that silent, with sessions left at the brokers and
 * nothing said. The start stops with a message instead; removing the marker is the way to start afresh.
 */
function checkStoreFile(file: string, home: Home): void {
  if (!existsSync(join(home.data, INITIALIZED))) return;
  const problem = !existsSync(file) ? 'missing' : statSync(file).size === 0 ? 'empty' : undefined;
  if (problem === undefined) return;
  throw new Error(
    `the store ${file} is ${problem}, but this home has run before (data/${INITIALIZED}): restore the file from a ` +
      `backup, or delete ${join(home.data, INITIALIZED)} to start with an empty store`,
  );
}
