import { Redis } from 'ioredis';
import { gobDecodeString, gobEncodeString } from '../core/gob.js';
import type { KVOp, KVStore } from './kv.js';
import { Staged } from './staged.js';

export interface RedisStoreOptions {
  host: string;
  port: number;
  password?: string;
  /** `store.redis.db`: the database number */
  database?: number;
  timeout?: number;
  /** key prefix, so that tests can share one server (none in production: eKuiper's layout) */
  prefix?: string;
}

/** Redis glob characters, escaped in SCAN patterns (namespaces hold rule ids). */
const GLOB = /[*?[\]\\]/g;

/**
 * Redis store in eKuiper's layout (docs/runtime.md §10.1): one key `KV:STORE:<namespace>:<key>` per entry, its value a
 * string encoded with Go's gob, so that Eddy and eKuiper read each other's store. Listings keep insertion order
 * through a sorted set per namespace (`EDDY:ORDER:<namespace>`, a name eKuiper's `KV:STORE:` scans never match);
 * entries another program wrote come after them, by key. Values that are no gob string (eKuiper keeps a few
 * structures too) are left out of listings.
 */
export class RedisStore implements KVStore {
  private readonly client: Redis;
  private readonly prefix: string;
  /** the writes of the open transaction, applied together when it commits */
  private staged: Staged | undefined;

  constructor(opts: RedisStoreOptions) {
    this.prefix = opts.prefix ?? '';
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

  private nsPrefix(ns: string): string {
    return `${this.prefix}KV:STORE:${ns}:`;
  }

  private k(ns: string, key: string): string {
    return this.nsPrefix(ns) + key;
  }

  private z(ns: string): string {
    return `${this.prefix}EDDY:ORDER:${ns}`;
  }

  private seqKey(): string {
    return `${this.prefix}EDDY:SEQ`;
  }

  async get(ns: string, key: string): Promise<string | undefined> {
    const staged = this.staged?.valueOf(ns, key);
    if (staged !== undefined) return staged ?? undefined;
    return this.stored(ns, key);
  }

  private async stored(ns: string, key: string): Promise<string | undefined> {
    const v = await this.client.getBuffer(this.k(ns, key));
    return v === null ? undefined : decode(v);
  }

  async set(ns: string, key: string, value: string): Promise<void> {
    await this.batch([{ ns, key, value }]);
  }

  async setIfAbsent(ns: string, key: string, value: string): Promise<boolean> {
    if (this.staged) {
      if (await this.staged.has(ns, key)) return false;
      await this.staged.write({ ns, key, value });
      return true;
    }
    const added = await this.client.set(this.k(ns, key), gobEncodeString(value), 'NX');
    if (added !== 'OK') return false;
    const seq = await this.client.incr(this.seqKey());
    await this.client.zadd(this.z(ns), 'NX', seq, key);
    return true;
  }

  async delete(ns: string, key: string): Promise<boolean> {
    if (this.staged) {
      const existed = await this.staged.has(ns, key);
      await this.staged.write({ ns, key, value: null });
      return existed;
    }
    const res = await this.client.multi().del(this.k(ns, key)).zrem(this.z(ns), key).exec();
    return Number(res?.[0]?.[1] ?? 0) > 0;
  }

  /** Every key of a namespace: the ordered ones first, then the others by name. */
  async keys(ns: string): Promise<string[]> {
    const staged = this.staged;
    if (staged?.view.has(ns) !== true) return this.storedKeys(ns);
    return staged.keysOver(ns, staged.view.get(ns)?.cleared ? [] : await this.storedKeys(ns));
  }

  /** Every key of a namespace present in Redis: the ordered ones first, then the others by name. */
  private async storedKeys(ns: string): Promise<string[]> {
    const present = new Set<string>();
    const p = this.nsPrefix(ns);
    let cursor = '0';
    do {
      const [next, found] = await this.client.scan(cursor, 'MATCH', `${p.replace(GLOB, '\\$&')}*`, 'COUNT', 500);
      cursor = next;
      for (const full of found) present.add(full.slice(p.length));
    } while (cursor !== '0');
    const ordered = (await this.client.zrange(this.z(ns), 0, -1)).filter((k) => present.delete(k));
    return [...ordered, ...[...present].sort()];
  }

  async entries(ns: string): Promise<Array<[string, string]>> {
    if (this.staged?.view.has(ns)) {
      const out: Array<[string, string]> = [];
      for (const k of await this.keys(ns)) {
        const v = await this.get(ns, k);
        if (v !== undefined) out.push([k, v]);
      }
      return out;
    }
    const keys = await this.keys(ns);
    if (keys.length === 0) return [];
    const vals = await this.client.mgetBuffer(...keys.map((k) => this.k(ns, k)));
    const out: Array<[string, string]> = [];
    keys.forEach((k, i) => {
      const raw = vals[i];
      const v = raw === null ? undefined : decode(raw);
      if (v !== undefined) out.push([k, v]);
    });
    return out;
  }

  async clear(ns: string): Promise<void> {
    if (this.staged) {
      this.staged.clear(ns);
      return;
    }
    const keys = await this.keys(ns);
    const multi = this.client.multi();
    for (let i = 0; i < keys.length; i += 500) multi.del(...keys.slice(i, i + 500).map((k) => this.k(ns, k)));
    multi.del(this.z(ns));
    await multi.exec();
  }

  async batch(ops: readonly KVOp[]): Promise<void> {
    if (ops.length === 0) return;
    if (this.staged) return this.stage(ops);
    const base = await this.client.incrby(this.seqKey(), ops.length);
    const multi = this.client.multi();
    ops.forEach((op, i) => {
      if (op.value === null) {
        multi.del(this.k(op.ns, op.key)).zrem(this.z(op.ns), op.key);
      } else {
        // NX keeps the original position of a replaced key
        multi
          .set(this.k(op.ns, op.key), gobEncodeString(op.value))
          .zadd(this.z(op.ns), 'NX', base - ops.length + 1 + i, op.key);
      }
    });
    const res = await multi.exec();
    const failed = res?.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
  }

  /**
   * Every write made while `fn` runs (by it or anything else) is staged in memory, read back by this store's reads,
   * and written at the end in one MULTI/EXEC, which Redis applies whole or not at all: a process that dies first
   * leaves the store as it was. A rejection of `fn` discards them.
   */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    // an outer transaction already open simply takes these writes too
    if (this.staged) return fn();
    const staged = new Staged((ns, key) => this.client.exists(this.k(ns, key)).then((n) => n > 0));
    this.staged = staged;
    try {
      const result = await fn();
      this.staged = undefined;
      await this.commit(staged);
      return result;
    } finally {
      if (this.staged === staged) this.staged = undefined;
    }
  }

  private async stage(ops: readonly KVOp[]): Promise<void> {
    for (const op of ops) await this.staged!.write(op);
  }

  /** The staged writes in the order they were made, as one MULTI/EXEC. */
  private async commit(staged: Staged): Promise<void> {
    if (staged.log.length === 0) return;
    const sets = staged.log.filter((e) => e.kind === 'write' && e.op.value !== null).length;
    let seq = sets === 0 ? 0 : (await this.client.incrby(this.seqKey(), sets)) - sets;
    // a clear deletes what Redis holds at commit time and what the transaction wrote before it
    const cleared = new Map<string, string[]>();
    for (const e of staged.log)
      if (e.kind === 'clear' && !cleared.has(e.ns)) cleared.set(e.ns, await this.storedKeys(e.ns));
    const multi = this.client.multi();
    const written = new Map<string, Set<string>>();
    for (const e of staged.log) {
      if (e.kind === 'clear') {
        const keys = [...(cleared.get(e.ns) ?? []), ...(written.get(e.ns) ?? [])];
        for (let i = 0; i < keys.length; i += 500) multi.del(...keys.slice(i, i + 500).map((k) => this.k(e.ns, k)));
        multi.del(this.z(e.ns));
        written.delete(e.ns);
        continue;
      }
      const { op } = e;
      if (op.value === null) {
        multi.del(this.k(op.ns, op.key)).zrem(this.z(op.ns), op.key);
      } else {
        multi.set(this.k(op.ns, op.key), gobEncodeString(op.value)).zadd(this.z(op.ns), 'NX', ++seq, op.key);
        let keys = written.get(op.ns);
        if (keys === undefined) written.set(op.ns, (keys = new Set()));
        keys.add(op.key);
      }
    }
    const res = await multi.exec();
    const failed = res?.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
  }

  async close(): Promise<void> {
    if (this.client.status !== 'end') await this.client.quit().catch(() => this.client.disconnect());
  }
}

/** A stored value as text; undefined for values that are no gob string. */
function decode(raw: Buffer): string | undefined {
  try {
    return gobDecodeString(raw);
  } catch {
    return undefined;
  }
}
