/**
 * The Redis backend (docs/cluster.md §2): a table is a hash `<name>:<table>` whose fields are the keys and whose values
 * carry `<revision>:<server time>:<text>`, plus a change log, the stream `<name>:<table>:log`. Every write is one Lua
 * script — compare, take a revision from `INCR <name>:rev`, read `TIME`, write the field and append the change — so
 * compare-and-set and batches are atomic, and the change log is in revision order.
 *
 * A watch reads the change log with `XREAD BLOCK` on a connection of its own. The log is trimmed (about
 * {@link LOG_LENGTH} changes are kept); a watch that finds it was trimmed past what it read (after a long
 * disconnection) reads the whole table again and reports the difference, so no change is lost for good.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { lazy } from '../core/lazy.js';
import {
  TABLES,
  type Change,
  type ClusterBackend,
  type Entry,
  type Table,
  type TableName,
  type TableOp,
  type Watch,
} from './backend.js';

const ioredis = lazy(() => import('ioredis'));

/** Changes a table's log keeps (approximately: `XADD MAXLEN ~`). */
const LOG_LENGTH = 20_000;
/** How often a watch checks that the log was not trimmed past what it read. */
const TRIM_CHECK_MS = 5000;

export interface RedisBackendOptions {
  /** `cluster.name`: prefixes every key */
  name: string;
  host: string;
  port: number;
  password?: string;
  db?: number;
  logger: Logger;
}

/**
 * The write scripts. KEYS[1] the hash, KEYS[2] the log, KEYS[3] the revision counter; ARGV[1] the log length; then
 * per write: mode (`p` put, `c` create, `u` update at ARGV revision, `d` delete, `D` delete at ARGV revision), key,
 * value, revision. Returns the new revision of each write (0 when its condition failed, or for a delete of an absent
 * key); a batch (`all` = 1) fails whole when any condition fails, before writing anything.
 */
const WRITE = `
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local all = ARGV[2] == '1'
local n = (#ARGV - 2) / 4
local function revOf(v) if not v then return nil end return tonumber(string.match(v, '^(%d+):')) end
for i = 0, n - 1 do
  local mode, key, rev = ARGV[3 + i * 4], ARGV[4 + i * 4], tonumber(ARGV[6 + i * 4])
  local cur = revOf(redis.call('HGET', KEYS[1], key))
  local ok = true
  if mode == 'c' then ok = cur == nil
  elseif mode == 'u' or mode == 'D' then ok = cur == rev
  end
  if not ok and (all or n == 1) then return {0} end
end
local out = {}
for i = 0, n - 1 do
  local mode, key, value = ARGV[3 + i * 4], ARGV[4 + i * 4], ARGV[5 + i * 4]
  local cur = revOf(redis.call('HGET', KEYS[1], key))
  if (mode == 'd' or mode == 'D') and cur == nil then
    out[#out + 1] = 0
  else
    local r = redis.call('INCR', KEYS[3])
    if mode == 'd' or mode == 'D' then
      redis.call('HDEL', KEYS[1], key)
      redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'k', key, 'r', r, 't', ms, 'd', '1')
    else
      redis.call('HSET', KEYS[1], key, r .. ':' .. ms .. ':' .. value)
      redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'k', key, 'r', r, 't', ms, 'v', value)
    end
    out[#out + 1] = r
  end
end
return out
`;

function parseStored(key: string, stored: string): Entry {
  const a = stored.indexOf(':');
  const b = stored.indexOf(':', a + 1);
  return {
    key,
    revision: Number(stored.slice(0, a)),
    time: Number(stored.slice(a + 1, b)),
    value: stored.slice(b + 1),
  };
}

export async function openRedisBackend(opts: RedisBackendOptions): Promise<ClusterBackend> {
  const { Redis } = await ioredis();
  const client = new Redis({
    host: opts.host,
    port: opts.port,
    password: opts.password || undefined,
    db: opts.db ?? 0,
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    retryStrategy: () => 250,
    enableOfflineQueue: true,
  });
  // connection failures surface as failed commands (and the watch's resync); ioredis would otherwise print them
  client.on('error', (err: Error) => opts.logger.debug({ err }, 'cluster redis connection'));
  await client.connect();
  client.defineCommand('eddyWrite', { numberOfKeys: 3, lua: WRITE });
  return new RedisBackend(client, opts);
}

type WriteClient = Redis & { eddyWrite(...args: Array<string | number>): Promise<number[]> };

class RedisBackend implements ClusterBackend {
  readonly kind = 'redis' as const;
  private readonly tables = new Map<TableName, RedisTable>();

  constructor(
    private readonly client: Redis,
    opts: RedisBackendOptions,
  ) {
    for (const name of TABLES) this.tables.set(name, new RedisTable(client as WriteClient, opts, name));
  }

  table(name: TableName): RedisTable {
    const t = this.tables.get(name);
    if (!t) throw new Error(`no table ${name}`);
    return t;
  }

  connected(): boolean {
    return this.client.status === 'ready';
  }

  async close(): Promise<void> {
    for (const t of this.tables.values()) await t.stopWatches();
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

class RedisTable implements Table {
  private readonly hash: string;
  private readonly log: string;
  private readonly counter: string;
  private readonly watches = new Set<Watch>();

  constructor(
    private readonly client: WriteClient,
    private readonly opts: RedisBackendOptions,
    name: TableName,
  ) {
    this.hash = `${opts.name}:${name}`;
    this.log = `${this.hash}:log`;
    this.counter = `${opts.name}:rev`;
  }

  private write(all: boolean, writes: Array<[string, string, string, number]>): Promise<number[]> {
    return this.client.eddyWrite(this.hash, this.log, this.counter, LOG_LENGTH, all ? 1 : 0, ...writes.flat());
  }

  private async one(mode: string, key: string, value: string, revision = 0): Promise<number> {
    const [rev] = await this.write(false, [[mode, key, value, revision]]);
    return Number(rev);
  }

  async get(key: string): Promise<Entry | undefined> {
    const v = await this.client.hget(this.hash, key);
    return v === null ? undefined : parseStored(key, v);
  }

  async list(prefix: string): Promise<Entry[]> {
    const out: Entry[] = [];
    let cursor = '0';
    // keys hold only letters, digits, `_`, `-`, `=` and `.` (backend.ts encodeToken): nothing to escape in a glob
    const match = prefix === '' ? '*' : `${prefix}.*`;
    do {
      const [next, flat] = await this.client.hscan(this.hash, cursor, 'MATCH', match, 'COUNT', 500);
      cursor = next;
      for (let i = 0; i < flat.length; i += 2) out.push(parseStored(flat[i], flat[i + 1]));
    } while (cursor !== '0');
    return out;
  }

  put(key: string, value: string): Promise<number> {
    return this.one('p', key, value);
  }

  async create(key: string, value: string): Promise<number | undefined> {
    return (await this.one('c', key, value)) || undefined;
  }

  async update(key: string, value: string, revision: number): Promise<number | undefined> {
    return (await this.one('u', key, value, revision)) || undefined;
  }

  delete(key: string, revision?: number): Promise<number> {
    return this.one(revision === undefined ? 'd' : 'D', key, '', revision ?? 0);
  }

  async batch(ops: readonly TableOp[]): Promise<number[]> {
    if (ops.length === 0) return [];
    const revs = await this.write(
      true,
      ops.map((op) => (op.value === null ? ['d', op.key, '', 0] : ['p', op.key, op.value, 0])),
    );
    return revs.map(Number);
  }

  // ---------------------------------------------------------------------------------------------- watch

  watch(prefix: string, onChange: (c: Change) => void, opts: { initial?: boolean } = {}): Watch {
    const conn = this.client.duplicate();
    conn.on('error', (err: Error) => this.opts.logger.debug({ err }, 'cluster redis watch connection'));
    let stopped = false;
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const head = prefix === '' ? '' : `${prefix}.`;
    /** the revision of every key under the prefix as this watch last reported it (to report differences) */
    const known = new Map<string, number>();
    let lastId = '0-0';

    const report = (c: Change): void => {
      const before = known.get(c.key);
      if (before !== undefined && before >= c.revision) return;
      if (c.value === undefined) {
        if (before === undefined) return;
        known.delete(c.key);
      } else known.set(c.key, c.revision);
      onChange(c);
    };

    /**
     * Reads the whole table and reports, in revision order, what differs from what was reported (first call:
     * everything, if asked). A key gone meanwhile is reported deleted at the revision counter's value: later than any
     * write this watch missed, so that no consumer takes the delete for an old change.
     */
    const resync = async (emit: boolean): Promise<void> => {
      const tail = (await conn.xrevrange(this.log, '+', '-', 'COUNT', 1))[0];
      lastId = tail ? tail[0] : '0-0';
      const entries = (await this.list(prefix)).sort((x, y) => x.revision - y.revision);
      const present = new Set<string>();
      for (const e of entries) {
        present.add(e.key);
        if (emit) report({ key: e.key, value: e.value, revision: e.revision, time: e.time });
        else known.set(e.key, e.revision);
      }
      const gone = [...known.keys()].filter((key) => !present.has(key));
      if (gone.length === 0) return;
      const now = Number(await conn.get(this.counter)) || 0;
      for (const key of gone) report({ key, value: undefined, revision: now, time: Date.now() });
    };

    /** Whether the log no longer holds the entry after `lastId` (trimmed while this watch was away). */
    const trimmedPast = async (): Promise<boolean> => {
      if (lastId === '0-0') return false;
      const first = (await conn.xrange(this.log, '-', '+', 'COUNT', 1))[0];
      return first !== undefined && compareIds(first[0], lastId) > 0;
    };

    const run = async (): Promise<void> => {
      let synced = false;
      let lastTrimCheck = Date.now();
      while (!stopped) {
        try {
          if (!synced) {
            await resync(opts.initial === true || known.size > 0);
            synced = true;
            markReady();
          }
          if (Date.now() - lastTrimCheck > TRIM_CHECK_MS) {
            lastTrimCheck = Date.now();
            if (await trimmedPast()) {
              synced = false;
              continue;
            }
          }
          const res = await conn.xread('COUNT', 1000, 'BLOCK', 1000, 'STREAMS', this.log, lastId);
          if (!res) continue;
          for (const [, items] of res) {
            for (const [id, fields] of items) {
              lastId = id;
              const f = fieldsOf(fields);
              if (!f.k.startsWith(head)) continue;
              report({
                key: f.k,
                value: f.d === '1' ? undefined : (f.v ?? ''),
                revision: Number(f.r),
                time: Number(f.t),
              });
            }
          }
        } catch (err) {
          if (stopped) break;
          this.opts.logger.warn({ err }, 'watch of %s failed; reading it again', this.hash);
          // what changed while the connection was away comes from the table itself
          synced = false;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    };
    void run();
    const watch: Watch = {
      ready,
      stop: async () => {
        stopped = true;
        this.watches.delete(watch);
        conn.disconnect();
      },
    };
    this.watches.add(watch);
    return watch;
  }

  async stopWatches(): Promise<void> {
    for (const w of [...this.watches]) await w.stop();
  }
}

function fieldsOf(flat: string[]): Record<string, string> {
  const o: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) o[flat[i]] = flat[i + 1];
  return o;
}

/** Orders two stream ids `<ms>-<seq>`. */
function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am !== bm ? am - bm : as - bs;
}
