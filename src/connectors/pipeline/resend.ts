/**
 * The send path of a sink with a failure cache (docs/runtime.md §3.5): one loop at a time sends what the cache holds,
 * oldest first, `resendInterval` apart; a failure the connector marks recoverable keeps the unit and pauses the loop
 * until the next push or a retry timer. With `resendAlterQueue` live entries stay in the buffer and only failed units
 * go to the cache, which is sent in turns with them as `resendPriority` says.
 */
import type { KVStore } from '../../store/kv.js';
import type { SinkPayload } from '../../contracts/index.js';
import { isRecoverable } from '../../contracts/failures.js';
import type { ValueObject } from '../../values/value.js';
import { settledWithin } from '../../core/waits.js';
import { SinkCache, type SinkUnit } from './cache.js';
import type { CacheSaving } from './ledger.js';
import { countFailed, countSent, transformFailed, type Sender, type SinkParts } from './sender.js';
import type { CacheSettings } from './settings.js';

/** How long a close still waits for the send in flight once the drain's time is up. */
const IN_FLIGHT_GRACE_MS = 1000;

export class ResendSender implements Sender, CacheSaving {
  private readonly cache: SinkCache;
  /** the loop sending now */
  private running: Promise<void> | undefined;
  /** the head of the cache failed: wait for a new item or the retry timer */
  private paused = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private sleepTimer: { timer: NodeJS.Timeout; resolve: () => void } | undefined;
  /** which queue sends next under the alternate-queue priority (live items never wait for a failing target) */
  private resendTurn = false;
  private readonly settings: CacheSettings;

  constructor(
    private readonly parts: SinkParts,
    store: KVStore,
    namespace: string,
  ) {
    this.settings = parts.settings.cache;
    this.cache = new SinkCache(store, namespace, this.settings);
  }

  get cached(): number {
    return this.cache.size;
  }

  accept(rows: ValueObject[]): boolean {
    if (this.settings.alterQueue) return false;
    // the cache holds send units: one per row with sendSingle
    const { buffer, ledger } = this.parts;
    if (this.parts.settings.sendSingle) {
      for (const row of rows)
        if (!buffer.skipRow(row)) {
          this.cache.push(row);
          ledger.cachedPushed();
        }
    } else {
      this.cache.push(rows);
      ledger.cachedPushed();
    }
    this.paused = false;
    return true;
  }

  async open(): Promise<void> {
    if (this.settings.cleanCacheAtStop) await this.cache.drop();
    else await this.cache.load();
    this.parts.ledger.cachedAtOpen(this.cache.size);
  }

  kick(): void {
    if (this.running || this.parts.closed) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      this.parts.updateBuffer();
      // items may have arrived while the loop was finishing
      if (!this.parts.closed && this.hasWork()) this.kick();
    });
  }

  hasWork(): boolean {
    return this.parts.buffer.hasNext() || (!this.paused && this.cache.size > 0);
  }

  pending(): boolean {
    return this.running !== undefined || this.hasWork();
  }

  stalled(): boolean {
    return this.paused;
  }

  progress(): Promise<void> | undefined {
    return this.running;
  }

  settlesBySaving(): boolean {
    return this.paused || this.settings.alterQueue;
  }

  save(): Promise<void> {
    return this.cache.save();
  }

  async halt(): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.sleepTimer) {
      clearTimeout(this.sleepTimer.timer);
      this.sleepTimer.resolve();
    }
    // the drain before the close already gave the send in flight its time: a target that never answers must not
    // hold the close
    if (this.running) await settledWithin(this.running, IN_FLIGHT_GRACE_MS);
  }

  async finish(): Promise<void> {
    try {
      if (this.settings.cleanCacheAtStop) await this.cache.drop();
      else await this.cache.save();
    } catch (err) {
      this.parts.logger.warn({ err }, 'sink %s cannot save its cache', this.parts.metrics.name);
    }
  }

  private async drain(): Promise<void> {
    if (this.settings.alterQueue) return this.drainAlternate();
    const { ledger } = this.parts;
    let first = true;
    while (!this.parts.closed && !this.paused) {
      const unit = await this.cache.head();
      if (unit === undefined || this.parts.closed) break;
      if (!first && this.settings.resendInterval > 0 && this.cache.size > 1) {
        await this.sleep(this.settings.resendInterval);
        if (this.parts.closed) break;
      }
      first = false;
      const outcome = await this.send(unit, false);
      if (outcome === 'retry') {
        this.paused = true;
        this.scheduleRetry();
        ledger.settle();
        break;
      }
      this.cache.shift();
      ledger.cachedSent();
      ledger.settle();
      this.parts.updateBuffer();
    }
  }

  private pick(): 'live' | 'resend' | undefined {
    const live = this.parts.buffer.hasNext();
    const resend = !this.paused && this.cache.size > 0;
    if (!live && !resend) return undefined;
    if (!live) return 'resend';
    if (!resend) return 'live';
    const p = this.settings.priority;
    if (p === 1) return 'resend';
    if (p === -1) return 'live';
    this.resendTurn = !this.resendTurn;
    return this.resendTurn ? 'resend' : 'live';
  }

  private async drainAlternate(): Promise<void> {
    const { buffer, ledger } = this.parts;
    const wholeEntries = !this.parts.settings.sendSingle;
    while (!this.parts.closed) {
      const which = this.pick();
      if (which === undefined) break;
      if (which === 'live') {
        const unit = buffer.next();
        if (unit === undefined) continue;
        const seq = ledger.unitStarted(wholeEntries);
        if ((await this.send(unit, false)) === 'retry') {
          this.cache.push(unit);
          ledger.cachedPushed();
        }
        ledger.unitSettled(seq);
      } else {
        const unit = await this.cache.head();
        if (unit === undefined || this.parts.closed) break;
        if (this.settings.resendInterval > 0) {
          await this.sleep(this.settings.resendInterval);
          if (this.parts.closed) break;
        }
        if ((await this.send(this.markResent(unit), true)) === 'retry') {
          this.paused = true;
          this.scheduleRetry();
        } else {
          this.cache.shift();
          ledger.cachedSent();
        }
        ledger.settle();
      }
      this.parts.updateBuffer();
    }
  }

  private markResent(unit: SinkUnit): SinkUnit {
    const f = this.settings.indicatorField;
    if (f === '') return unit;
    return Array.isArray(unit) ? unit.map((r) => ({ ...r, [f]: true })) : { ...unit, [f]: true };
  }

  /** Retries a failed head even if no new item arrives (eKuiper waits for the next item; Eddy also retries on its own). */
  private scheduleRetry(): void {
    if (this.retryTimer || this.parts.closed) return;
    const delay = Math.max(this.settings.resendInterval, 1000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.paused = false;
      this.kick();
    }, delay);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleepTimer = undefined;
        resolve();
      }, ms);
      this.sleepTimer = { timer, resolve };
    });
  }

  /** Transforms and sends one unit: 'ok', 'drop' (failed for good) or 'retry' (recoverable, cached). */
  private async send(unit: SinkUnit, resend: boolean): Promise<'ok' | 'drop' | 'retry'> {
    const { connector, ctx, metrics, transform } = this.parts;
    const start = performance.now();
    // wall time from the monotonic reading already taken (one clock read less per send)
    metrics.lastInvocation = Math.round(performance.timeOrigin + start);
    let payload: SinkPayload;
    try {
      payload = transform.apply(unit, resend);
    } catch (err) {
      await transformFailed(this.parts, err);
      return 'drop';
    }
    try {
      await connector.collect(ctx, payload);
    } catch (err) {
      countFailed(metrics, err);
      return isRecoverable(err) ? 'retry' : 'drop';
    }
    countSent(metrics, unit, start);
    return 'ok';
  }
}
