/**
 * Rule executors on worker threads (docs/runtime.md §1.10). With `basic.workers` 1 or more (any value but `none`) the
 * pool places each rule that can run away from the main thread on one of its workers (by a hash of the rule id: deterministic and visible in
 * the rule's status), and hands the rules service a {@link RemoteTopology} that proxies open/close to that worker and
 * reads the metrics the worker sends. The main thread keeps REST, the store, schedules and import/export.
 *
 * Rules stay on the main thread only when they need something that cannot leave it: a connector whose declaration
 * says so (connectors/declaration.ts `threads`: none built in, a native plugin's may) or a function a worker neither
 * has nor reaches on the main thread (workers/main-functions.ts). What lives on the main thread and a worker's rules
 * use — the data server, the neuron connections, the plugin processes, zmq's sockets — each worker reaches through a
 * relay port of its own (protocol.ts `RelayName`).
 *
 * Supervision: every worker answers a heartbeat; a worker that misses it is marked as not answering (the status of
 * its rules says so at once) and, past the limit, terminated and replaced; its rules open again on the new worker,
 * from their last checkpoint when they have qos ≥ 1. A worker that exits is replaced the same way. The limit is that
 * of the rule whose node holds the thread (its `evalLimit` option, else the server's), so a rule allowed long records
 * is not cut short by its neighbours' limit, and one given a short limit is stopped early.
 */
import { TurnBatch } from '../core/turn-batch.js';
import type { ValueObject } from '../values/value.js';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { siblingModule, startWorker } from '../core/threads.js';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type { RuleDef, RuleOptions, Topology, TopologyBuilder } from '../contracts/index.js';
import type { StreamCatalog, StreamDef } from '../catalog/types.js';
import type { FunctionRegistry } from '../functions/registry.js';
import { createBuiltinRegistry } from '../functions/index.js';
import type { KVStore } from '../store/kv.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { FromWorker, PlannedInfo, RelayName, RuleRequest, ToWorker, WorkerInit } from './protocol.js';
import type { PortableSymbols } from '../extensions/plugins-portable-relay.js';
import type { Registry } from '../connectors/registry.js';
import { describeNode, movable, placeById, type PlacementDeps } from './placement.js';
import { callOnMain, mainFunctions } from './main-functions.js';
import { RemoteTopology, type RemoteHost } from './remote.js';
import { InstancesTopology } from '../runtime/instances.js';

export { RemoteTopology } from './remote.js';

/** The `basic.workers` value that runs the rules on the main thread, with the API. */
export const NO_WORKERS = 'none';

/**
 * `basic.workers`: a positive integer, 0 or absent = the number of cores; `none` = 0 worker threads, every rule on the
 * main thread (embedding, debugging: nothing then isolates the API from a rule, docs/runtime.md §1.10).
 */
export function workerCount(configured: unknown): number {
  if (typeof configured === 'string' && configured.trim().toLowerCase() === NO_WORKERS) return 0;
  const n =
    typeof configured === 'string' ? Number(configured.trim()) : typeof configured === 'number' ? configured : NaN;
  if (Number.isInteger(n) && n > 0) return n;
  return availableParallelism();
}

export interface PoolOptions {
  size: number;
  home: string;
  env: NodeJS.ProcessEnv;
  store: KVStore;
  catalog: StreamCatalog;
  /** the main thread's registry: a rule calling a function a worker does not have stays on the main thread */
  functions: FunctionRegistry;
  /** the revision of the main thread's JavaScript functions (a worker reads them again when it moved) */
  scriptRevision?: () => number;
  /** `basic.workerMemoryLimit`: megabytes of JavaScript heap a worker may use; 0 = V8's default */
  memoryLimitMb?: number;
  /**
   * a rule with `parallelism` N > 1 runs as N instances on the workers, each on the next worker (a single server; in
   * a cluster the nodes share the instances, docs/cluster.md §6)
   */
  parallelInstances?: boolean;
  /** the in-process builder: plans and runs the rules that stay on the main thread */
  local: TopologyBuilder;
  /** the main thread's connectors: their declarations say where the rules using them may run */
  connectors: Registry;
  logger: Logger;
  /** heartbeat period; a worker silent for 2 periods is reported as not answering */
  heartbeatMs?: number;
  /**
   * a worker silent this long is terminated and replaced; when a rule's node was evaluating a record all that time,
   * that rule is stopped with an error naming it (`basic.ruleEvalLimit`, default 5000 ms). A rule's own `evalLimit`
   * option, when above 0, replaces it while that rule's node holds the thread.
   */
  heartbeatLimitMs?: number;
  /** the revision of the main thread's config keys (a worker reads them again when it moved) */
  confRevision?: () => number;
  /** serves each of the main thread's relays to a new worker through a port of its own (protocol.ts `RelayName`) */
  relays?: Partial<Record<RelayName, (port: MessagePort) => void>>;
  /** the source and sink names of the installed portable plugins (each rule request carries them) */
  portableConnectors?: () => PortableSymbols;
  /**
   * longest wait for a worker to plan, open or close a topology, counted from when the worker has loaded (a slow
   * start is no failure of the rule, docs/runtime.md §1.10); a worker that stops answering is replaced earlier by
   * its heartbeat supervision, and the rules it was opening open on its replacement
   */
  requestTimeoutMs?: number;
}

/** A request that a replaced worker will never answer; the rules it was about open again on the new worker. */
class WorkerReplaced extends Error {}

/** A request the worker, loaded and running, did not answer in time. */
class RequestTimedOut extends Error {}

/** Node slots per topology in an activity id (worker.ts encodes it the same way). */
const ACTIVITY_NODES = 4096;

/** How long a new worker may take to load before it must answer heartbeats. */
const START_LIMIT_MS = 60_000;

interface Pending {
  resolve: (planned: PlannedInfo | undefined) => void;
  reject: (e: Error) => void;
  /** set once the worker has loaded */
  timer: NodeJS.Timeout | undefined;
}

/** One worker slot: its current thread and heartbeat state. */
class Slot {
  worker!: Worker;
  ready: Promise<void> = Promise.resolve();
  /** started on the first rule placed on it */
  spawned = false;
  lastPong = Date.now();
  started = false;
  spawnedAt = Date.now();
  seq = 0;
  /** when each heartbeat not yet answered was sent, by sequence number (answers come in order) */
  readonly unanswered = new Map<number, number>();
  replacing = false;
  /** cell 0: the activity id of the node the worker is running now, 0 when idle; cell 1: records started */
  activity = new Int32Array(new SharedArrayBuffer(8));
  /** the record count last seen, and when it last moved (or the worker last answered) */
  lastSeq = 0;
  lastProgress = Date.now();
  /** wait before the next replacement of a worker that died young */
  backoffMs = 0;
  /** the stream and table definitions this thread has, and the catalog revision they reflect */
  sentDefs = new Map<string, StreamDef>();
  sentRevision = -1;
  readonly pending = new Map<number, Pending>();
  /** messages for the thread, sent together at the end of this turn of the event loop ({@link WorkerPool.post}) */
  readonly outbox: TurnBatch<ToWorker>;
  constructor(
    readonly index: number,
    deliver: (list: ToWorker[]) => void,
  ) {
    this.outbox = new TurnBatch(deliver);
  }
}

export class WorkerPool implements TopologyBuilder {
  private readonly slots: Slot[] = [];
  private readonly remotes = new Map<number, RemoteTopology>();
  private readonly placementDeps: PlacementDeps;
  private readonly host: RemoteHost;
  private nextHandle = 1;
  private nextReq = 1;
  private closed = false;
  private readonly heartbeatMs: number;
  private readonly limitMs: number;
  private readonly requestTimeoutMs: number;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly opts: PoolOptions) {
    this.heartbeatMs = opts.heartbeatMs ?? 500;
    this.limitMs = opts.heartbeatLimitMs ?? 5000;
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
    // the workers start with the first rule placed on one of them: a server with no such rule runs no thread
    for (let i = 0; i < opts.size; i++) {
      const slot: Slot = new Slot(i, (list) => {
        if (!slot.spawned || this.closed) return;
        slot.worker.postMessage(list.length === 1 ? list[0] : ({ op: 'batch', messages: list } satisfies ToWorker));
      });
      this.slots.push(slot);
    }
    this.heartbeat = setInterval(() => this.beat(), this.heartbeatMs);
    this.heartbeat.unref();
    this.placementDeps = {
      catalog: opts.catalog,
      functions: opts.functions,
      builtins: createBuiltinRegistry(),
      connectors: opts.connectors,
    };
    this.host = {
      prepareRemote: (t) => this.prepareRemote(t),
      openRemote: (t) => this.openRemote(t),
      traceRemote: (t) => this.traceRemote(t),
      closeRemote: (t) => this.closeRemote(t),
      releaseRemote: (t) => this.releaseRemote(t),
      resetRemoteOffset: (t, name, input) => this.resetRemoteOffset(t, name, input),
      answering: (slot) => this.answering(slot),
      started: (slot) => this.started(slot),
    };
  }

  get size(): number {
    return this.slots.length;
  }

  /**
   * A rule that can run on a worker gets a remote topology, planned there by its `prepare` (or its first open): the
   * main thread does not plan it. Any other rule is planned and built here, in-process.
   */
  build(rule: RuleDef, options: RuleOptions, logger: Logger): Topology {
    if (!movable(rule, this.placementDeps)) return this.opts.local.build(rule, options, logger);
    const first = this.place(rule.id);
    if (this.opts.parallelInstances && options.parallelism > 1 && rule.instance === undefined) {
      // one hot topic over several workers: each instance on the next worker, fed by an MQTT shared subscription
      // (`$share/<rule id>/<topic>`); the workers plan each and refuse a rule that cannot run so (plan/parallel.ts)
      const count = options.parallelism;
      const parts = Array.from(
        { length: count },
        (_, index) =>
          new RemoteTopology(
            this.nextHandle++,
            (first + index) % this.slots.length,
            { ...rule, instance: { index, count } },
            options,
            this.host,
          ),
      );
      return new InstancesTopology(parts);
    }
    return new RemoteTopology(this.nextHandle++, first, rule, options, this.host);
  }

  /** The ids of the rules open on worker `slot` (a rule with `parallelism` once per instance there). */
  openOn(slot: number): string[] {
    return [...this.remotes.values()].filter((t) => t.slot === slot).map((t) => t.rule.id);
  }

  /** Deterministic placement: a hash of the rule id over the workers. */
  place(ruleId: string): number {
    return placeById(ruleId, this.slots.length);
  }

  /** Whether worker `slot` has loaded and answers requests (false before its first rule, and while it is replaced). */
  started(slot: number): boolean {
    const s = this.slots[slot];
    return s !== undefined && s.spawned && s.started && !s.replacing;
  }

  /** False while a worker misses its heartbeats (its rules' status says so). */
  answering(slot: number): boolean {
    const s = this.slots[slot];
    return s !== undefined && !s.replacing && (!s.started || Date.now() - s.lastPong <= 2 * this.heartbeatMs);
  }

  /**
   * Asks worker `slot` to open rule `t`, with the stream and table definitions that changed since its last open: sending
   * the whole catalog each time made starting n rules cost O(n²).
   */
  private sendRule(op: 'plan' | 'open', slot: number, t: RemoteTopology): Promise<PlannedInfo | undefined> {
    const s = this.slots[slot];
    const { streams, dropped } = s ? this.catalogDelta(s) : { streams: [], dropped: [] };
    return this.send(slot, (req): ToWorker => {
      const r: RuleRequest = {
        req,
        handle: t.handle,
        rule: t.rule,
        options: t.options,
        streams,
        dropped,
        confRevision: this.opts.confRevision?.() ?? -1,
        scriptRevision: this.opts.scriptRevision?.() ?? -1,
        mainFunctions: mainFunctions(this.opts.functions, this.placementDeps.builtins),
        portable: this.opts.portableConnectors?.() ?? { source: [], sink: [] },
        known: t.plannedReads() !== undefined,
      };
      return { op, ...r };
    });
  }

  private async sendOpen(slot: number, t: RemoteTopology): Promise<void> {
    const info = await this.sendRule('open', slot, t);
    if (info) t.planned(info);
  }

  private catalogDelta(s: Slot): { streams: StreamDef[]; dropped: string[] } {
    const catalog = this.opts.catalog;
    const revision = catalog.revision;
    if (revision !== undefined && revision === s.sentRevision) return { streams: [], dropped: [] };
    // the names changed since this thread's last copy, when the catalog can tell: O(changes), not O(catalog)
    const changed = s.sentRevision >= 0 ? catalog.changedSince?.(s.sentRevision) : undefined;
    if (revision !== undefined && changed !== undefined) {
      const streams: StreamDef[] = [];
      const dropped: string[] = [];
      for (const name of new Set(changed)) {
        const d = catalog.get(name);
        if (d === undefined) {
          if (s.sentDefs.delete(name)) dropped.push(name);
        } else if (s.sentDefs.get(name) !== d) {
          s.sentDefs.set(name, d);
          streams.push(d);
        }
      }
      s.sentRevision = revision;
      return { streams, dropped };
    }
    const current = [...catalog.list('stream'), ...catalog.list('table')];
    const streams = current.filter((d) => s.sentDefs.get(d.name) !== d);
    const names = new Set(current.map((d) => d.name));
    const dropped = [...s.sentDefs.keys()].filter((n) => !names.has(n));
    for (const d of streams) s.sentDefs.set(d.name, d);
    for (const n of dropped) s.sentDefs.delete(n);
    s.sentRevision = revision ?? -1;
    return { streams, dropped };
  }

  /** Tells the worker running `t` to trace it (or to stop); applied after the open when it is not open yet. */
  traceRemote(t: RemoteTopology): void {
    const s = this.slots[t.slot];
    if (!t.open_ || !s?.spawned) return;
    this.post(s, { op: 'trace', handle: t.handle, strategy: t.traceStrategy });
  }

  /** The workers start together with the first rule placed on any of them: each takes a moment to load, and the next
   * rules' workers are then ready when those rules come. */
  private spawnAll(): void {
    if (!this.closed) for (const s of this.slots) if (!s.spawned) this.spawn(s);
  }

  /**
   * Plans rule `t` on its worker (docs/runtime.md §1.6): the one parse, plan and compilation of the rule, kept there
   * for its open. A worker replaced meanwhile plans it again; a planning error comes back with its code.
   */
  async prepareRemote(t: RemoteTopology): Promise<void> {
    this.spawnAll();
    for (;;) {
      try {
        const info = await this.sendRule('plan', t.slot, t);
        if (info) t.planned(info);
        return;
      } catch (err) {
        if (err instanceof RequestTimedOut) {
          // a busy worker is no planning error: the rule plans when it opens, and a failed open goes through its
          // restart strategy (docs/runtime.md §1.3)
          this.opts.logger.warn('worker %d did not plan rule %s in time; it plans when it opens', t.slot, t.rule.id);
          return;
        }
        if (!(err instanceof WorkerReplaced) || this.closed) throw err;
        await this.replaced_(this.slots[t.slot]);
      }
    }
  }

  /** Resolves once slot `s` runs its replacement thread (or the pool closed). */
  private async replaced_(s: Slot): Promise<void> {
    while (s.replacing && !this.closed) await new Promise((r) => setTimeout(r, 50));
    await s.ready;
  }

  /** The worker forgets the plan of a topology that will not be opened. */
  releaseRemote(t: RemoteTopology): void {
    const s = this.slots[t.slot];
    if (s?.spawned && !this.remotes.has(t.handle)) this.post(s, { op: 'release', handle: t.handle });
  }

  async openRemote(t: RemoteTopology): Promise<void> {
    this.spawnAll();
    this.remotes.set(t.handle, t);
    t.open_ = true;
    try {
      await this.sendOpen(t.slot, t);
      if (t.traceStrategy !== null) this.traceRemote(t);
    } catch (err) {
      // the worker was replaced meanwhile: the replacement opens the rule
      if (err instanceof WorkerReplaced && this.remotes.has(t.handle)) return;
      this.remotes.delete(t.handle);
      t.open_ = false;
      throw err;
    }
  }

  async closeRemote(t: RemoteTopology): Promise<void> {
    if (!this.remotes.delete(t.handle)) return;
    t.open_ = false;
    await this.send(t.slot, (req) => ({ op: 'close', req, handle: t.handle })).catch((err: unknown) =>
      this.opts.logger.warn({ err }, 'worker %d did not close rule %s', t.slot, t.rule.id),
    );
  }

  /** Forwards `reset_state` to the worker running the rule; its error texts come back as they are. */
  async resetRemoteOffset(t: RemoteTopology, streamName: string, input: ValueObject): Promise<void> {
    await this.send(t.slot, (req) => ({ op: 'resetOffset', req, handle: t.handle, streamName, input }));
  }

  /** Fault injection for tests: keeps worker `slot` busy for `ms`. */
  stall(slot: number, ms: number): void {
    if (this.slots[slot]?.spawned) this.post(this.slots[slot], { op: 'stall', ms });
  }

  /** Fault injection for tests: the worker ends as a crash would. */
  crash(slot: number): void {
    if (this.slots[slot]?.spawned) this.post(this.slots[slot], { op: 'crash' });
  }

  /** Resolves once every worker started (tests). */
  async ready(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.ready));
  }

  /** How many times worker `slot` was replaced (tests, logs). */
  readonly replaced: number[] = [];

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const s of this.slots) {
      for (const p of s.pending.values()) {
        clearTimeout(p.timer);
        p.reject(new Error('the worker pool is closed'));
      }
      s.pending.clear();
    }
    await Promise.all(this.slots.filter((s) => s.spawned).map((s) => s.worker.terminate().catch(() => 0)));
  }

  // ------------------------------------------------------------------------------------------ internals

  private spawn(s: Slot): void {
    s.activity = new Int32Array(new SharedArrayBuffer(8));
    s.sentDefs = new Map();
    s.sentRevision = -1;
    s.lastSeq = 0;
    s.lastProgress = Date.now();
    s.unanswered.clear();
    // the worker's httppush routes, websocket endpoints, neuron connections and plugin processes live on this thread
    const channels = Object.entries(this.opts.relays ?? {}).map(([name, serve]) => ({
      name: name as RelayName,
      serve,
      channel: new MessageChannel(),
    }));
    const workerData: WorkerInit = {
      index: s.index,
      home: this.opts.home,
      env: this.opts.env,
      activity: s.activity.buffer,
      relays: Object.fromEntries(channels.map((c) => [c.name, c.channel.port2])),
    };
    const limit = this.opts.memoryLimitMb ?? 0;
    // a worker over its heap limit ends with ERR_WORKER_OUT_OF_MEMORY and is replaced like any worker that exits
    const worker = startWorker(siblingModule(import.meta.url, 'worker'), {
      workerData,
      transferList: channels.map((c) => c.channel.port2),
      ...(limit > 0 ? { resourceLimits: { maxOldGenerationSizeMb: limit } } : {}),
    });
    const spawnedAt = Date.now();
    for (const { serve, channel } of channels) {
      serve(channel.port1);
      // what the worker held there is let go when it ends (each relay's port `close`)
      worker.once('exit', () => channel.port1.close());
    }
    s.worker = worker;
    s.spawned = true;
    s.lastPong = Date.now();
    s.spawnedAt = Date.now();
    s.started = false;
    s.replacing = false;
    s.ready = new Promise<void>((resolve) => {
      const onReady = (m: FromWorker) => {
        if (m.ev === 'ready') {
          worker.off('message', onReady);
          s.started = true;
          s.lastPong = Date.now();
          resolve();
        }
      };
      worker.on('message', onReady);
      worker.once('exit', () => resolve());
    });
    worker.on('message', (m: FromWorker) => this.onMessage(s, worker, m));
    let outOfMemory = false;
    worker.on('error', (err: Error & { code?: string }) => {
      if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') outOfMemory = true;
      this.opts.logger.error({ err }, 'rule worker %d failed', s.index);
    });
    worker.on('exit', (code) => {
      if (this.closed || s.worker !== worker) return;
      this.opts.logger.error('rule worker %d exited with %d; replacing it', s.index, code);
      // a worker that cannot even start is not restarted in a tight loop
      s.backoffMs = Date.now() - spawnedAt < 2000 ? Math.min(Math.max(1000, s.backoffMs * 2), 30_000) : 0;
      // out of memory: the rule whose node was working when the heap ran out is stopped, the others open again
      if (outOfMemory) this.replace(s, this.memoryHog(s), 0, 'memory');
      else this.replace(s);
    });
  }

  private onMessage(s: Slot, worker: Worker, m: FromWorker): void {
    if (s.worker !== worker) return;
    switch (m.ev) {
      case 'pong':
        s.lastPong = Date.now();
        for (const seq of s.unanswered.keys()) if (seq <= m.seq) s.unanswered.delete(seq);
        break;
      case 'reply': {
        const p = s.pending.get(m.req);
        if (!p) return;
        s.pending.delete(m.req);
        clearTimeout(p.timer);
        if (m.error)
          p.reject(
            m.error.code !== undefined ? new EddyError(m.error.code, m.error.message) : new Error(m.error.message),
          );
        else p.resolve(m.planned);
        break;
      }
      case 'metrics':
        for (const [handle, rows, held] of m.topologies) {
          const t = this.remotes.get(handle);
          if (!t) continue;
          t.update(rows);
          t.heldBytes = held;
        }
        break;
      case 'spans':
        for (const [handle, span] of m.spans) this.remotes.get(handle)?.traced(span);
        break;
      case 'fatal':
        this.remotes.get(m.handle)?.fail(new Error(m.message));
        break;
      case 'end':
        this.remotes.get(m.handle)?.end();
        break;
      case 'kv':
        void this.kv(s, worker, m.id, m.method, m.args);
        break;
      case 'batch':
        for (const one of m.messages) this.onMessage(s, worker, one);
        break;
      case 'call':
        // a service or portable-plugin function called by a rule on the worker (main-functions.ts)
        void callOnMain(this.opts.functions, m).then((answer) => worker.postMessage(answer satisfies ToWorker));
        break;
      case 'ready':
        break;
    }
  }

  private async kv(s: Slot, worker: Worker, id: number, method: string, args: unknown[]): Promise<void> {
    const store = this.opts.store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    let answer: ToWorker;
    try {
      const fn = store[method];
      if (typeof fn !== 'function' || method === 'close') throw new Error(`unknown store method ${method}`);
      answer = { op: 'kv', id, value: await fn.apply(this.opts.store, args) };
    } catch (err) {
      answer = { op: 'kv', id, error: err instanceof Error ? err.message : String(err) };
    }
    // a replaced thread's question is not answered to its replacement
    if (s.worker === worker) this.post(s, answer);
  }

  /**
   * Sends `m` to the thread of slot `s` at the end of this turn of the event loop, with every other message for it
   * asked for meanwhile, in order, as one message: the rules that concurrent requests create or a restore starts
   * reach the worker together, cost one wake-up and one message event on either side instead of one each, and their
   * sources' subscriptions go to the broker together.
   */
  private post(s: Slot, m: ToWorker): void {
    s.outbox.add(m);
  }

  private send(slot: number, make: (req: number) => ToWorker): Promise<PlannedInfo | undefined> {
    const s = this.slots[slot];
    if (!s || !s.spawned || this.closed)
      return Promise.reject(new EddyError(ErrorCode.Executor, 'the worker pool is closed'));
    const req = this.nextReq++;
    return new Promise<PlannedInfo | undefined>((resolve, reject) => {
      const p: Pending = { resolve, reject, timer: undefined };
      s.pending.set(req, p);
      this.post(s, make(req));
      // the time limit runs from when the worker has loaded: a worker slow to start (a loaded machine after a
      // restart) is not a rule failure (docs/runtime.md §1.10)
      const worker = s.worker;
      void s.ready.then(() => {
        if (!s.pending.has(req) || s.worker !== worker) return;
        p.timer = setTimeout(() => {
          s.pending.delete(req);
          reject(new RequestTimedOut(`worker ${slot} did not answer within ${this.requestTimeoutMs} ms`));
        }, this.requestTimeoutMs);
      });
    });
  }

  private beat(): void {
    const now = Date.now();
    for (const s of this.slots) {
      if (s.replacing || !s.spawned) continue;
      if (!s.started) {
        // loading its modules: heartbeats start once it is ready
        if (now - s.spawnedAt > START_LIMIT_MS) {
          this.opts.logger.error('rule worker %d did not start within %d ms; replacing it', s.index, START_LIMIT_MS);
          this.replace(s);
        }
        continue;
      }
      const seq = Atomics.load(s.activity, 1);
      if (seq !== s.lastSeq) {
        s.lastSeq = seq;
        s.lastProgress = now;
      }
      // the rule whose node holds the thread is judged by its own limit
      const activity = Atomics.load(s.activity, 0);
      const held = activity > 0 ? this.heldBy(s, activity) : undefined;
      const limit = held ? this.limitOf(held) : this.limitMs;
      // measured from the oldest heartbeat not answered, not from the last answer: a limit shorter than the heartbeat
      // period must not condemn a worker that answered every heartbeat
      const oldest = s.unanswered.values().next();
      const silent = oldest.done ? 0 : now - oldest.value;
      // silent but still starting new records: overloaded, not stuck (its rules' status says it does not answer)
      if (silent > limit && now - Math.max(s.lastProgress, s.lastPong) > limit) {
        this.opts.logger.error('rule worker %d made no progress for %d ms; replacing it', s.index, silent);
        this.replace(s, activity, limit);
        continue;
      }
      s.unanswered.set(++s.seq, now);
      this.post(s, { op: 'ping', seq: s.seq });
    }
  }

  /**
   * The activity id naming the rule to blame for worker `s` running out of memory: the one whose windows held the most
   * as last reported, else the one whose node was working when the heap ran out; 0 when neither tells.
   */
  private memoryHog(s: Slot): number {
    let best: RemoteTopology | undefined;
    for (const t of this.remotes.values()) if (t.slot === s.index && t.heldBytes > (best?.heldBytes ?? 0)) best = t;
    if (!best) return Atomics.load(s.activity, 0);
    // the node index is unknown: the first node stands for the rule
    return best.handle * ACTIVITY_NODES + 1;
  }

  /** The rule of slot `s` whose node has activity id `activity`. */
  private heldBy(s: Slot, activity: number): RemoteTopology | undefined {
    const t = this.remotes.get(Math.floor(activity / ACTIVITY_NODES));
    return t && t.slot === s.index ? t : undefined;
  }

  /** How long one record of rule `t` may hold its worker (docs/runtime.md §1.10). */
  private limitOf(t: RemoteTopology): number {
    return t.options.evalLimit > 0 ? t.options.evalLimit : this.limitMs;
  }

  /**
   * Terminates the slot's thread, starts a new one and opens its rules there again, except the rule whose node
   * (`activity`, when not 0) kept the thread busy for more than `limit` ms: that one is stopped with an error naming
   * it, the node, what the node evaluates and which setting the limit came from.
   */
  private replace(s: Slot, activity = 0, limit = this.limitMs, why: 'time' | 'memory' = 'time'): void {
    if (this.closed || s.replacing) return;
    s.replacing = true;
    const old = s.worker;
    const t = activity > 0 ? this.heldBy(s, activity) : undefined;
    if (t) {
      const node = t.nodes()[(activity % ACTIVITY_NODES) - 1]?.name;
      const where = node === undefined ? 'a node' : describeNode(t.rule.sql, node);
      const held = t.heldBytes > 0 ? `its windows held about ${t.heldBytes} bytes` : `${where} was working`;
      const setting = t.options.evalLimit > 0 ? 'the rule option evalLimit' : 'basic.ruleEvalLimit';
      this.remotes.delete(t.handle);
      t.fail(
        new Error(
          why === 'memory'
            ? `rule ${t.rule.id} was stopped: its worker ran out of memory (basic.workerMemoryLimit ${this.opts.memoryLimitMb ?? 0} MB) while ${held}`
            : `rule ${t.rule.id} was stopped: evaluating one record in ${where} took more than ${limit} ms (${setting})`,
        ),
      );
    }
    for (const p of s.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new WorkerReplaced(`worker ${s.index} was replaced`));
    }
    s.pending.clear();
    // what was not sent yet was for the old thread: the replacement opens its rules afresh
    s.outbox.clear();
    this.replaced[s.index] = (this.replaced[s.index] ?? 0) + 1;
    void old.terminate().catch(() => 0);
    const again = [...this.remotes.values()].filter((t) => t.slot === s.index);
    const respawn = async (): Promise<void> => {
      if (s.backoffMs > 0) await new Promise((r) => setTimeout(r, s.backoffMs).unref());
      if (this.closed) return;
      this.spawn(s);
      await s.ready;
      for (const t of again) {
        if (!this.remotes.has(t.handle)) continue;
        try {
          await this.sendOpen(s.index, t);
        } catch (err) {
          // replaced again meanwhile: that replacement opens it
          if (err instanceof WorkerReplaced) return;
          this.remotes.delete(t.handle);
          t.fail(err instanceof Error ? err : new Error(String(err)));
        }
      }
    };
    void respawn();
  }
}
