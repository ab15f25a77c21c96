/**
 * What a sink node has settled, for `flush()` (the checkpoints of qos ≥ 1 rules, docs/runtime.md §1.9): entries of the
 * live buffer taken in and finished, send units started and settled, units put into the failure cache and taken out
 * of it. Both queues are FIFO, so a count says which ones are settled; a flush resolves once everything pushed before
 * it is sent, given up for good, or saved by the cache.
 */
import type { Logger } from 'pino';

/** What the ledger needs of a failure cache: units still in it count as settled once it is saved. */
export interface CacheSaving {
  /** sending is paused by a failure, or only cached units remain (alternate queue): saving settles them */
  settlesBySaving(): boolean;
  save(): Promise<void>;
}

interface FlushWaiter {
  entries: number;
  cached: number;
  resolve: (ok: boolean) => void;
}

export class SendLedger {
  private entriesIn = 0;
  private entriesDone = 0;
  /** send units started and settled (sent, failed or cached) */
  private unitsStarted = 0;
  private unitsSettled = 0;
  /** units settled before an earlier one (several sends in flight) */
  private readonly settledAhead = new Set<number>();
  /** per taken entry, the units it needs settled */
  private readonly entryMarks: number[] = [];
  private markHead = 0;
  private cachedIn = 0;
  private cachedOut = 0;
  private readonly waiters: FlushWaiter[] = [];
  private persisting: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly name: string,
    private readonly logger: Logger,
    private readonly cache: CacheSaving | undefined,
  ) {}

  entryPushed(): void {
    this.entriesIn++;
  }

  /** A unit starts; `wholeEntry`: it is a whole entry of the buffer (not one row of a `sendSingle` collection). */
  unitStarted(wholeEntry: boolean): number {
    const seq = ++this.unitsStarted;
    if (wholeEntry) this.entryTaken();
    return seq;
  }

  /**
   * Every unit of the entry just taken from the buffer has been started: it is done once as many units have settled
   * (units settle in the order they start; a flush waits for the entries pushed before it).
   */
  entryTaken(): void {
    this.entryMarks.push(this.unitsStarted);
    this.settleMarks();
  }

  /**
   * Unit `seq` settled. Units settle out of order when several sends are in flight (`concurrency`): an entry is done
   * only once every unit up to its last one has settled.
   */
  unitSettled(seq: number): void {
    if (seq !== this.unitsSettled + 1) {
      this.settledAhead.add(seq);
      return;
    }
    this.unitsSettled = seq;
    while (this.settledAhead.delete(this.unitsSettled + 1)) this.unitsSettled++;
    this.settleMarks();
  }

  /** `n` units are in the cache already (loaded at open) */
  cachedAtOpen(n: number): void {
    this.cachedIn = n;
  }

  cachedPushed(): void {
    this.cachedIn++;
  }

  cachedSent(): void {
    this.cachedOut++;
  }

  flush(): Promise<boolean> {
    return new Promise((resolve) => {
      this.waiters.push({ entries: this.entriesIn, cached: this.cachedIn, resolve });
      this.settle();
    });
  }

  /** The node closed: what still waits is not settled. */
  abandon(): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.resolve(false);
  }

  private settleMarks(): void {
    const marks = this.entryMarks;
    while (this.markHead < marks.length && marks[this.markHead] <= this.unitsSettled) {
      this.markHead++;
      this.entriesDone++;
      if (this.waiters.length > 0) this.settle();
    }
    if (this.markHead === marks.length) {
      marks.length = 0;
      this.markHead = 0;
    }
  }

  /**
   * Resolves the flushes whose inputs are all settled. Units still in the cache count as settled once the cache is
   * saved; it is saved when sending is paused by a failure, or when only cached units (alternate queue) remain.
   */
  settle(): void {
    const waiters = this.waiters;
    if (waiters.length === 0) return;
    let needSave = false;
    let i = 0;
    for (; i < waiters.length; i++) {
      const w = waiters[i];
      if (w.entries > this.entriesDone) break;
      if (w.cached > this.cachedOut) {
        if (this.cache?.settlesBySaving()) needSave = true;
        break;
      }
      w.resolve(true);
    }
    if (i > 0) waiters.splice(0, i);
    if (needSave && !this.persisting && this.cache) this.persist(this.cache);
  }

  private persist(cache: CacheSaving): void {
    // what is in the cache when the save starts is durable when it ends
    const covered = this.cachedIn;
    const entries = this.entriesDone;
    this.persisting = cache
      .save()
      .then(
        () => {
          const rest: FlushWaiter[] = [];
          for (const w of this.waiters.splice(0)) {
            if (w.cached <= covered && w.entries <= entries) w.resolve(true);
            else rest.push(w);
          }
          this.waiters.push(...rest);
        },
        (err: unknown) => this.logger.warn({ err }, 'sink %s cannot save its cache', this.name),
      )
      .finally(() => {
        this.persisting = undefined;
        if (this.waiters.length > 0 && !this.closed) setTimeout(() => this.settle(), 50).unref();
      });
  }
}
