/**
 * Rule executors on worker threads (docs/runtime.md §1.10). With `basic.workers` > 1 the pool places each rule that
 * can run away from the main thread on one of its workers (by a hash of the rule id: deterministic and visible in
 * the rule's status), and hands the rules service a {@link RemoteTopology} that proxies open/close to that worker and
 * reads the metrics the worker sends. The main thread keeps REST, the store, schedules and import/export.
 *
 * Rules stay on the main thread when they need something that exists only there: a connector or format whose
 * declaration says so (connectors/declaration.ts `threads`: the memory bus, the data server's endpoints, the neuron
 * pair, plugin processes, protobuf schemas), lookup or scan tables, functions other than built-ins (scripts, external
 * services, plugin functions), and a rule's own log file or debug level.
 *
 * Supervision: every worker answers a heartbeat; a worker that misses it is marked as not answering (the status of
 * its rules says so at once) and, past the limit, terminated and replaced; its rules open again on the new worker,
 * from their last checkpoint when they have qos ≥ 1. A worker that exits is replaced the same way. The limit is that
 * of the rule whose node holds the thread (its `evalLimit` option, else the server's), so a rule allowed long records
 * is not cut short by its neighbours' limit, and one given a short limit is stopped early.
 */
import type { ValueObject } from '../values/value.js';
import type { Worker } from 'node:worker_threads';
import { siblingModule, startWorker } from '../core/threads.js';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import type {
  NodeMetrics,
  PrintableTopo,
  Props,
  RuleDef,
  RuleOptions,
  Topology,
  TraceSpan,
  TraceStrategy,
  TopologyBuilder,
} from '../contracts/index.js';
import type { StreamCatalog, StreamDef } from '../catalog/types.js';
import type { FunctionRegistry } from '../functions/registry.js';
import { createBuiltinRegistry } from '../functions/index.js';
import type { KVStore } from '../store/kv.js';
import { TopologySignals } from '../runtime/signals.js';
import { RuleTopology } from '../runtime/topology.js';
import { exprToString, identToString, parseSelect, windowToString } from '../sql/index.js';
import { walk } from '../plan/analyze.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { FromWorker, NodeMetricsRow, ToWorker, WorkerInit } from './protocol.js';
import type { Registry } from '../connectors/registry.js';
import { prop } from '../connectors/props.js';
import { resolveSource } from '../runtime/source.js';

/** `basic.workers`: a positive integer, 0 or absent = the number of cores. */
export function workerCount(configured: unknown): number {
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
  /** the main thread's registry: a rule calling anything but a built-in stays on the main thread */
  functions: FunctionRegistry;
  /** the in-process builder: plans every rule (same errors), and runs the rules that stay on the main thread */
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
  /** longest wait for a worker to open or close a topology */
  requestTimeoutMs?: number;
}

/** A request that a replaced worker will never answer; the rules it was about open again on the new worker. */
class WorkerReplaced extends Error {}

/** Node slots per topology in an activity id (worker.ts encodes it the same way). */
const ACTIVITY_NODES = 4096;

type Select = ReturnType<typeof parseSelect>;

/**
 * What a node of each kind evaluates, for the error of a rule stopped in it: the clause, and its text when the
 * statement names it apart (the text comes from the rule's SQL, since the planned node keeps only compiled code).
 */
const NODE_WORK: Array<[RegExp, string, (stmt: Select) => string | undefined]> = [
  [
    /_project$/,
    'the SELECT list',
    (q) =>
      q.fields
        .map((f) => (f.alias === null ? exprToString(f.expr) : `${exprToString(f.expr)} AS ${identToString(f.alias)}`))
        .join(', '),
  ],
  [/_filter$/, 'the WHERE condition', (q) => (q.where ? exprToString(q.where) : undefined)],
  [/_having$/, 'the HAVING condition', (q) => (q.having ? exprToString(q.having) : undefined)],
  [
    /_order$/,
    'the ORDER BY',
    (q) => q.sorts.map((o) => `${exprToString(o.expr)}${!o.ascending ? ' DESC' : ''}`).join(', '),
  ],
  [
    /_aggregate$/,
    'the GROUP BY',
    (q) => q.dimensions.map((d) => (d.kind === 'window' ? windowToString(d) : exprToString(d))).join(', '),
  ],
  [
    /_join$/,
    'the join condition',
    (q) =>
      q.joins
        .filter((j) => j.on)
        .map((j) => exprToString(j.on!))
        .join('; ') || undefined,
  ],
  [/_analytic$/, 'the analytic functions', () => undefined],
  [/_windowFilter$/, 'the window FILTER', (q) => (q.window?.filter ? exprToString(q.window.filter) : undefined)],
];

/** Longest expression text an error quotes. */
const QUOTE_CHARS = 200;

/** The node, with the clause it evaluates and that clause's text when the rule's SQL tells them. */
function describeNode(sql: string | undefined, node: string): string {
  const work = NODE_WORK.find(([re]) => re.test(node));
  if (!work) return node;
  let text: string | undefined;
  try {
    text = work[2](parseSelect(sql ?? ''));
  } catch {
    // planned once already: a statement that no longer parses only loses the quote
  }
  if (!text) return `${node} (${work[1]})`;
  if (text.length > QUOTE_CHARS) text = `${text.slice(0, QUOTE_CHARS - 1)}…`;
  return `${node} (${work[1]} \`${text}\`)`;
}

/** How long a new worker may take to load before it must answer heartbeats. */
const START_LIMIT_MS = 60_000;

interface Pending {
  resolve: () => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
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
  constructor(readonly index: number) {}
}

/** The topology of a rule placed on a worker. */
export class RemoteTopology implements Topology {
  private readonly signals = new TopologySignals();
  open_ = false;
  private tracing: { strategy: TraceStrategy; emit: (span: TraceSpan) => void } | undefined;

  constructor(
    readonly handle: number,
    readonly slot: number,
    readonly rule: RuleDef,
    readonly options: RuleOptions,
    /** the same rule planned on the main thread: node names, printable topology, planned sources */
    readonly local: RuleTopology,
    private readonly pool: WorkerPool,
  ) {}

  open(): Promise<void> {
    return this.pool.openRemote(this);
  }

  resetOffset(streamName: string, input: ValueObject): Promise<void> {
    return this.pool.resetRemoteOffset(this, streamName, input);
  }

  close(): Promise<void> {
    return this.pool.closeRemote(this);
  }

  onFatal(cb: (err: Error) => void): void {
    this.signals.onFatal(cb);
  }

  onEnd(cb: () => void): void {
    this.signals.onEnd(cb);
  }

  nodes(): readonly NodeMetrics[] {
    return this.local.nodes();
  }

  printable(): PrintableTopo {
    return this.local.printable();
  }

  placement(): { worker: number; answering: boolean } {
    return { worker: this.slot, answering: this.pool.answering(this.slot) };
  }

  startsCold(): boolean {
    return !this.pool.started(this.slot);
  }

  /** Rule tracing (docs/runtime.md §1.11): the worker traces, the spans come back with its metrics. */
  trace(strategy: TraceStrategy | null, emit: (span: TraceSpan) => void): void {
    this.tracing = strategy === null ? undefined : { strategy, emit };
    this.pool.traceRemote(this);
  }

  /** @internal the strategy the worker should trace with, null when off */
  get traceStrategy(): TraceStrategy | null {
    return this.tracing?.strategy ?? null;
  }

  /** @internal a span the worker sent */
  traced(span: TraceSpan): void {
    this.tracing?.emit(span);
  }

  /** @internal metrics sent by the worker */
  update(rows: NodeMetricsRow[]): void {
    const nodes = this.local.nodes();
    for (let i = 0; i < rows.length && i < nodes.length; i++) {
      const n = nodes[i];
      const r = rows[i];
      n.recordsIn = r[1];
      n.recordsOut = r[2];
      n.messagesProcessed = r[3];
      // the histogram travels whole: setting processLatencyUs would count one latency per metrics message
      n.mirrorLatency(r[4], r[11], r[12]);
      n.bufferLength = r[5];
      n.lastInvocation = r[6];
      n.exceptions = r[7];
      n.lastException = r[8];
      n.lastExceptionTime = r[9];
      n.busyUs = r[10];
      n.setConnection(r[13]);
      n.failingSince = r[14];
    }
  }

  /** @internal */
  fail(err: Error): void {
    this.signals.fail(err);
  }

  /** @internal */
  end(): void {
    this.signals.end();
  }
}

export class WorkerPool implements TopologyBuilder {
  private readonly slots: Slot[] = [];
  private readonly remotes = new Map<number, RemoteTopology>();
  private readonly builtins = createBuiltinRegistry();
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
    for (let i = 0; i < opts.size; i++) this.slots.push(new Slot(i));
    this.heartbeat = setInterval(() => this.beat(), this.heartbeatMs);
    this.heartbeat.unref();
  }

  get size(): number {
    return this.slots.length;
  }

  /** Plans the rule here (same errors as in-process); a rule that can run on a worker gets a remote topology. */
  build(rule: RuleDef, options: RuleOptions, logger: Logger): Topology {
    const local = this.opts.local.build(rule, options, logger);
    if (!(local instanceof RuleTopology) || !this.movable(rule, local)) return local;
    return new RemoteTopology(this.nextHandle++, this.place(rule.id), rule, options, local, this);
  }

  /** Deterministic placement: a hash of the rule id over the workers. */
  place(ruleId: string): number {
    let h = 2166136261;
    for (let i = 0; i < ruleId.length; i++) h = Math.imul(h ^ ruleId.charCodeAt(i), 16777619);
    return (h >>> 0) % this.slots.length;
  }

  /** Whether the rule needs nothing that exists only on the main thread. */
  private movable(rule: RuleDef, t: RuleTopology): boolean {
    // a rule's own log file (and debug level) belong to the main thread's loggers
    if (t.options.logFilename || t.options.debug) return false;
    const connectors = this.opts.connectors;
    for (const s of t.plan.sources) {
      // tables stay where the server's tables are (docs/runtime.md §1.10)
      if (s.role !== 'stream') return false;
      const { type, props } = resolveSource(connectors, s.def);
      if (!connectors.placement('source', type, props).worker) return false;
      if (!connectors.placement('format', String(props.format), props).worker) return false;
    }
    for (const action of rule.actions) {
      for (const [type, raw] of Object.entries(action)) {
        const own = (raw ?? {}) as Props;
        const resourceId = prop(own, 'resourceId');
        const props = {
          ...connectors.sinkProps(type, typeof resourceId === 'string' ? resourceId : undefined),
          ...own,
        };
        if (!connectors.placement('sink', type, props).worker) return false;
        const format = prop(props, 'format');
        const name = typeof format === 'string' && format !== '' ? format : 'json';
        if (!connectors.placement('format', name, props).worker) return false;
      }
    }
    let builtinOnly = true;
    try {
      const stmt = parseSelect(rule.sql ?? '');
      const check = (e: Parameters<typeof walk>[0]) =>
        walk(e, (x) => {
          if (x.kind === 'call' && this.opts.functions.get(x.name) !== this.builtins.get(x.name)) builtinOnly = false;
        });
      for (const f of stmt.fields) check(f.expr);
      if (stmt.where) check(stmt.where);
      if (stmt.having) check(stmt.having);
      for (const d of stmt.dimensions) if (d.kind !== 'window') check(d);
      for (const s of stmt.sorts) check(s.expr);
      for (const j of stmt.joins) if (j.on) check(j.on);
    } catch {
      return false;
    }
    return builtinOnly;
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
  private sendOpen(slot: number, t: RemoteTopology): Promise<void> {
    const s = this.slots[slot];
    const { streams, dropped } = s ? this.catalogDelta(s) : { streams: [], dropped: [] };
    return this.send(slot, (req) => ({
      op: 'open',
      req,
      handle: t.handle,
      rule: t.rule,
      options: t.options,
      streams,
      dropped,
      confRevision: this.opts.confRevision?.() ?? -1,
    }));
  }

  private catalogDelta(s: Slot): { streams: StreamDef[]; dropped: string[] } {
    const catalog = this.opts.catalog;
    const revision = catalog.revision;
    if (revision !== undefined && revision === s.sentRevision) return { streams: [], dropped: [] };
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
    s.worker.postMessage({ op: 'trace', handle: t.handle, strategy: t.traceStrategy } satisfies ToWorker);
  }

  async openRemote(t: RemoteTopology): Promise<void> {
    // the workers start together with the first rule placed on any of them: each takes a moment to load, and the
    // next rules' workers are then ready when those rules come
    if (!this.closed) for (const s of this.slots) if (!s.spawned) this.spawn(s);
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
  resetRemoteOffset(t: RemoteTopology, streamName: string, input: ValueObject): Promise<void> {
    return this.send(t.slot, (req) => ({ op: 'resetOffset', req, handle: t.handle, streamName, input }));
  }

  /** Fault injection for tests: keeps worker `slot` busy for `ms`. */
  stall(slot: number, ms: number): void {
    if (this.slots[slot]?.spawned) this.slots[slot].worker.postMessage({ op: 'stall', ms } satisfies ToWorker);
  }

  /** Fault injection for tests: the worker ends as a crash would. */
  crash(slot: number): void {
    if (this.slots[slot]?.spawned) this.slots[slot].worker.postMessage({ op: 'crash' } satisfies ToWorker);
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
    const workerData: WorkerInit = {
      index: s.index,
      home: this.opts.home,
      env: this.opts.env,
      activity: s.activity.buffer,
    };
    const worker = startWorker(siblingModule(import.meta.url, 'worker'), { workerData });
    const spawnedAt = Date.now();
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
    worker.on('error', (err) => this.opts.logger.error({ err }, 'rule worker %d failed', s.index));
    worker.on('exit', (code) => {
      if (this.closed || s.worker !== worker) return;
      this.opts.logger.error('rule worker %d exited with %d; replacing it', s.index, code);
      // a worker that cannot even start is not restarted in a tight loop
      s.backoffMs = Date.now() - spawnedAt < 2000 ? Math.min(Math.max(1000, s.backoffMs * 2), 30_000) : 0;
      this.replace(s);
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
        else p.resolve();
        break;
      }
      case 'metrics':
        for (const [handle, rows] of m.topologies) this.remotes.get(handle)?.update(rows);
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
        void this.kv(worker, m.id, m.method, m.args);
        break;
      case 'ready':
        break;
    }
  }

  private async kv(worker: Worker, id: number, method: string, args: unknown[]): Promise<void> {
    const store = this.opts.store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    try {
      const fn = store[method];
      if (typeof fn !== 'function' || method === 'close') throw new Error(`unknown store method ${method}`);
      const value = await fn.apply(this.opts.store, args);
      worker.postMessage({ op: 'kv', id, value } satisfies ToWorker);
    } catch (err) {
      worker.postMessage({ op: 'kv', id, error: err instanceof Error ? err.message : String(err) } satisfies ToWorker);
    }
  }

  private send(slot: number, make: (req: number) => ToWorker): Promise<void> {
    const s = this.slots[slot];
    if (!s || !s.spawned || this.closed)
      return Promise.reject(new EddyError(ErrorCode.Executor, 'the worker pool is closed'));
    const req = this.nextReq++;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        s.pending.delete(req);
        reject(new Error(`worker ${slot} did not answer within ${this.requestTimeoutMs} ms`));
      }, this.requestTimeoutMs);
      s.pending.set(req, { resolve, reject, timer });
      s.worker.postMessage(make(req));
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
      s.worker.postMessage({ op: 'ping', seq: s.seq } satisfies ToWorker);
    }
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
  private replace(s: Slot, activity = 0, limit = this.limitMs): void {
    if (this.closed || s.replacing) return;
    s.replacing = true;
    const old = s.worker;
    const t = activity > 0 ? this.heldBy(s, activity) : undefined;
    if (t) {
      const node = t.local.nodes()[(activity % ACTIVITY_NODES) - 1]?.name;
      const where = node === undefined ? 'a node' : describeNode(t.rule.sql, node);
      const setting = t.options.evalLimit > 0 ? 'the rule option evalLimit' : 'basic.ruleEvalLimit';
      this.remotes.delete(t.handle);
      t.fail(
        new Error(
          `rule ${t.rule.id} was stopped: evaluating one record in ${where} took more than ${limit} ms (${setting})`,
        ),
      );
    }
    for (const p of s.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new WorkerReplaced(`worker ${s.index} was replaced`));
    }
    s.pending.clear();
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
