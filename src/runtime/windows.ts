/**
 * Window operators (docs/sql.md §5): tumbling, hopping, sliding (with delay and OVER(WHEN) trigger), session and count,
 * in processing time (driven by the injected {@link Clock}) and in event time (driven by {@link Watermark}s).
 * Each emission is one {@link RowBatch} with the window bounds the spec defines, quirks included.
 */
import type { Row } from '../contracts/index.js';
import type { Clock, TimerHandle } from './clock.js';
import { alignBoundary, unitOf, type TimeUnit } from './align.js';
import type { WindowSpec } from '../plan/plan.js';
import { kinds, RowBatch, unhandled, type ItemOf } from './items.js';
import { QueueNode } from './node.js';
import { decodeRow, encodeRow, type Checkpointed, type Json } from './checkpoint.js';
import { rowBytes } from './row-size.js';

export interface WindowNodeOptions {
  /** lengths in ms (events for count windows), see the plan's WindowSpec */
  spec: WindowSpec;
  /** OVER (WHEN cond) of a sliding window bound to the rule's context: true when the row triggers an emission */
  trigger?: ((row: Row) => boolean) | null;
  eventTime: boolean;
  clock: Clock;
  sendError: boolean;
  bufferLength: number;
  /**
   * bytes the buffered rows may hold (rule option `memoryLimit`, docs/runtime.md §1.10), estimated (runtime/row-size.ts);
   * past it the rule is stopped with an error saying so. 0: no bound.
   */
  memoryLimit?: number;
}

/** Creates the operator for one window spec. */
export function createWindowNode(name: string, opts: WindowNodeOptions): WindowNode {
  switch (opts.spec.type) {
    case 'tumbling':
      return new TumblingWindow(name, opts);
    case 'hopping':
      return new HoppingWindow(name, opts);
    case 'sliding':
      return new SlidingWindow(name, opts);
    case 'session':
      return new SessionWindow(name, opts);
    case 'count':
      return new CountWindow(name, opts);
  }
}

function ts(row: Row): number {
  return row.timestamp;
}

type WindowKinds = 'tuple' | 'join' | 'watermark';

export abstract class WindowNode extends QueueNode<WindowKinds> implements Checkpointed {
  protected readonly handles = kinds<WindowKinds>('tuple', 'join', 'watermark');
  protected readonly spec: WindowSpec;
  protected readonly unit: TimeUnit;
  protected readonly trigger: ((row: Row) => boolean) | null;
  protected readonly eventTime: boolean;
  protected readonly clock: Clock;
  protected readonly sendError: boolean;
  /** buffered rows, in arrival (processing time) or timestamp (event time) order */
  protected rows: Row[] = [];
  protected timer: TimerHandle | undefined;
  private readonly memoryLimit: number;
  /** estimated bytes of {@link rows}, as of when it had {@link counted} rows */
  private held = 0;
  private counted = 0;

  constructor(name: string, opts: WindowNodeOptions) {
    super(name, opts.bufferLength);
    this.memoryLimit = opts.memoryLimit ?? 0;

    this.spec = opts.spec;
    this.unit = unitOf(opts.spec.unitMs);
    this.trigger = opts.trigger ?? null;
    this.eventTime = opts.eventTime;
    this.clock = opts.clock;
    this.sendError = opts.sendError;
  }

  protected process(item: ItemOf<WindowKinds>): void {
    switch (item.kind) {
      case 'tuple':
      case 'join':
        this.onRow(item);
        this.account(item);
        return;
      case 'watermark':
        this.onWatermark(item.ts);
        return;
      default:
        unhandled(item);
    }
  }

  protected abstract onRow(row: Row): void;

  /** Estimated bytes the buffered rows hold (as of the last row in; a worker out of memory names the largest). */
  get heldBytes(): number {
    return this.rows.length === 0 ? 0 : this.held;
  }

  /**
   * Counts the row just buffered against the rule's memory bound. One row comes in per call: any other change of the
   * row count since the last call means rows were emitted or dropped, and what stays is counted again (each row's
   * estimate is remembered, so that is a sum).
   */
  private account(row: Row): void {
    const n = this.rows.length;
    if (n === this.counted + 1) this.held += rowBytes(row);
    else if (n !== this.counted) {
      let sum = 0;
      for (const r of this.rows) sum += rowBytes(r);
      this.held = sum;
    }
    this.counted = n;
    if (this.memoryLimit <= 0 || this.held <= this.memoryLimit) return;
    const err = new Error(
      `the rule was stopped: its window ${this.name} held about ${this.held} bytes in ${n} rows, more than its ` +
        `memoryLimit of ${this.memoryLimit} bytes`,
    );
    // the rows are let go at once: the rule stops, and nothing it held may keep the worker's heap full meanwhile
    this.rows = [];
    this.held = 0;
    this.counted = 0;
    this.fatal(err);
  }
  protected onWatermark(_ts: number): void {}
  /** processing time: schedule the first timers */
  protected start(): void {}

  protected schedule(at: number, fn: () => void): void {
    this.timer?.cancel();
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.timed(fn);
    }, at - this.clock.now());
  }

  protected fire(rows: Row[], start: number, end: number): void {
    this.emit(new RowBatch(rows, start, end));
  }

  override open(): Promise<void> {
    if (!this.eventTime) this.start();
    return Promise.resolve();
  }

  override close(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    return super.close();
  }

  /** numbers that, with the buffered rows, describe the window's progress */
  protected abstract numbers(): Record<string, number>;
  protected abstract setNumbers(n: Record<string, number>): void;

  get checkpointKey(): string {
    return this.name;
  }
  hasState(): boolean {
    return true;
  }
  /** sliding windows: the triggers not emitted yet */
  protected pendingTriggers(): number[] {
    return [];
  }
  protected setPendingTriggers(_pending: number[]): void {}

  /** `{rows, num, pending}`: the buffered rows, the numbers of the window's progress, the sliding triggers waiting */
  snapshot(): Json {
    return { rows: this.rows.map(encodeRow), num: this.numbers(), pending: this.pendingTriggers() };
  }

  restore(state: Json): void {
    const s = state as { rows: unknown[]; num: Record<string, number>; pending?: number[] };
    this.rows = s.rows.map(decodeRow);
    this.setNumbers(s.num);
    this.setPendingTriggers((s.pending ?? []).slice());
  }
}

// ------------------------------------------------------------------------------------------------ tumbling

/**
 * A window closed at aligned boundaries `period` apart (tumbling: its length; hopping: its hop). Boundaries, timers,
 * the first event-time boundary and the checkpointed numbers are kept the same way for both.
 */
abstract class AlignedWindow extends WindowNode {
  /** end of the next window (0: not aligned yet) */
  protected nextEnd = 0;
  /** start reference of the next window (tumbling: the start it reports; hopping: the previous emission time) */
  protected mark = 0;
  /** distance between two boundaries */
  protected abstract readonly period: number;
  /** the checkpoint key `mark` is saved under */
  protected abstract readonly markKey: string;

  protected abstract closeWindow(): void;

  protected override start(): void {
    const now = this.clock.now();
    if (this.nextEnd === 0) {
      this.mark = now;
      this.nextEnd = alignBoundary(now, this.spec.alignParam, this.unit);
    } else if (this.nextEnd < now) {
      // restored from a checkpoint after a pause: the restored rows go into the next boundary still ahead
      this.nextEnd += Math.ceil((now - this.nextEnd) / this.period) * this.period;
    }
    this.schedule(this.nextEnd, () => this.tick());
  }

  private tick(): void {
    this.closeWindow();
    this.schedule(this.nextEnd, () => this.tick());
  }

  protected onRow(row: Row): void {
    if (this.eventTime && this.nextEnd === 0) {
      this.mark = ts(row);
      this.nextEnd = alignBoundary(ts(row), this.spec.alignParam, this.unit);
    }
    this.rows.push(row);
  }

  protected override onWatermark(wm: number): void {
    while (this.nextEnd !== 0 && this.nextEnd <= wm) this.closeWindow();
  }

  protected numbers(): Record<string, number> {
    return { nextEnd: this.nextEnd, [this.markKey]: this.mark };
  }
  protected setNumbers(n: Record<string, number>): void {
    this.nextEnd = n.nextEnd ?? 0;
    this.mark = n[this.markKey] ?? 0;
  }
}

class TumblingWindow extends AlignedWindow {
  protected readonly period = this.spec.length;
  protected readonly markKey = 'nextStart';

  protected closeWindow(): void {
    const end = this.nextEnd;
    const all = this.rows;
    let n = 0;
    while (n < all.length && ts(all[n]) < end) n++;
    let out: Row[];
    if (n === all.length) {
      out = all;
      this.rows = [];
    } else if (this.eventTime) {
      out = all.slice(0, n);
      this.rows = all.slice(n);
    } else {
      // arrival order need not be timestamp order: keep whatever is not due yet
      out = all.filter((r) => ts(r) < end);
      this.rows = all.filter((r) => ts(r) >= end);
    }
    this.fire(out, this.mark, end);
    this.mark = end;
    this.nextEnd = end + this.period;
  }
}

// ------------------------------------------------------------------------------------------------ hopping

class HoppingWindow extends AlignedWindow {
  private readonly lengthMs = this.spec.length;
  protected readonly period = this.spec.interval;
  protected readonly markKey = 'prevEmit';

  protected closeWindow(): void {
    const end = this.nextEnd;
    const from = end - this.lengthMs;
    const out: Row[] = [];
    for (const r of this.rows) {
      const t = ts(r);
      if (t >= from && t < end) out.push(r);
    }
    // reported start: previous emission − hop (docs/sql.md §5.6 quirk)
    this.fire(out, this.mark - this.period, end);
    this.mark = end;
    this.nextEnd = end + this.period;
    const keepFrom = this.nextEnd - this.lengthMs;
    this.rows = this.rows.filter((r) => ts(r) >= keepFrom);
  }
}

// ------------------------------------------------------------------------------------------------ sliding

class SlidingWindow extends WindowNode {
  private readonly lengthMs = this.spec.length;
  private readonly delayMs = this.spec.interval;
  /** timestamps of triggering rows whose window is not emitted yet (delay, or event time) */
  private pending: number[] = [];
  private delayTimers = new Set<TimerHandle>();

  /** Emits the window of trigger `t` once its delay has passed. */
  private armDelay(t: number): void {
    const h: TimerHandle = this.clock.setTimeout(
      () => {
        this.delayTimers.delete(h);
        this.timed(() => {
          const i = this.pending.indexOf(t);
          if (i >= 0) this.pending.splice(i, 1);
          this.emitFor(t);
        });
      },
      t + this.delayMs - this.clock.now(),
    );
    this.delayTimers.add(h);
  }

  protected onRow(row: Row): void {
    this.rows.push(row);
    let triggers = true;
    if (this.trigger) {
      try {
        triggers = this.trigger(row);
      } catch (err) {
        this.emitError(err, this.sendError);
        triggers = false;
      }
    }
    const t = ts(row);
    if (triggers) {
      if (this.eventTime) {
        this.pending.push(t);
      } else if (this.delayMs > 0) {
        this.pending.push(t);
        this.armDelay(t);
      } else {
        this.emitFor(t);
      }
    }
    this.prune(t);
  }

  private emitFor(t: number): void {
    const from = t - this.lengthMs;
    const out: Row[] = [];
    if (this.delayMs > 0) {
      const to = t + this.delayMs;
      for (const r of this.rows) if (ts(r) >= from && ts(r) < to) out.push(r);
      this.fire(out, from, to);
    } else {
      for (const r of this.rows) if (ts(r) >= from && ts(r) <= t) out.push(r);
      this.fire(out, from, t);
    }
  }

  private prune(latest: number): void {
    let keepFrom = latest - this.lengthMs;
    for (const p of this.pending) if (p - this.lengthMs < keepFrom) keepFrom = p - this.lengthMs;
    if (this.rows.length > 0 && ts(this.rows[0]) < keepFrom) this.rows = this.rows.filter((r) => ts(r) >= keepFrom);
  }

  protected override onWatermark(wm: number): void {
    while (this.pending.length > 0 && this.pending[0] + this.delayMs <= wm) {
      const t = this.pending.shift() as number;
      this.emitFor(t);
    }
  }

  override close(): Promise<void> {
    for (const h of this.delayTimers) h.cancel();
    this.delayTimers.clear();
    return super.close();
  }

  protected override pendingTriggers(): number[] {
    return this.pending.slice();
  }
  protected override setPendingTriggers(pending: number[]): void {
    this.pending = pending;
  }

  protected override start(): void {
    // restored delayed triggers are re-armed
    for (const t of this.pending) this.armDelay(t);
  }

  protected numbers(): Record<string, number> {
    return {};
  }
  protected setNumbers(): void {}
}

// ------------------------------------------------------------------------------------------------ session

class SessionWindow extends WindowNode {
  private readonly maxMs = this.spec.length;
  private readonly timeoutMs = this.spec.interval;
  /** start reported for the current session when it continues after a cut (0: first row's timestamp) */
  private cutStart = 0;
  private nextTick = 0;
  private ticker: TimerHandle | undefined;

  // processing time ----------------------------------------------------------------------------------

  protected override start(): void {
    const now = this.clock.now();
    if (this.nextTick === 0) this.nextTick = alignBoundary(now, this.spec.alignParam, this.unit);
    else if (this.nextTick < now) this.nextTick += Math.ceil((now - this.nextTick) / this.maxMs) * this.maxMs;
    this.armTicker();
    if (this.rows.length > 0) this.schedule(this.clock.now() + this.timeoutMs, () => this.timeout());
  }

  private armTicker(): void {
    this.ticker?.cancel();
    this.ticker = this.clock.setTimeout(() => {
      this.ticker = undefined;
      this.timed(() => this.onTick(this.nextTick));
      this.nextTick += this.maxMs;
      if (!this.closed) this.armTicker();
    }, this.nextTick - this.clock.now());
  }

  private onTick(n: number): void {
    if (this.rows.length === 0 || ts(this.rows[0]) > n - this.maxMs) return;
    const out = this.rows.filter((r) => ts(r) < n);
    this.rows = this.rows.filter((r) => ts(r) >= n);
    this.fire(out, this.cutStart || ts(out[0]), n);
    this.cutStart = n;
  }

  private timeout(): void {
    if (this.rows.length > 0) {
      const out = this.rows;
      this.rows = [];
      this.fire(out, this.cutStart || ts(out[0]), this.clock.now());
    }
    this.cutStart = 0;
  }

  protected onRow(row: Row): void {
    this.rows.push(row);
    if (!this.eventTime) this.schedule(this.clock.now() + this.timeoutMs, () => this.timeout());
  }

  // event time ---------------------------------------------------------------------------------------

  protected override onWatermark(wm: number): void {
    for (;;) {
      const rows = this.rows;
      if (rows.length === 0) return;
      const first = rows[0];
      let tick = alignBoundary(ts(first), this.spec.alignParam, this.unit);
      let end = -1;
      let cut = false;
      let count = rows.length;
      for (let i = 1; i < rows.length; i++) {
        const p = ts(rows[i - 1]);
        const x = ts(rows[i]);
        if (x - p > this.timeoutMs) {
          end = p + this.timeoutMs;
          count = i;
          break;
        }
        if (x > tick) {
          if (tick - this.maxMs > ts(first)) {
            end = tick;
            cut = true;
            count = i;
            break;
          }
          tick += this.maxMs;
        }
      }
      if (end < 0) {
        const last = ts(rows[rows.length - 1]);
        if (wm - last > this.timeoutMs) end = last + this.timeoutMs;
      }
      if (end < 0 || end > wm) return;
      const out = rows.slice(0, count);
      this.rows = rows.slice(count);
      this.fire(out, this.cutStart || ts(first), end);
      this.cutStart = cut ? end : 0;
    }
  }

  override close(): Promise<void> {
    this.ticker?.cancel();
    this.ticker = undefined;
    return super.close();
  }

  protected numbers(): Record<string, number> {
    return { cutStart: this.cutStart, nextTick: this.nextTick };
  }
  protected setNumbers(n: Record<string, number>): void {
    this.cutStart = n.cutStart ?? 0;
    this.nextTick = n.nextTick ?? 0;
  }
}

// ------------------------------------------------------------------------------------------------ count

class CountWindow extends WindowNode {
  private readonly size = this.spec.length;
  private readonly every = this.spec.interval > 0 ? this.spec.interval : this.spec.length;
  private counter = 0;

  protected onRow(row: Row): void {
    this.rows.push(row);
    if (this.rows.length > this.size) this.rows.shift();
    this.counter++;
    if (this.counter < this.every) return;
    this.counter = 0;
    if (this.rows.length < this.size) return;
    const now = this.clock.now();
    const out = this.rows;
    this.rows = this.every >= this.size ? [] : out.slice(this.every);
    this.fire(out, now, now);
  }

  protected numbers(): Record<string, number> {
    return { counter: this.counter };
  }
  protected setNumbers(n: Record<string, number>): void {
    this.counter = n.counter ?? 0;
  }
}
