/**
 * Topology nodes: a bounded input queue, non-blocking pushes that drop and count when a queue is full
 * (docs/runtime.md §1.7), and one scheduled drain per batch of queued items. Per-item work stays synchronous.
 */
import { performance } from 'node:perf_hooks';
import { ErrorRecord, NodeMetrics, type SinkNode } from '../contracts/index.js';
import { kindBit, type Item, type ItemKind, type ItemOf, type KindSet } from './items.js';
import { takeRuleStop } from '../values/errors.js';
import { TracingReceiver, type RuleTracer } from './trace.js';

/** Anything a node can push to: another node's queue or a sink. `accept` returns false when the item was dropped. */
export interface Receiver {
  readonly name: string;
  accept(item: Item): boolean;
}

/** Unix ms of `performance.now()` = 0: wall time from the monotonic clock without a second clock read */
const TIME_ORIGIN = performance.timeOrigin;

/**
 * Drains are scheduled as reactions of one resolved promise: a V8 microtask without the async-resource wrapper that
 * Node's `queueMicrotask` adds, which costs more than the drain itself when events arrive one by one.
 */
const RESOLVED: Promise<void> = Promise.resolve();

/**
 * Rule worker threads (docs/runtime.md §1.10): in memory the main thread can read while this thread is busy, cell 0 holds
 * the id of the node doing synchronous work now (0 when none) and cell 1 counts the records started. A thread whose
 * count stands still while a node is busy is stuck in that node's record; one whose count moves is only overloaded.
 */
let activity: Int32Array | null = null;
/** told the activity id of each node that starts a batch of work: the worker reports the metrics of those topologies */
let worked: ((activityId: number) => void) | null = null;

/**
 * Starts (or, with null, stops) recording which node works in `cell[0]`; `onWork` hears the id of every node that
 * starts work, once per batch of records (not per record).
 */
export function trackActivity(cell: Int32Array | null, onWork: ((activityId: number) => void) | null = null): void {
  activity = cell;
  worked = cell === null ? null : onWork;
}

/** Items handled per drain before yielding, so that downstream queues drain in between (bounded growth). */
const MAX_DRAIN_BATCH = 256;

/**
 * Drains chain as microtasks, which the event loop runs to the end before any I/O: when the drains of one turn
 * have run this long (a large window emission going through a rule's nodes), the next drain waits for the next
 * turn so that the REST API and other rules' I/O are served in between.
 */
const TURN_BUDGET_MS = 10;
/** when the drains of the current turn of the event loop started (-1: none yet) */
let turnStart = -1;
const newTurn = (): void => {
  turnStart = -1;
};

/**
 * Whether the large-emission work of this turn of the event loop (batch drains, join and projection slices of
 * every rule) has used its budget: the caller then continues in a later turn.
 */
export function turnOver(): boolean {
  const now = performance.now();
  if (turnStart < 0) {
    turnStart = now;
    setImmediate(newTurn);
    return false;
  }
  return now - turnStart > TURN_BUDGET_MS;
}

/** A fixed-capacity FIFO ring. */
export class BoundedQueue<T> {
  private buf: Array<T | undefined>;
  private head = 0;
  size = 0;
  constructor(readonly capacity: number) {
    // start small: most queues stay nearly empty, and a thousand rules must stay cheap
    this.buf = new Array<T | undefined>(Math.max(1, Math.min(capacity, 16)));
  }
  push(v: T): boolean {
    if (this.size >= this.capacity) return false;
    if (this.size === this.buf.length) this.grow();
    this.buf[(this.head + this.size) % this.buf.length] = v;
    this.size++;
    return true;
  }
  peek(): T | undefined {
    return this.size === 0 ? undefined : this.buf[this.head];
  }
  shift(): T | undefined {
    if (this.size === 0) return undefined;
    const v = this.buf[this.head];
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) % this.buf.length;
    this.size--;
    return v;
  }
  clear(): void {
    this.buf.fill(undefined);
    this.head = 0;
    this.size = 0;
  }
  /** the queued items, oldest first (checkpoints) */
  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.size; i++) out.push(this.buf[(this.head + i) % this.buf.length] as T);
    return out;
  }
  private grow(): void {
    const next = new Array<T | undefined>(Math.min(this.capacity, this.buf.length * 2));
    for (let i = 0; i < this.size; i++) next[i] = this.buf[(this.head + i) % this.buf.length];
    this.buf = next;
    this.head = 0;
  }
}

/**
 * Base of every operator (and of the per-rule source queues). A node names the item kinds it handles in
 * {@link handles}; {@link process} gets only those (typed), every other kind (watermarks included) is passed on
 * unchanged here, so that an operator's `switch (item.kind)` covers exactly its own kinds.
 */
export abstract class QueueNode<K extends ItemKind = ItemKind> implements Receiver {
  readonly metrics: NodeMetrics;
  readonly outputs: Receiver[] = [];
  protected readonly queue: BoundedQueue<Item>;
  protected closed = false;
  private scheduled = false;
  /** set while a long piece of work continues over several turns of the event loop (see {@link suspend}) */
  private suspended = false;
  private readonly drainFn = () => this.drain();
  /** error reporting hook for failures that end the run (set by the topology) */
  fatal: (err: Error) => void = () => {};
  /**
   * Process each item synchronously as it is pushed instead of queueing it. Rules whose functions read state
   * updated further down the chain (last_hit_count(), last_agg_hit_count()) run their operators this way so that
   * every event or emission passes the whole chain before the next one starts.
   */
  direct = false;
  /**
   * `performance.now()` when the oldest queued item arrived, for nodes that report receive-to-emission latency
   * (sources, docs/runtime.md §1.7); -1 elsewhere: those report the average processing time of their last batch.
   */
  protected arrival = -1;
  /** this node's id in the activity cell ({@link trackActivity}); 0 when not tracked */
  activityId = 0;
  /** the rule's tracer while tracing is on (runtime/trace.ts); null, the only cost of tracing, otherwise */
  private tracer: RuleTracer | null = null;

  constructor(
    readonly name: string,
    capacity: number,
  ) {
    this.metrics = new NodeMetrics(name);
    this.queue = new BoundedQueue<Item>(Math.max(1, capacity));
  }

  accept(item: Item): boolean {
    if (this.closed) return true;
    if (this.direct && this.queue.size === 0) {
      this.runDirect(item);
      return true;
    }
    if (!this.queue.push(item)) return false;
    this.metrics.bufferLength = this.queue.size;
    if (!this.scheduled) {
      this.scheduled = true;
      void RESOLVED.then(this.drainFn);
    }
    return true;
  }

  /** the item kinds {@link process} receives; the others are passed on as they are */
  protected abstract readonly handles: KindSet<K>;

  /** Handles one input item; emits through {@link emit}. Throwing counts an exception and drops the item. */
  protected abstract process(item: ItemOf<K>): void;

  /**
   * One item: to {@link process} when the node handles its kind, else on to the outputs. A source node's queue
   * also holds its connector's events as they are (no kind): those go to `process` too.
   */
  private dispatch(item: Item): void {
    if ((~this.handles & kindBit(item.kind)) !== 0) this.emit(item);
    else this.process(item as ItemOf<K>);
  }

  /** Pushes to every output without blocking; a full receiver drops the item and counts it here. */
  protected emit(item: Item): void {
    if (item.kind !== 'watermark') this.metrics.recordsOut++;
    const outs = this.outputs;
    for (let i = 0; i < outs.length; i++) {
      const out = outs[i];
      if (!out.accept(item)) this.metrics.error(`buffer full, drop message from ${this.name} to ${out.name}`);
    }
  }

  /** An evaluation failure: counted, and forwarded as data when the rule has sendError. */
  protected emitError(err: unknown, sendError: boolean): void {
    this.metrics.error(err);
    if (sendError) this.emit(err instanceof ErrorRecord ? err : new ErrorRecord(this.metrics.lastException));
  }

  open(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.closed = true;
    this.queue.clear();
    this.metrics.bufferLength = 0;
    return Promise.resolve();
  }

  /**
   * An evaluation asked its rule to stop (a JavaScript function ran past its time limit, docs/runtime.md §8): the rule
   * fails with `err`, and this node takes nothing more, as if closed, until the rule's close comes. Each record queued
   * here (up to a drain's 256, and whatever arrives before the close) would otherwise call the function again and
   * hold the thread for the whole limit, and every other rule on that thread with it.
   */
  protected stopRule(err: Error): void {
    this.closed = true;
    this.queue.clear();
    this.metrics.bufferLength = 0;
    this.fatal(err);
  }

  /**
   * Stops draining after the item being processed until the returned function is called: a node that splits a
   * large piece of work over several turns of the event loop keeps its items in order this way.
   */
  protected suspend(): () => void {
    this.suspended = true;
    return () => {
      this.suspended = false;
      if (this.queue.size > 0 && !this.scheduled && !this.closed) {
        this.scheduled = true;
        void RESOLVED.then(this.drainFn);
      }
    };
  }

  private drain(): void {
    this.scheduled = false;
    if (this.closed || this.suspended) return;
    const q = this.queue;
    let n = q.size;
    if (n === 0) return;
    // only the emissions of windows and joins wait: single events keep their order with the window timers
    const head = (q.peek() as Item).kind;
    if ((head === 'rows' || head === 'units') && turnOver()) {
      this.scheduled = true;
      setImmediate(this.drainFn);
      return;
    }
    if (n > MAX_DRAIN_BATCH) n = MAX_DRAIN_BATCH;
    const m = this.metrics;
    const t0 = performance.now();
    m.lastInvocation = Math.round(TIME_ORIGIN + t0);
    const track = activity;
    if (track !== null) {
      track[0] = this.activityId;
      if (worked !== null) worked(this.activityId);
    }
    for (let i = 0; i < n; i++) {
      if (track !== null) track[1]++;
      this.take(q.shift() as Item);
      if (this.closed) break;
      if (this.suspended) break;
    }
    if (track !== null) track[0] = 0;
    if (this.closed) return;
    const t1 = performance.now();
    const us = (t1 - t0) * 1000;
    m.busyUs += us;
    if (this.arrival >= 0) {
      m.processLatencyUs = Math.round((t1 - this.arrival) * 1000);
      // what is still queued arrived before this drain started
      this.arrival = q.size > 0 ? t0 : -1;
    } else {
      m.processLatencyUs = Math.round(us / n);
    }
    m.bufferLength = q.size;
    if (q.size > 0 && !this.scheduled && !this.suspended) {
      this.scheduled = true;
      void RESOLVED.then(this.drainFn);
    }
  }

  private runDirect(item: Item): void {
    const m = this.metrics;
    const t0 = performance.now();
    m.lastInvocation = Math.round(TIME_ORIGIN + t0);
    const track = activity;
    const outer = track !== null ? track[0] : 0;
    if (track !== null) {
      track[0] = this.activityId;
      track[1]++;
    }
    this.take(item);
    // direct nodes run nested inside their upstream node's processing
    if (track !== null) track[0] = outer;
    const us = (performance.now() - t0) * 1000;
    m.busyUs += us;
    m.processLatencyUs = Math.round(us);
  }

  /**
   * Runs an item inside the upstream node's work, never queued: nodes that exist to report eKuiper's node names and
   * metrics for a step of their upstream's work (the MQTT decompress and decoder nodes, docs/runtime.md §1.6) accept
   * this way. They count their records, exceptions and calls here; the time is spent, and counted, upstream.
   */
  protected runFused(item: Item): boolean {
    if (this.closed) return true;
    this.metrics.lastInvocation = Date.now();
    this.take(item);
    return true;
  }

  /** Starts recording a span per traced item; the outputs are wrapped to record what the node emits. */
  startTracing(tracer: RuleTracer): void {
    this.stopTracing();
    const outs = this.outputs;
    for (let i = 0; i < outs.length; i++) outs[i] = new TracingReceiver(outs[i], tracer);
    this.tracer = tracer;
  }

  stopTracing(): void {
    if (this.tracer === null) return;
    this.tracer = null;
    const outs = this.outputs;
    for (let i = 0; i < outs.length; i++) {
      const o = outs[i];
      if (o instanceof TracingReceiver) outs[i] = o.inner;
    }
  }

  /** {@link take} while tracing: the item's span is active while the node processes it. */
  private takeTraced(item: Item, tracer: RuleTracer): void {
    const span = tracer.begin(this.name, item, this.name.startsWith('source_'));
    const outer = tracer.active;
    const failures = this.metrics.exceptions;
    tracer.active = span;
    try {
      this.takeItem(item);
    } finally {
      tracer.active = outer;
    }
    if (span !== undefined)
      tracer.end(span, this.metrics.exceptions > failures ? this.metrics.lastException : undefined);
  }

  /** One item, queued or not: counted in (data only), dispatched, a throw counted as an exception. */
  private take(item: Item): void {
    if (this.tracer !== null) this.takeTraced(item, this.tracer);
    else this.takeItem(item);
  }

  private takeItem(item: Item): void {
    const m = this.metrics;
    if (item.kind !== 'watermark' && item.kind !== 'error') m.recordsIn++;
    try {
      this.dispatch(item);
    } catch (err) {
      m.error(err);
      const stop = takeRuleStop();
      if (stop) this.stopRule(stop);
    }
    m.messagesProcessed++;
  }

  /** Work done outside the queue (timers): timed and counted like a drain. */
  protected timed(fn: () => void): void {
    if (this.closed) return;
    const t0 = performance.now();
    this.metrics.lastInvocation = Date.now();
    try {
      fn();
    } catch (err) {
      this.metrics.error(err);
      const stop = takeRuleStop();
      if (stop) this.stopRule(stop);
    }
    this.metrics.busyUs += (performance.now() - t0) * 1000;
  }
}

/** Pushes a rule's output into a sink node (which has its own bounded buffer and drop policy). */
export class SinkReceiver implements Receiver {
  readonly name: string;
  constructor(readonly sink: SinkNode) {
    this.name = sink.metrics.name;
  }
  accept(item: Item): boolean {
    if (item.kind === 'output') this.sink.push(item.rows);
    else if (item.kind === 'error') this.sink.push(item);
    return true;
  }
}
