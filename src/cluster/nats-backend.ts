/**
 * The NATS JetStream backend (docs/cluster.md §2): one KV bucket per table, `<name>_<table>`, replicated `replicas`
 * times, and one object-store bucket `<name>_blobs` for values above {@link INLINE_MAX} (a JetStream message is at
 * most 1 MiB). A revision is the KV revision (the stream sequence), a time the server's timestamp of the message;
 * compare-and-set is the KV's expected last sequence.
 *
 * nats-server 2.9 has no multi-key transaction, so an atomic batch goes through a journal: the whole batch is stored
 * first under one key ({@link JOURNAL_KEY}, created only when absent, so batches take turns), then applied, then the
 * journal is deleted. A writer that dies after storing it leaves the journal behind; the next batch, a backend that
 * opens, or the periodic check of a running one applies it again (every write of a batch is absolute, so applying
 * twice changes nothing) — the batch ends up applied whole, never half.
 */
import { randomUUID } from 'node:crypto';
import type { KV, KvEntry, NatsConnection, ObjectStore } from 'nats';
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

const nats = lazy(() => import('nats'));

/** Values up to this many bytes are stored in the KV entry itself; larger ones in the object store. */
export const INLINE_MAX = 256 * 1024;
/** The key of a batch being applied (`=` followed by no hex digits is no key {@link keyOf} makes). */
export const JOURNAL_KEY = '=journal';
/** A journal older than this is taken for one whose writer died, and finished by whoever finds it. */
const JOURNAL_STALE_MS = 15_000;
/** How long opening the buckets is tried again while JetStream does not answer. */
const OPEN_WAIT_MS = 30_000;
/** How long a batch waits for another one to end before it gives up. */
const JOURNAL_WAIT_MS = 60_000;
/** KV error code of a compare-and-set that found another revision (JetStream's `wrong last sequence`). */
const WRONG_LAST_SEQUENCE = 10071;
/** How long the node and status tables keep the entry of a node that stopped writing (bucket MaxAge). */
const LIVE_TABLE_MAX_AGE_MS = 24 * 3600_000;

export interface NatsBackendOptions {
  /** `cluster.name`: prefixes every bucket */
  name: string;
  servers: string[];
  /** `cluster.nats.replicas`: copies of every bucket in a JetStream cluster */
  replicas: number;
  logger: Logger;
  /** JetStream API request timeout (ms) */
  timeoutMs?: number;
  /** age at which a batch's journal is taken for abandoned (tests shorten it) */
  journalStaleMs?: number;
}

/** Whether a failed KV write lost a compare-and-set (as opposed to failing for good). */
function lostRace(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; code?: unknown; message?: unknown };
  return e?.api_error?.err_code === WRONG_LAST_SEQUENCE || /wrong last sequence/i.test(String(e?.message ?? ''));
}

/** Thrown when a value points at a blob a later write already removed: the caller reads the key again. */
class BlobGone extends Error {}

export async function openNatsBackend(opts: NatsBackendOptions): Promise<ClusterBackend> {
  const { connect } = await nats();
  const nc = await connect({
    servers: opts.servers,
    name: `eddy-cluster-${opts.name}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    timeout: 5000,
    pingInterval: 2000,
    maxPingOut: 2,
  });
  const backend = new NatsBackend(nc, opts);
  void backend.followStatus();
  // a JetStream cluster that just formed (or lost a server) may time out creating replicated buckets for a while
  const deadline = Date.now() + OPEN_WAIT_MS;
  for (;;) {
    try {
      await backend.open();
      return backend;
    } catch (err) {
      if (Date.now() < deadline) {
        opts.logger.warn({ err }, 'cannot open the cluster buckets yet; trying again');
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      await nc.close().catch(() => undefined);
      throw err;
    }
  }
}

class NatsBackend implements ClusterBackend {
  readonly kind = 'nats' as const;
  private readonly tables = new Map<TableName, NatsTable>();
  private isConnected = true;
  private closed = false;
  private journalTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly opts: NatsBackendOptions,
  ) {}

  async open(): Promise<void> {
    const js = this.nc.jetstream({ timeout: this.opts.timeoutMs ?? 5000 });
    const blobs = await js.views.os(`${this.opts.name}_blobs`, { replicas: this.opts.replicas });
    for (const name of TABLES) {
      const live = name === 'nodes' || name === 'status';
      const kv = await js.views.kv(`${this.opts.name}_${name}`, {
        history: 1,
        replicas: this.opts.replicas,
        ...(live ? { ttl: LIVE_TABLE_MAX_AGE_MS } : {}),
      });
      this.tables.set(
        name,
        new NatsTable(
          this.nc,
          kv,
          `${this.opts.name}_${name}`,
          blobs,
          this.opts.logger,
          this.opts.journalStaleMs ?? JOURNAL_STALE_MS,
        ),
      );
    }
    // a batch whose writer died is finished by whoever finds it: at open, and now and then
    await this.table('meta').finishStaleJournal();
    this.journalTimer = setInterval(() => {
      void this.table('meta')
        .finishStaleJournal()
        .catch(() => undefined);
    }, this.opts.journalStaleMs ?? JOURNAL_STALE_MS);
    this.journalTimer.unref();
  }

  /** Follows the connection's state (for {@link connected}) until it closes. */
  async followStatus(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === 'disconnect') this.isConnected = false;
      else if (s.type === 'reconnect') this.isConnected = true;
    }
  }

  table(name: TableName): NatsTable {
    const t = this.tables.get(name);
    if (!t) throw new Error(`no table ${name}`);
    return t;
  }

  connected(): boolean {
    return this.isConnected && !this.nc.isClosed();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.journalTimer);
    for (const t of this.tables.values()) await t.stopWatches();
    await this.nc.drain().catch(() => this.nc.close());
  }
}

/** The journal of a batch: what to write, and when it was stored. */
interface Journal {
  at: number;
  ops: TableOp[];
}

class NatsTable implements Table {
  private readonly watches = new Set<Watch>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    private readonly bucket: string,
    private readonly blobs: ObjectStore,
    private readonly logger: Logger,
    private readonly journalStaleMs: number,
  ) {}

  // ---------------------------------------------------------------------------------------------- values

  /** The stored form: `i` + the text, or `o` + the name of the blob holding it. */
  private async encode(value: string): Promise<{ data: Uint8Array; blob?: string }> {
    const text = Buffer.from(value, 'utf8');
    if (text.length <= INLINE_MAX) return { data: Buffer.concat([Buffer.from('i'), text]) };
    const blob = randomUUID();
    await this.blobs.putBlob({ name: blob }, text);
    return { data: Buffer.from(`o${blob}`), blob };
  }

  private blobOf(data: Uint8Array): string | undefined {
    return data[0] === 0x6f ? Buffer.from(data.subarray(1)).toString('utf8') : undefined;
  }

  private async decode(data: Uint8Array): Promise<string> {
    const blob = this.blobOf(data);
    if (blob === undefined) return Buffer.from(data.subarray(1)).toString('utf8');
    const bytes = await this.blobs.getBlob(blob);
    if (bytes === null) throw new BlobGone(blob);
    return Buffer.from(bytes).toString('utf8');
  }

  private async dropBlob(blob: string | undefined): Promise<void> {
    if (blob === undefined) return;
    await this.blobs.delete(blob).catch((err: unknown) => this.logger.debug({ err }, 'cannot delete blob %s', blob));
  }

  private async toEntry(e: KvEntry): Promise<Entry> {
    return { key: e.key, value: await this.decode(e.value), revision: e.revision, time: e.created.getTime() };
  }

  // ---------------------------------------------------------------------------------------------- reads

  async get(key: string): Promise<Entry | undefined> {
    for (;;) {
      const e = await this.kv.get(key);
      if (!e || e.operation !== 'PUT') return undefined;
      try {
        return await this.toEntry(e);
      } catch (err) {
        // replaced meanwhile: the blob went with the old value
        if (!(err instanceof BlobGone)) throw err;
      }
    }
  }

  async list(prefix: string): Promise<Entry[]> {
    const { KvWatchInclude } = await nats();
    const found: KvEntry[] = [];
    // one ordered consumer delivering the last value of every key, rather than a request per key
    let initialized = false;
    let iter: Awaited<ReturnType<KV['watch']>> | undefined = undefined;
    iter = await this.kv.watch({
      key: prefix === '' ? '>' : `${prefix}.>`,
      include: KvWatchInclude.LastValue,
      initializedFn: () => {
        initialized = true;
        iter?.stop();
      },
    });
    if (initialized) iter.stop();
    else for await (const e of iter) if (e.operation === 'PUT' && e.key !== JOURNAL_KEY) found.push(e);
    const entries: Entry[] = [];
    for (const e of found) {
      try {
        entries.push(await this.toEntry(e));
      } catch (err) {
        if (!(err instanceof BlobGone)) throw err;
        const again = await this.get(e.key);
        if (again) entries.push(again);
      }
    }
    return entries;
  }

  // ---------------------------------------------------------------------------------------------- writes

  async put(key: string, value: string): Promise<number> {
    const old = await this.kv.get(key);
    const { data, blob } = await this.encode(value);
    try {
      const rev = await this.kv.put(key, data);
      if (old?.operation === 'PUT') await this.dropBlob(this.blobOf(old.value));
      return rev;
    } catch (err) {
      await this.dropBlob(blob);
      throw err;
    }
  }

  async create(key: string, value: string): Promise<number | undefined> {
    const { data, blob } = await this.encode(value);
    try {
      return await this.kv.create(key, data);
    } catch (err) {
      await this.dropBlob(blob);
      if (lostRace(err)) return undefined;
      throw err;
    }
  }

  async update(key: string, value: string, revision: number): Promise<number | undefined> {
    const old = await this.kv.get(key, { revision }).catch(() => null);
    const { data, blob } = await this.encode(value);
    try {
      const rev = await this.kv.update(key, data, revision);
      if (old?.operation === 'PUT' && old.key === key) await this.dropBlob(this.blobOf(old.value));
      return rev;
    } catch (err) {
      await this.dropBlob(blob);
      if (lostRace(err)) return undefined;
      throw err;
    }
  }

  delete(key: string, revision?: number): Promise<number> {
    return this.deleteAt(key, revision);
  }

  /** Deletes; resolves with the revision of the delete, 0 when nothing was deleted. */
  private async deleteAt(key: string, revision?: number): Promise<number> {
    const old = await this.kv.get(key);
    if (!old || old.operation !== 'PUT') return 0;
    if (revision !== undefined && old.revision !== revision) return 0;
    const { headers, Empty } = await nats();
    const h = headers();
    h.set('KV-Operation', 'DEL');
    try {
      // the KV's own delete does not say the revision it wrote; a delete is a message with this header (the KV
      // protocol), published here so that its sequence comes back
      const ack = await this.nc.jetstream().publish(`$KV.${this.bucket}.${key}`, Empty, {
        headers: h,
        expect: { lastSubjectSequence: old.revision },
      });
      await this.dropBlob(this.blobOf(old.value));
      return ack.seq;
    } catch (err) {
      if (lostRace(err)) return 0;
      throw err;
    }
  }

  async batch(ops: readonly TableOp[]): Promise<number[]> {
    if (ops.length === 0) return [];
    const journal: Journal = { at: Date.now(), ops: [...ops] };
    const text = JSON.stringify(journal);
    const deadline = Date.now() + JOURNAL_WAIT_MS;
    let rev: number | undefined;
    while ((rev = await this.create(JOURNAL_KEY, text)) === undefined) {
      if (Date.now() > deadline) throw new Error('another batch of the cluster did not end within 60 s');
      await this.finishStaleJournal();
      await new Promise((r) => setTimeout(r, 50));
    }
    const revisions = await this.applyOps(ops);
    await this.deleteAt(JOURNAL_KEY, rev);
    return revisions;
  }

  private async applyOps(ops: readonly TableOp[]): Promise<number[]> {
    const revisions: number[] = [];
    for (const op of ops)
      revisions.push(op.value === null ? await this.deleteAt(op.key) : await this.put(op.key, op.value));
    return revisions;
  }

  /** Applies and removes the journal of a batch whose writer died (see the file comment). */
  async finishStaleJournal(): Promise<void> {
    const e = await this.get(JOURNAL_KEY);
    if (!e) return;
    let journal: Journal;
    try {
      journal = JSON.parse(e.value) as Journal;
    } catch {
      await this.deleteAt(JOURNAL_KEY, e.revision);
      return;
    }
    // the age is read against the server's stamp of the journal, not the writer's own; this node's clock is assumed
    // within seconds of the server's (a journal finished early is only applied twice, which changes nothing)
    const age = Math.max(0, Date.now() - e.time);
    if (age < this.journalStaleMs) return;
    this.logger.warn('finishing a batch of %d writes whose writer stopped before it ended', journal.ops.length);
    await this.applyOps(journal.ops);
    await this.deleteAt(JOURNAL_KEY, e.revision);
  }

  // ---------------------------------------------------------------------------------------------- watch

  watch(prefix: string, onChange: (c: Change) => void, opts: { initial?: boolean } = {}): Watch {
    let stopped = false;
    let last = 0;
    let stopIter: (() => void) | undefined;
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const filter = prefix === '' ? '>' : `${prefix}.>`;
    const run = async (): Promise<void> => {
      const { KvWatchInclude } = await nats();
      while (!stopped) {
        try {
          const resume = last > 0;
          const iter = await this.kv.watch({
            key: filter,
            include: resume || opts.initial ? KvWatchInclude.LastValue : KvWatchInclude.UpdatesOnly,
            ...(resume ? { resumeFromRevision: last + 1 } : {}),
            initializedFn: markReady,
          });
          stopIter = () => iter.stop();
          if (!resume && !opts.initial) markReady();
          for await (const e of iter) {
            if (stopped) break;
            if (e.revision <= last) continue;
            last = e.revision;
            if (e.key === JOURNAL_KEY) continue;
            if (e.operation !== 'PUT') {
              onChange({ key: e.key, value: undefined, revision: e.revision, time: e.created.getTime() });
              continue;
            }
            let value: string;
            try {
              value = await this.decode(e.value);
            } catch (err) {
              // a value replaced (and its blob removed) before it was read: the replacement follows
              if (err instanceof BlobGone) continue;
              throw err;
            }
            onChange({ key: e.key, value, revision: e.revision, time: e.created.getTime() });
          }
        } catch (err) {
          if (!stopped) this.logger.warn({ err }, 'watch of %s ended; watching again', this.bucket);
        }
        if (!stopped) await new Promise((r) => setTimeout(r, 250));
      }
    };
    void run();
    const watch: Watch = {
      ready,
      stop: async () => {
        stopped = true;
        stopIter?.();
        this.watches.delete(watch);
      },
    };
    this.watches.add(watch);
    return watch;
  }

  async stopWatches(): Promise<void> {
    for (const w of [...this.watches]) await w.stop();
  }
}
