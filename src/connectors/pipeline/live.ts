/**
 * The live send path of a sink without a failure cache (docs/runtime.md §3): sends synchronously while the connector
 * settles synchronously (no promise or microtask per item), keeps one send pending for ordinary connectors (or
 * `concurrency`) and up to {@link PIPELINE_DEPTH} for pipelined ones (their transport keeps the order), and yields to
 * the event loop after a long burst so that other rules and the REST API keep answering. A failed send is counted
 * and given up, except at rule qos ≥ 1 a failure the connector marks recoverable: that send is tried again, after
 * 100 ms doubling up to 5 s, holding its place among the sends in flight, until it succeeds or the sink closes; the
 * checkpoints of the rule wait for it meanwhile (docs/runtime.md §1.9).
 */
import type { SinkPayload } from '../../contracts/index.js';
import { isRecoverable } from '../../contracts/failures.js';
import type { ValueObject } from '../../values/value.js';
import { encodeJson } from '../formats/jsonenc.js';
import type { SinkUnit } from './cache.js';
import { countFailed, countSent, transformFailed, type Sender, type SinkParts } from './sender.js';
import type { Payload } from './transform.js';

/** rows from which a list is encoded in slices of this many rows, one per turn of the event loop */
const LARGE_LIST = 4096;
/** sends a pipelined connector may have pending at once */
const PIPELINE_DEPTH = 1024;
/** items sent in one turn of the event loop before the sink yields */
const BURST = 1024;
/** longest wait of close for pending sends */
const CLOSE_WAIT_MS = 5000;
/** the first retry of a recoverable failure at rule qos ≥ 1, and the longest wait between retries */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5000;

export class LiveSender implements Sender {
  readonly cached = 0;
  /** sends started and not settled yet */
  private inflight = 0;
  /** a large list is being encoded in slices: later items wait */
  private encoding = false;
  private pumping = false;
  private yielded = false;
  /** resolves the wait of {@link halt} for the sends in flight */
  private settledAll: (() => void) | undefined;
  private readonly settleWaiters: Array<() => void> = [];
  /** timers of sends to be tried again (each holds its place in {@link inflight}) */
  private readonly retries = new Set<NodeJS.Timeout>();
  private readonly pumpFn = (): void => {
    this.yielded = false;
    this.pump();
  };

  constructor(private readonly parts: SinkParts) {}

  accept(): boolean {
    return false;
  }

  async open(): Promise<void> {
    // nothing kept from an earlier run
  }

  kick(): void {
    this.pump();
  }

  hasWork(): boolean {
    return this.parts.buffer.hasNext();
  }

  pending(): boolean {
    return this.inflight > 0 || this.parts.buffer.hasNext();
  }

  stalled(): boolean {
    return false;
  }

  progress(): Promise<void> | undefined {
    return this.inflight > 0 ? new Promise<void>((resolve) => this.settleWaiters.push(resolve)) : undefined;
  }

  async halt(): Promise<void> {
    // sends waiting to be tried again are given up: their rows were not acknowledged, the source sends them again
    for (const t of this.retries) clearTimeout(t);
    this.inflight -= this.retries.size;
    this.retries.clear();
    if (this.inflight === 0) return;
    await new Promise<void>((resolve) => {
      // a connector that never settles must not hold the close forever
      const timer = setTimeout(resolve, CLOSE_WAIT_MS);
      this.settledAll = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async finish(): Promise<void> {
    // no cache to save
  }

  private pump(): void {
    const parts = this.parts;
    if (this.pumping || this.yielded || parts.closed) return;
    this.pumping = true;
    const depth = parts.connector.pipelined === true ? PIPELINE_DEPTH : parts.settings.concurrency;
    const wholeEntries = !parts.settings.sendSingle;
    let sent = 0;
    try {
      while (this.inflight < depth && !parts.closed && !this.encoding) {
        if (sent >= BURST) {
          this.yielded = true;
          setImmediate(this.pumpFn);
          break;
        }
        const unit = parts.buffer.next();
        if (unit === undefined) break;
        sent++;
        const seq = parts.ledger.unitStarted(wholeEntries);
        // the metric is refreshed now and then, not per row of a large burst
        if ((sent & 63) === 0) parts.updateBuffer();
        this.send(unit, seq);
      }
    } finally {
      this.pumping = false;
    }
    parts.releasePressure();
    parts.updateBuffer();
    if (this.inflight === 0 && this.settledAll) this.settledAll();
  }

  private send(unit: SinkUnit, seq: number): void {
    const start = performance.now();
    this.parts.metrics.lastInvocation = Math.round(performance.timeOrigin + start);
    let payload: Payload;
    try {
      payload = this.parts.transform.apply(unit, false);
    } catch (err) {
      void transformFailed(this.parts, err);
      this.parts.ledger.unitSettled(seq);
      return;
    }
    if (Array.isArray(unit) && unit.length >= LARGE_LIST && this.parts.transform.plainJson) {
      this.encodeInSlices(unit, payload, start, seq);
      return;
    }
    this.collect(unit, payload, start, seq);
  }

  /**
   * Encodes a large list a slice per turn of the event loop (a window of a hundred thousand rows would otherwise
   * hold the process for the whole encoding), then sends it; the sink sends nothing else meanwhile.
   */
  private encodeInSlices(rows: ValueObject[], payload: Payload, start: number, seq: number): void {
    this.inflight++;
    this.encoding = true;
    const parts: string[] = [];
    const step = (from: number): void => {
      if (this.parts.closed) {
        this.encoding = false;
        this.parts.ledger.unitSettled(seq);
        this.settled();
        return;
      }
      try {
        const end = Math.min(rows.length, from + LARGE_LIST);
        for (let i = from; i < end; i++) parts.push(encodeJson(rows[i]));
        if (end < rows.length) {
          setImmediate(step, end);
          return;
        }
        payload.preset(Buffer.from(`[${parts.join(',')}]`, 'utf8'));
      } catch (err) {
        this.encoding = false;
        void transformFailed(this.parts, err);
        this.parts.ledger.unitSettled(seq);
        this.settled();
        return;
      }
      this.encoding = false;
      this.inflight--;
      this.collect(rows, payload, start, seq);
      this.wakeSettleWaiters();
      this.pump();
    };
    setImmediate(step, 0);
  }

  /** Sends one unit; `tries`: the failed attempts before this one (a retry already holds its place in flight). */
  private collect(unit: SinkUnit, payload: SinkPayload, start: number, seq: number, tries = 0): void {
    const { connector, ctx, metrics, ledger } = this.parts;
    const held = tries > 0;
    let pending: Promise<void> | void;
    try {
      pending = connector.collect(ctx, payload);
    } catch (err) {
      this.failed(unit, payload, start, seq, tries, err, held);
      return;
    }
    if (pending === undefined) {
      countSent(metrics, unit, start);
      ledger.unitSettled(seq);
      if (held) this.settled();
      return;
    }
    if (!held) this.inflight++;
    pending.then(
      () => {
        countSent(metrics, unit, start);
        ledger.unitSettled(seq);
        this.settled();
      },
      (err: unknown) => this.failed(unit, payload, start, seq, tries, err, true),
    );
  }

  /**
   * A send failed: counted; tried again later when the rule is at-least-once and the failure recoverable, else given
   * up. `held`: the send holds a place in {@link inflight}.
   */
  private failed(
    unit: SinkUnit,
    payload: SinkPayload,
    start: number,
    seq: number,
    tries: number,
    err: unknown,
    held: boolean,
  ): void {
    countFailed(this.parts.metrics, err);
    if (this.parts.atLeastOnce && isRecoverable(err) && !this.parts.closed) {
      if (!held) this.inflight++;
      const timer = setTimeout(
        () => {
          this.retries.delete(timer);
          this.collect(unit, payload, start, seq, tries + 1);
        },
        Math.min(RETRY_FIRST_MS * 2 ** tries, RETRY_MAX_MS),
      );
      this.retries.add(timer);
      return;
    }
    this.parts.ledger.unitSettled(seq);
    if (held) this.settled();
  }

  private settled(): void {
    this.inflight--;
    if (this.inflight === 0 && this.settledAll) this.settledAll();
    this.wakeSettleWaiters();
    this.pump();
  }

  private wakeSettleWaiters(): void {
    if (this.settleWaiters.length > 0) for (const wake of this.settleWaiters.splice(0)) wake();
  }
}
