/**
 * The asynchronous node `op_<N>_async` (docs/runtime.md §6.3): computes the calls of asynchronous functions (external
 * services, portable-plugin functions, `delay`) ahead of the stage that reads them, so that no call ever blocks
 * the thread. Like an ordered asynchronous I/O operator: up to `maxInFlight` rows (or emissions) have calls pending
 * at once, each call has a time limit, and items leave in the order they arrived, watermarks and error records
 * included. A failed call is counted as an exception here; the row goes on carrying the failure, and the stage
 * that reads the call reports it exactly as a failing synchronous function (error record, row dropped).
 */
import { performance } from 'node:perf_hooks';
import type { Row } from '../contracts/index.js';
import type { Value } from '../values/value.js';
import type { AsyncSite, AsyncStage, EvalContext, EvalUnit, QueryPlan } from '../plan/plan.js';
import { kinds, UnitBatch, type Item, type RowBatch } from './items.js';
import { QueueNode } from './node.js';

interface Pending {
  /** what to emit once done (null: nothing, the item was dropped) */
  out: Item | null;
  done: boolean;
  started: number;
}

/** One evaluation unit of an item: the row to evaluate on, the result key and how to bind the context. */
interface Unit {
  row: Row;
  key: object;
  unit: EvalUnit | null;
}

export class AsyncNode extends QueueNode<never> {
  /** items are started from {@link accept} in order, not dispatched by the base drain */
  protected readonly handles = kinds<never>();
  private readonly inFlight: Pending[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    name: string,
    capacity: number,
    private readonly stage: AsyncStage,
    private readonly ctx: EvalContext,
    private readonly plan: QueryPlan,
    private readonly sendError: boolean,
  ) {
    super(name, capacity);
  }

  /** No item queued or in flight (a bounded source's end waits for this). */
  get idle(): boolean {
    return this.queue.size === 0 && this.inFlight.length === 0;
  }

  override accept(item: Item): boolean {
    if (this.closed) return true;
    if (!this.queue.push(item)) return false;
    this.metrics.bufferLength = this.queue.size;
    this.pump();
    return true;
  }

  protected process(): void {}

  override async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.inFlight.length = 0;
    await super.close();
  }

  /** Starts queued items while there is room in flight. */
  private pump(): void {
    while (!this.closed && this.queue.size > 0 && this.inFlight.length < this.stage.maxInFlight) {
      const item = this.queue.shift() as Item;
      this.metrics.bufferLength = this.queue.size;
      const p: Pending = { out: item, done: false, started: performance.now() };
      this.inFlight.push(p);
      const work = this.start(item, p);
      if (work === null) p.done = true;
      else {
        void work.then(
          () => {
            p.done = true;
            this.flush();
          },
          (err: unknown) => {
            this.emitError(err, this.sendError);
            p.out = null;
            p.done = true;
            this.flush();
          },
        );
      }
    }
    this.flush();
  }

  /** Emits the finished items at the head, in arrival order. */
  private flush(): void {
    if (this.closed) return;
    const m = this.metrics;
    let emitted = false;
    while (this.inFlight.length > 0 && this.inFlight[0].done) {
      const p = this.inFlight.shift() as Pending;
      m.messagesProcessed++;
      m.processLatencyUs = Math.round((performance.now() - p.started) * 1000);
      if (p.out !== null) this.emit(p.out);
      emitted = true;
    }
    if (emitted && this.queue.size > 0) this.pump();
  }

  /** Binds the context and starts the calls of one item; null when it needs none. */
  private start(item: Item, p: Pending): Promise<void> | null {
    const ctx = this.ctx;
    let units: Unit[];
    let bind: (u: Unit) => void;
    const kind = item.kind;
    if (kind === 'tuple' || kind === 'join') {
      units = [{ row: item, key: item, unit: null }];
      bind = () => {
        ctx.setWindow(undefined, undefined);
        ctx.bindRow();
      };
    } else if (kind === 'rows' || kind === 'units') {
      const windowed = item.windowed;
      const ws = item.windowStart;
      const we = item.windowEnd;
      let batch: RowBatch | UnitBatch = item;
      if (item.kind === 'rows' && this.stage.consumer !== 'where') {
        // grouped stages see units: build them here (as the stage itself would) so that groups keep their identity
        ctx.setWindow(windowed ? ws : undefined, windowed ? we : undefined);
        try {
          batch = new UnitBatch(this.plan.toUnits(item.rows, ctx), ws, we, windowed);
        } catch (err) {
          this.emitError(err, this.sendError);
          p.out = null;
          return null;
        }
        p.out = batch;
      }
      units =
        batch.kind === 'units'
          ? batch.units.map((u) => ({ row: u.row, key: u.group ?? u.row, unit: u }))
          : batch.rows.map((r) => ({ row: r, key: r, unit: null }));
      bind = (u) => {
        ctx.setWindow(windowed ? ws : undefined, windowed ? we : undefined);
        if (u.unit !== null) ctx.bindUnit(u.unit);
        else ctx.bindRow();
      };
    } else {
      // watermarks, error records, table updates: in order, untouched
      return null;
    }
    this.metrics.recordsIn++;
    this.metrics.lastInvocation = Date.now();
    if (units.length === 0) return null;
    return this.runLevels(units, bind);
  }

  private async runLevels(units: Unit[], bind: (u: Unit) => void): Promise<void> {
    const levels = this.stage.levels;
    for (let l = 0; l < levels.length; l++) {
      if (this.closed) return;
      const calls: Array<Promise<void>> = [];
      const t0 = performance.now();
      for (const u of units) {
        bind(u);
        for (const site of levels[l]) {
          const c = this.call(site, u);
          if (c !== null) calls.push(c);
        }
      }
      this.metrics.busyUs += (performance.now() - t0) * 1000;
      if (calls.length > 0) await Promise.all(calls);
    }
  }

  /** Starts one call; its result (or failure) lands in the stage's slot for the unit. */
  private call(site: AsyncSite, u: Unit): Promise<void> | null {
    const stage = this.stage;
    let started: Value | Promise<Value>;
    try {
      started = site.start(u.row, this.ctx);
    } catch (err) {
      // an argument failed: the reading stage reports it as it would for any function
      stage.fail(u.key, site.index, err);
      return null;
    }
    if (!(started instanceof Promise)) {
      stage.put(u.key, site.index, started);
      return null;
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        settle(undefined, new Error(`timed out after ${site.timeoutMs} ms`));
      }, site.timeoutMs);
      this.timers.add(timer);
      let settled = false;
      const settle = (v: Value | undefined, err: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.timers.delete(timer);
        if (err !== undefined) {
          const e = site.failure(err);
          this.metrics.error(e);
          stage.fail(u.key, site.index, e);
        } else stage.put(u.key, site.index, v === undefined ? null : v);
        resolve();
      };
      started.then(
        (v) => settle(v, undefined),
        (err: unknown) => settle(undefined, err ?? new Error('failed')),
      );
    });
  }
}
