/**
 * The metadata store of a cluster node (docs/cluster.md §2): a {@link KVStore} on the backend's `meta` table, which
 * every node shares, so that streams, rules, config keys, schemas, uploads, scripts, services' and plugins' records and
 * the import status written on one node are read on every node.
 *
 * Each node keeps a mirror of the table, filled by a watch: reads come from memory, writes go to the backend and into
 * the mirror with the revision the backend gave them. A change the watch reports that this node did not make (or that
 * is newer than what it wrote) updates the mirror and is handed, in order, to the one handler that applies remote
 * changes to the node's services (apply.ts). Values carry their listing position (the revision at which the key was
 * created), so that listings keep insertion order on every node.
 *
 * Rule state (checkpoints and sink caches: {@link isStateNamespace}) does not go to the `meta` table but to the fenced
 * {@link StateStore}, under the placement unit and epoch that {@link StateRouting} names.
 */
import type { Logger } from 'pino';
import type { KVOp, KVStore } from '../store/kv.js';
import { Staged } from '../store/staged.js';
import { checkpointNamespace } from '../runtime/checkpoint.js';
import { keyOf, partsOf, type Change, type ClusterBackend, type Table, type TableOp, type Watch } from './backend.js';
import { Fenced, StateStore, type StateOp } from './state-store.js';

/** Where the state of a rule lives and with which epoch this node may write it. */
export interface StateRouting {
  /**
   * The placement unit of a state namespace and this node's lease epoch for it; undefined when it holds none. `placed`
   * says whether the cluster places that unit (a rule's), or it is a run of its own (a rule trial): a placed unit
   * whose lease this node does not hold is refused its writes at once, without asking the backend.
   */
  stateUnit(ns: string): { unit: string; epoch: number | undefined; placed: boolean };
}

/** Applies a change another node made; `value` undefined means deleted. */
export type RemoteChangeHandler = (ns: string, key: string, value: string | undefined) => Promise<void> | void;

const CHECKPOINT_PREFIX = checkpointNamespace('');
/** Sink failure caches: `sink/<rule><type>_<index>0` (connectors/sinknode.ts sinkCacheNamespace). */
const SINK_CACHE_PREFIX = 'sink/';

/** Whether a namespace holds the state of a running rule rather than metadata. */
export function isStateNamespace(ns: string): boolean {
  return ns.startsWith(CHECKPOINT_PREFIX) || ns.startsWith(SINK_CACHE_PREFIX);
}

/** A key of the mirror: its value (undefined once deleted), revision, and listing position. */
interface Mirrored {
  value: string | undefined;
  revision: number;
  order: number;
}

/** The stored form: `<listing position>\n<text>`; an empty position means "the revision of this write". */
function pack(order: number | undefined, text: string): string {
  return `${order ?? ''}\n${text}`;
}

function unpack(stored: string, revision: number): { order: number; text: string } {
  const nl = stored.indexOf('\n');
  if (nl < 0) return { order: revision, text: stored };
  return { order: Number(stored.slice(0, nl)) || revision, text: stored.slice(nl + 1) };
}

/** Tombstones are dropped once the watch is past them (it reports in revision order): checked every this many changes. */
const PRUNE_EVERY = 512;

export class ClusterStore implements KVStore {
  private readonly mirror = new Map<string, Map<string, Mirrored>>();
  /** the highest revision the watch reported */
  private watched = 0;
  private sincePrune = 0;
  private watch: Watch | undefined;
  private handler: RemoteChangeHandler | undefined;
  /** remote changes reported before the handler was attached */
  private backlog: Array<[string, string, string | undefined]> = [];
  private applying: Promise<void> = Promise.resolve();
  private staged: Staged | undefined;
  /** keys this node is writing now, with the number of writes in flight */
  private readonly inFlight = new Map<string, number>();
  /** changes the watch reported for those keys meanwhile: judged once the write says its revision */
  private readonly held = new Map<string, Change[]>();
  private routing: StateRouting | undefined;
  readonly state: StateStore;
  private readonly table: Table;

  private constructor(
    backend: ClusterBackend,
    nodeId: () => string,
    private readonly logger: Logger,
  ) {
    this.table = backend.table('meta');
    this.state = new StateStore(backend.table('state'), nodeId);
  }

  /** Opens the store once the mirror holds every key of the table. */
  static async open(backend: ClusterBackend, nodeId: () => string, logger: Logger): Promise<ClusterStore> {
    const store = new ClusterStore(backend, nodeId, logger);
    store.watch = store.table.watch('', (c) => store.onChange(c), { initial: true });
    await store.watch.ready;
    // what the first listing reported is what the services load: only later changes are theirs to apply
    store.backlog = [];
    return store;
  }

  /** The handler of remote changes; changes reported since the store opened are handed to it first, in order. */
  onRemoteChange(handler: RemoteChangeHandler): void {
    this.handler = handler;
    const backlog = this.backlog;
    this.backlog = [];
    for (const [ns, key, value] of backlog) this.deliver(ns, key, value);
  }

  routeStateBy(routing: StateRouting): void {
    this.routing = routing;
  }

  /** Resolves once every remote change reported so far has been applied (tests, shutdown). */
  settled(): Promise<void> {
    return this.applying;
  }

  // ---------------------------------------------------------------------------------------------- mirror

  private ns(ns: string): Map<string, Mirrored> {
    let m = this.mirror.get(ns);
    if (!m) this.mirror.set(ns, (m = new Map()));
    return m;
  }

  private live(ns: string, key: string): Mirrored | undefined {
    const m = this.mirror.get(ns)?.get(key);
    return m?.value === undefined ? undefined : m;
  }

  /** Records what this node wrote, unless the watch already reported something newer. */
  private remember(ns: string, key: string, value: string | undefined, revision: number, order: number): void {
    const m = this.ns(ns);
    const cur = m.get(key);
    if (cur && cur.revision > revision) return;
    m.set(key, { value, revision, order });
  }

  private onChange(c: Change): void {
    // a change reported twice (a watch resuming) is recognised by the key's revision in the mirror
    if (c.revision > this.watched) this.watched = c.revision;
    // the watch may report this node's own write before the write itself resolves: the change waits for it, so that
    // it is recognised as this node's and not applied to the services a second time
    const held = this.held.get(c.key);
    if (held) held.push(c);
    else if (this.inFlight.has(c.key)) this.held.set(c.key, [c]);
    else this.judge(c);
  }

  /** Runs a write of `keys`: changes reported for them meanwhile are judged after it. */
  private async writing<T>(keys: readonly string[], write: () => Promise<T>): Promise<T> {
    for (const k of keys) this.inFlight.set(k, (this.inFlight.get(k) ?? 0) + 1);
    try {
      return await write();
    } finally {
      for (const k of keys) {
        const n = (this.inFlight.get(k) ?? 1) - 1;
        if (n > 0) {
          this.inFlight.set(k, n);
          continue;
        }
        this.inFlight.delete(k);
        const held = this.held.get(k);
        this.held.delete(k);
        for (const c of held ?? []) this.judge(c);
      }
    }
  }

  /** Applies a reported change to the mirror, and hands it on when it is another node's. */
  private judge(c: Change): void {
    const parts = partsOf(c.key);
    if (parts.length !== 2) return;
    const [ns, key] = parts;
    const cur = this.mirror.get(ns)?.get(key);
    // this node's own write (or one it made later): already in the mirror and in its services
    if (cur && cur.revision >= c.revision) return;
    if (c.value === undefined) {
      this.ns(ns).set(key, { value: undefined, revision: c.revision, order: cur?.order ?? c.revision });
      if (cur?.value !== undefined) this.deliver(ns, key, undefined);
    } else {
      const { order, text } = unpack(c.value, c.revision);
      this.ns(ns).set(key, { value: text, revision: c.revision, order });
      if (cur?.value !== text) this.deliver(ns, key, text);
    }
    if (++this.sincePrune >= PRUNE_EVERY) this.prune();
  }

  private prune(): void {
    this.sincePrune = 0;
    for (const m of this.mirror.values())
      for (const [k, v] of m) if (v.value === undefined && v.revision <= this.watched) m.delete(k);
  }

  private deliver(ns: string, key: string, value: string | undefined): void {
    const handler = this.handler;
    if (!handler) {
      this.backlog.push([ns, key, value]);
      return;
    }
    this.applying = this.applying
      .then(() => handler(ns, key, value))
      .catch((err: unknown) =>
        this.logger.warn({ err, ns, key }, 'a change made on another node could not be applied'),
      );
  }

  // ---------------------------------------------------------------------------------------------- rule state

  private unitOf(ns: string): { unit: string; epoch: number | undefined; placed: boolean } {
    return this.routing?.stateUnit(ns) ?? { unit: ns, epoch: 0, placed: false };
  }

  private stateKey(ns: string, key: string): string {
    return `${ns}\u0000${key}`;
  }

  private async stateEntries(ns: string): Promise<Array<[string, string]>> {
    const head = `${ns}\u0000`;
    const out: Array<[string, string]> = [];
    for (const [k, v] of await this.state.read(this.unitOf(ns).unit))
      if (k.startsWith(head)) out.push([k.slice(head.length), v]);
    return out;
  }

  private async writeState(ns: string, ops: StateOp[]): Promise<void> {
    const { unit, epoch, placed } = this.unitOf(ns);
    // a node that gave the unit up (or fenced itself) writes nothing, even while the backend is out of reach
    if (placed && epoch === undefined) throw new Fenced(unit, 0, -1);
    return this.state.write(unit, epoch ?? 0, ops);
  }

  // ---------------------------------------------------------------------------------------------- KVStore

  async get(ns: string, key: string): Promise<string | undefined> {
    if (isStateNamespace(ns)) return this.state.get(this.unitOf(ns).unit, this.stateKey(ns, key));
    const staged = this.staged?.valueOf(ns, key);
    if (staged !== undefined) return staged ?? undefined;
    return this.live(ns, key)?.value;
  }

  async set(ns: string, key: string, value: string): Promise<void> {
    await this.batch([{ ns, key, value }]);
  }

  async setIfAbsent(ns: string, key: string, value: string): Promise<boolean> {
    if (isStateNamespace(ns)) {
      if ((await this.get(ns, key)) !== undefined) return false;
      await this.writeState(ns, [{ key: this.stateKey(ns, key), value }]);
      return true;
    }
    if (this.staged) {
      if (await this.staged.has(ns, key)) return false;
      await this.staged.write({ ns, key, value });
      return true;
    }
    const k = keyOf(ns, key);
    return this.writing([k], async () => {
      const rev = await this.table.create(k, pack(undefined, value));
      if (rev === undefined) return false;
      this.remember(ns, key, value, rev, rev);
      return true;
    });
  }

  async delete(ns: string, key: string): Promise<boolean> {
    if (isStateNamespace(ns)) {
      const existed = (await this.get(ns, key)) !== undefined;
      if (existed) await this.writeState(ns, [{ key: this.stateKey(ns, key), value: null }]);
      return existed;
    }
    if (this.staged) {
      const existed = await this.staged.has(ns, key);
      await this.staged.write({ ns, key, value: null });
      return existed;
    }
    const k = keyOf(ns, key);
    return this.writing([k], async () => {
      const rev = await this.table.delete(k);
      if (rev > 0) this.remember(ns, key, undefined, rev, this.live(ns, key)?.order ?? rev);
      return rev > 0;
    });
  }

  async keys(ns: string): Promise<string[]> {
    return (await this.entries(ns)).map(([k]) => k);
  }

  async entries(ns: string): Promise<Array<[string, string]>> {
    if (isStateNamespace(ns)) return this.stateEntries(ns);
    const stored = [...(this.mirror.get(ns)?.entries() ?? [])]
      .filter(([, m]) => m.value !== undefined)
      .sort(([, a], [, b]) => a.order - b.order);
    const staged = this.staged;
    if (staged?.view.has(ns) !== true) return stored.map(([k, m]) => [k, m.value!]);
    const out: Array<[string, string]> = [];
    for (const k of staged.keysOver(
      ns,
      stored.map(([k]) => k),
    )) {
      const v = await this.get(ns, k);
      if (v !== undefined) out.push([k, v]);
    }
    return out;
  }

  async clear(ns: string): Promise<void> {
    if (isStateNamespace(ns)) {
      const keys = (await this.stateEntries(ns)).map(([k]) => k);
      if (keys.length > 0)
        await this.writeState(
          ns,
          keys.map((k) => ({ key: this.stateKey(ns, k), value: null })),
        );
      return;
    }
    if (this.staged) {
      this.staged.clear(ns);
      return;
    }
    for (const [key] of await this.entries(ns)) await this.delete(ns, key);
  }

  async batch(ops: readonly KVOp[]): Promise<void> {
    const meta: KVOp[] = [];
    const state = new Map<string, StateOp[]>();
    for (const op of ops) {
      if (!isStateNamespace(op.ns)) {
        meta.push(op);
        continue;
      }
      let list = state.get(op.ns);
      if (!list) state.set(op.ns, (list = []));
      list.push({ key: this.stateKey(op.ns, op.key), value: op.value });
    }
    for (const [ns, list] of state) await this.writeState(ns, list);
    if (meta.length === 0) return;
    if (this.staged) {
      for (const op of meta) await this.staged.write(op);
      return;
    }
    await this.commit(meta);
  }

  /** Writes metadata ops as one atomic batch (one write: a plain put or delete) and remembers their revisions. */
  private async commit(ops: readonly KVOp[]): Promise<void> {
    if (ops.length === 0) return;
    // a key deleted earlier in the batch and written again goes to the end of the listing
    const deleted = new Set<string>();
    const tableOps: TableOp[] = ops.map((op) => {
      const key = keyOf(op.ns, op.key);
      if (op.value === null) {
        deleted.add(key);
        return { key, value: null };
      }
      return { key, value: pack(deleted.has(key) ? undefined : this.live(op.ns, op.key)?.order, op.value) };
    });
    await this.writing(
      tableOps.map((op) => op.key),
      async () => {
        let revs: number[];
        if (ops.length === 1) {
          const [op] = tableOps;
          revs = [op.value === null ? await this.table.delete(op.key) : await this.table.put(op.key, op.value)];
        } else revs = await this.table.batch(tableOps);
        ops.forEach((op, i) => {
          const rev = revs[i];
          if (!rev) return;
          const stored = tableOps[i].value;
          const order = stored === null ? (this.live(op.ns, op.key)?.order ?? rev) : unpack(stored, rev).order;
          this.remember(op.ns, op.key, op.value ?? undefined, rev, order);
        });
      },
    );
  }

  /**
   * Every metadata write `fn` (or anything else meanwhile) makes is held back, read back by this store, and written
   * at its end as one atomic batch of the backend: a node that dies first leaves the cluster's data as it was. Rule
   * state is written at once, outside the transaction.
   */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.staged) return fn();
    const staged = new Staged(async (ns, key) => this.live(ns, key) !== undefined);
    this.staged = staged;
    try {
      const result = await fn();
      this.staged = undefined;
      const ops: KVOp[] = [];
      // a clear deletes what the mirror holds at commit time and what the transaction wrote before it
      const written = new Map<string, Set<string>>();
      for (const e of staged.log) {
        if (e.kind === 'clear') {
          const keys = new Set([...(this.mirror.get(e.ns)?.keys() ?? []), ...(written.get(e.ns) ?? [])]);
          for (const k of keys)
            if (this.live(e.ns, k) || written.get(e.ns)?.has(k)) ops.push({ ns: e.ns, key: k, value: null });
          written.delete(e.ns);
          continue;
        }
        ops.push(e.op);
        let keys = written.get(e.op.ns);
        if (!keys) written.set(e.op.ns, (keys = new Set()));
        if (e.op.value === null) keys.delete(e.op.key);
        else keys.add(e.op.key);
      }
      await this.commit(this.netEffect(ops));
      return result;
    } finally {
      if (this.staged === staged) this.staged = undefined;
    }
  }

  /**
   * The writes of a transaction reduced to their effect: the last write of each key, and none for a key that ends as
   * the mirror holds it (a full import that puts back what it removed rewrites nothing, so the other nodes keep their
   * runs). A key deleted and then written again keeps the delete, which moves it to the end of the listing.
   */
  private netEffect(ops: readonly KVOp[]): KVOp[] {
    const last = new Map<string, { op: KVOp; deleted: boolean }>();
    for (const op of ops) {
      const k = keyOf(op.ns, op.key);
      const prev = last.get(k);
      last.set(k, { op, deleted: (prev?.deleted ?? false) || op.value === null });
    }
    const out: KVOp[] = [];
    for (const { op, deleted } of last.values()) {
      const cur = this.live(op.ns, op.key)?.value;
      if (op.value === null) {
        if (cur !== undefined) out.push(op);
      } else if (cur !== op.value) {
        if (deleted && cur !== undefined) out.push({ ns: op.ns, key: op.key, value: null });
        out.push(op);
      }
    }
    return out;
  }

  async close(): Promise<void> {
    await this.watch?.stop();
    await this.applying;
  }
}
