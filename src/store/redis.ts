import { Redis } from 'ioredis';
import type { KVOp, KVStore } from './kv.js';

export interface RedisStoreOptions {
  host: string;
  port: number;
  password?: string;
  database?: number;
  timeout?: number;
  /** key prefix, so that several Eddy instances (or tests) can share one server */
  prefix?: string;
}

/**
 * Redis store: a namespace is a hash (`<prefix><ns>`) of values plus a sorted set (`<prefix><ns>:order`) scored by
 * a global insertion counter, so listings keep insertion order as with SQLite. Batches run in MULTI/EXEC.
 */
export class RedisStore implements KVStore {
  private readonly client: Redis;
  private readonly prefix: string;

  constructor(opts: RedisStoreOptions) {
    this.prefix = opts.prefix ?? 'eddy:';
    this.client = new Redis({
      host: opts.host,
      port: opts.port,
      password: opts.password || undefined,
      db: opts.database ?? 0,
      connectTimeout: opts.timeout && opts.timeout > 0 ? Math.max(opts.timeout, 1000) : 10000,
      maxRetriesPerRequest: 3,
      lazyConnect: true,
    });
  }

  async connect(): Promise<void> {
    await this.client.connect();
  }

  private h(ns: string): string {
    return `${this.prefix}${ns}`;
  }

  private z(ns: string): string {
    return `${this.prefix}${ns}:order`;
  }

  private seqKey(): string {
    return `${this.prefix}$seq`;
  }

  async get(ns: string, key: string): Promise<string | undefined> {
    const v = await this.client.hget(this.h(ns), key);
    return v ?? undefined;
  }

  async set(ns: string, key: string, value: string): Promise<void> {
    await this.batch([{ ns, key, value }]);
  }

  async setIfAbsent(ns: string, key: string, value: string): Promise<boolean> {
    const added = await this.client.hsetnx(this.h(ns), key, value);
    if (added === 1) {
      const seq = await this.client.incr(this.seqKey());
      await this.client.zadd(this.z(ns), 'NX', seq, key);
      return true;
    }
    return false;
  }

  async delete(ns: string, key: string): Promise<boolean> {
    const res = await this.client.multi().hdel(this.h(ns), key).zrem(this.z(ns), key).exec();
    return Number(res?.[0]?.[1] ?? 0) > 0;
  }

  async keys(ns: string): Promise<string[]> {
    return this.client.zrange(this.z(ns), 0, -1);
  }

  async entries(ns: string): Promise<Array<[string, string]>> {
    const keys = await this.keys(ns);
    if (keys.length === 0) return [];
    const vals = await this.client.hmget(this.h(ns), ...keys);
    const out: Array<[string, string]> = [];
    keys.forEach((k, i) => {
      const v = vals[i];
      if (v !== null) out.push([k, v]);
    });
    return out;
  }

  async clear(ns: string): Promise<void> {
    await this.client.del(this.h(ns), this.z(ns));
  }

  async batch(ops: readonly KVOp[]): Promise<void> {
    if (ops.length === 0) return;
    const base = await this.client.incrby(this.seqKey(), ops.length);
    const multi = this.client.multi();
    ops.forEach((op, i) => {
      if (op.value === null) {
        multi.hdel(this.h(op.ns), op.key).zrem(this.z(op.ns), op.key);
      } else {
        // NX keeps the original position of a replaced key
        multi.hset(this.h(op.ns), op.key, op.value).zadd(this.z(op.ns), 'NX', base - ops.length + 1 + i, op.key);
      }
    });
    const res = await multi.exec();
    const failed = res?.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
  }

  async close(): Promise<void> {
    if (this.client.status !== 'end') await this.client.quit().catch(() => this.client.disconnect());
  }
}
