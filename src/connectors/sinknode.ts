/**
 * The sink node shared by every sink (docs/runtime.md §3): input conversion, a bounded buffer, the output transformation
 * pipeline (dataTemplate → dataField → fields → format), the failure cache with resend, and metrics. A failing sink
 * never stops its rule: failures are counted, cached when the connector marks them recoverable, and retried.
 */
import type { Logger } from 'pino';
import { EddyError, ErrorCode } from '../core/errors.js';
import {
  ErrorRecord,
  NodeMetrics,
  type Format,
  type Props,
  type SinkConnector,
  type SinkContext,
  type SinkInput,
  type SinkNode,
  type SinkNodeOptions,
  type SinkPayload,
} from '../contracts/index.js';
import type { EddyConfig } from '../config/index.js';
import type { KVStore } from '../store/kv.js';
import { isObject, type Value, type ValueObject } from '../values/value.js';
import type { Registry } from './registry.js';
import { SinkCache, type SinkUnit } from './sinkcache.js';
import { propBool, propInt, propKey, propString, propStringList } from './props.js';
import { parseJsonExact } from './formats/jsonparse.js';
import { encodeJson } from './formats/jsonenc.js';
import { settledWithin } from '../core/waits.js';

/** Global `sink:` settings of kuiper.yaml: the defaults of the cache properties. */
export type SinkDefaults = EddyConfig['sink'];

export interface SinkNodeDeps {
  registry: Registry;
  /** where failure caches are kept */
  store: KVStore;
  sinkDefaults: SinkDefaults;
  dataDir: string;
  /** renders a Go text/template against data; throws on template errors */
  render: (template: string, data: unknown) => string;
  /** parses a template once, throwing its syntax error (templates are checked when the rule is built) */
  checkTemplate: (template: string) => void;
}

/** Properties every sink understands (docs/runtime.md §3.2). */
interface CommonProps {
  /** sends in flight at once on the live path of a connector that is not pipelined (sink property `concurrency`) */
  concurrency: number;
  bufferLength: number;
  omitIfEmpty: boolean;
  sendSingle: boolean;
  dataTemplate: string;
  dataField: string;
  fields: string[] | undefined;
  format: string;
  cache: {
    enabled: boolean;
    memoryCacheThreshold: number;
    maxDiskCache: number;
    bufferPageSize: number;
    resendInterval: number;
    cleanCacheAtStop: boolean;
    /** failed items go to a separate resend queue; live items keep flowing */
    alterQueue: boolean;
    /** with the alternate queue: -1 live first, 0 alternate, 1 resend first */
    priority: number;
    /** field set to true on resent rows */
    indicatorField: string;
  };
}

const textEncoder = new TextEncoder();
/** rows from which a list is encoded in slices of this many rows, one per turn of the event loop */
const LARGE_LIST = 4096;
/** sends a pipelined connector may have pending at once */
const PIPELINE_DEPTH = 1024;
/** items sent in one turn of the event loop before the sink yields */
const BURST = 1024;
/** longest wait of close for pending sends */
const CLOSE_WAIT_MS = 5000;

function executorError(message: string): EddyError {
  return new EddyError(ErrorCode.Executor, message);
}

function readCommon(props: Props, defaults: SinkDefaults, registry: Registry): CommonProps {
  let common: CommonProps;
  try {
    const concurrency = propInt(props, 'concurrency', 1);
    if (concurrency <= 0) throw new Error('invalid type for concurrency property, should be positive integer');
    const bufferLength = propInt(props, 'bufferLength', 1024);
    if (bufferLength <= 0) throw new Error('invalid type for bufferLength property, should be positive integer');
    const batchSize = propInt(props, 'batchSize', 0);
    if (batchSize < 0) throw new Error('invalid batchSize, should be positive');
    const linger = propInt(props, 'lingerInterval', 0);
    if (linger < 0) throw new Error('invalid lingerInterval, should be positive');
    common = {
      concurrency,
      bufferLength,
      omitIfEmpty: propBool(props, 'omitIfEmpty', false),
      sendSingle: propBool(props, 'sendSingle', false),
      dataTemplate: propString(props, 'dataTemplate', ''),
      dataField: propString(props, 'dataField') ?? propString(props, 'tableDataField', ''),
      fields: propStringList(props, 'fields'),
      format: propString(props, 'format', 'json').toLowerCase() || 'json',
      cache: {
        enabled: propBool(props, 'enableCache', defaults.enableCache ?? false),
        memoryCacheThreshold: propInt(props, 'memoryCacheThreshold', defaults.memoryCacheThreshold ?? 1024),
        maxDiskCache: propInt(props, 'maxDiskCache', defaults.maxDiskCache ?? 1024000),
        bufferPageSize: propInt(props, 'bufferPageSize', defaults.bufferPageSize ?? 256),
        resendInterval: propInt(props, 'resendInterval', defaults.resendInterval ?? 0),
        cleanCacheAtStop: propBool(props, 'cleanCacheAtStop', defaults.cleanCacheAtStop ?? false),
        alterQueue: propBool(props, 'resendAlterQueue', false),
        priority: propInt(props, 'resendPriority', 0),
        indicatorField: propString(props, 'resendIndicatorField', ''),
      },
    };
  } catch (err) {
    throw executorError(`fail to parse sink configuration: ${(err as Error).message}`);
  }
  const c = common.cache;
  const priority = c.priority;
  if (
    c.memoryCacheThreshold < 0 ||
    c.maxDiskCache < 0 ||
    c.resendInterval < 0 ||
    c.bufferPageSize <= 0 ||
    c.memoryCacheThreshold < c.bufferPageSize ||
    c.memoryCacheThreshold % c.bufferPageSize !== 0 ||
    (c.maxDiskCache !== 0 && (c.maxDiskCache < c.bufferPageSize || c.maxDiskCache % c.bufferPageSize !== 0)) ||
    (priority !== -1 && priority !== 0 && priority !== 1)
  ) {
    throw executorError('invalid cache properties');
  }
  if (!registry.format(common.format)) throw executorError(`invalid format ${common.format}`);
  return common;
}

/** A FIFO with O(1) shift (`Array#shift` copies large arrays). */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(v: T): void {
    this.items.push(v);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}

/** An error a connector may throw from `collect` to have the item cached and resent. */
export function recoverable(err: unknown): Error & { recoverable: true } {
  const e = (err instanceof Error ? err : new Error(String(err))) as Error & { recoverable: true };
  e.recoverable = true;
  return e;
}

/** A connector that wants to hear about items the pipeline could not transform (websocket `sendError`). */
export interface TransformFailureListener {
  transformFailed(ctx: SinkContext, err: Error): Promise<void>;
}

function listensToTransformFailures(c: SinkConnector): c is SinkConnector & TransformFailureListener {
  return typeof (c as Partial<TransformFailureListener>).transformFailed === 'function';
}

function isRecoverable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { recoverable?: unknown }).recoverable === true;
}

function pickFields(row: Value, fields: readonly string[]): ValueObject {
  const out: ValueObject = {};
  const src = isObject(row) ? row : {};
  for (const f of fields) out[f] = src[f] === undefined ? null : src[f];
  return out;
}

/** The transformation pipeline of docs/runtime.md §3.3 for one unit; encoding is lazy so map-based sinks never pay for it. */
class Payload implements SinkPayload {
  private encoded: Uint8Array | undefined;
  constructor(
    readonly data: ValueObject | ValueObject[] | Value,
    readonly rows: ValueObject[],
    private readonly encodeFn: () => Uint8Array,
    readonly resend: boolean,
  ) {}

  get bytes(): Uint8Array {
    if (this.encoded === undefined) this.encoded = this.encodeFn();
    return this.encoded;
  }

  /** bytes encoded ahead (a large list encoded in slices) */
  preset(bytes: Uint8Array): void {
    this.encoded = bytes;
  }
}

/** Longest wait of stop/delete for a sink to send what it accepted (docs/runtime.md §1.3). */
const FLUSH_LIMIT_MS = 5000;
/** At most one `buffer full` warning per sink in this time; the metrics count every drop. */
const DROP_WARN_INTERVAL_MS = 1000;
/** How long a close still waits for the send in flight once the drain's time is up. */
const IN_FLIGHT_GRACE_MS = 1000;

class SinkNodeImpl implements SinkNode {
  readonly metrics: NodeMetrics;
  private readonly connector: SinkConnector;
  private readonly ctx: SinkContext;
  private readonly common: CommonProps;
  private readonly format: Format;
  /**
   * Pushed items waiting to be sent. One entry per push, as eKuiper's input channel holds one item per upstream
   * result: with `sendSingle` a collection of any size takes one slot and is expanded row by row as it is sent.
   */
  private readonly queue = new Fifo<SinkUnit>();
  /** with `sendSingle`: the collection being sent row by row and the position of its next row */
  private current: ValueObject[] | undefined;
  private currentPos = 0;
  private readonly cache: SinkCache | undefined;
  private readonly fatalCbs: Array<(err: Error) => void> = [];
  private pressure: ((full: boolean) => void) | undefined;
  private pressed = false;
  private readonly logger: Logger;
  private running: Promise<void> | undefined;
  private opened = false;
  private closed = false;
  /** the head of the cache failed: wait for a new item or the retry timer */
  private paused = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private sleepTimer: { timer: NodeJS.Timeout; resolve: () => void } | undefined;
  /**
   * Progress counters for {@link flush}: entries of the live queue taken in and finished, units put into the
   * cache and taken out of it (both FIFO, so a count says which ones are settled).
   */
  private entriesIn = 0;
  private entriesDone = 0;
  /** send units started and settled (sent, failed or cached), and per taken entry the units it needs settled */
  private unitsStarted = 0;
  private unitsSettled = 0;
  private lastDropWarn = 0;
  private droppedSinceWarn = 0;
  /** units settled before an earlier one (several sends in flight) */
  private readonly settledAhead = new Set<number>();
  private readonly entryMarks: number[] = [];
  private markHead = 0;
  private cachedIn = 0;
  private cachedOut = 0;
  private readonly flushWaiters: Array<{ entries: number; cached: number; resolve: (ok: boolean) => void }> = [];
  private persisting: Promise<void> | undefined;

  constructor(
    private readonly opts: SinkNodeOptions,
    private readonly deps: SinkNodeDeps,
  ) {
    this.metrics = new NodeMetrics(opts.name ?? `sink_${opts.type}_${opts.index}`);
    this.logger = opts.logger;
    const factory = deps.registry.sink(opts.type);
    if (!factory) throw executorError(`sink ${opts.type} is not found`);
    const rk = propKey(opts.props, 'resourceId');
    const resourceId = rk ? opts.props[rk] : undefined;
    if (resourceId !== undefined && typeof resourceId !== 'string') {
      throw executorError('fail to parse sink configuration: resourceId should be a string');
    }
    const props: Props = { ...deps.registry.sinkProps(opts.type, resourceId), ...opts.props };
    this.common = readCommon(props, deps.sinkDefaults, deps.registry);
    if (this.common.dataTemplate !== '') {
      try {
        deps.checkTemplate(this.common.dataTemplate);
      } catch (err) {
        throw executorError(`fail to parse sink configuration: dataTemplate: ${(err as Error).message}`);
      }
    }
    const fmt = deps.registry.format(this.common.format)!;
    try {
      this.format = fmt({
        schemaId: propString(props, 'schemaId'),
        delimiter: propString(props, 'delimiter', ','),
        fields: this.common.fields,
        hasHeader: propBool(props, 'hasHeader', false),
      });
    } catch (err) {
      throw executorError((err as Error).message);
    }
    this.ctx = {
      ruleId: opts.ruleId,
      logger: opts.logger,
      dataDir: deps.dataDir,
      render: (template, data) => deps.render(template, data),
      cacheEnabled: this.common.cache.enabled,
    };
    this.connector = factory();
    try {
      this.connector.provision(this.ctx, props);
    } catch (err) {
      if (err instanceof EddyError) throw err;
      throw executorError((err as Error).message);
    }
    if (this.common.cache.enabled) {
      const c = this.common.cache;
      this.cache = new SinkCache(deps.store, sinkCacheNamespace(opts.stateId ?? opts.ruleId, opts.type, opts.index), c);
    }
  }

  onPressure(cb: (full: boolean) => void): void {
    // with a failure cache nothing is dropped anyway: the cache holds what the target does not take
    if (!this.cache) this.pressure = cb;
  }

  /** with back-pressure: the sources were asked to wait and are released once the buffer is half empty */
  private releasePressure(): void {
    if (this.pressed && this.queue.length <= this.common.bufferLength / 2) {
      this.pressed = false;
      this.pressure?.(false);
    }
  }

  onFatal(cb: (err: Error) => void): void {
    this.fatalCbs.push(cb);
  }

  async open(): Promise<void> {
    const opening = this.openConnector();
    this.opening = opening;
    await opening;
  }

  private async openConnector(): Promise<void> {
    if (this.cache) {
      if (this.common.cache.cleanCacheAtStop) await this.cache.drop();
      else await this.cache.load();
      this.cachedIn = this.cache.size;
    }
    await this.connector.connect(this.ctx);
    this.opened = true;
    this.updateBuffer();
    if (this.hasWork()) this.kick();
  }

  push(input: SinkInput): void {
    if (this.closed) return;
    this.metrics.recordsIn++;
    const rows: ValueObject[] = input instanceof ErrorRecord ? [{ error: input.message }] : input;
    if (this.common.omitIfEmpty && rows.length === 0) return;
    if (this.cache && !this.common.cache.alterQueue) {
      // the cache holds send units: one per row with sendSingle
      if (this.common.sendSingle) {
        for (const row of rows)
          if (!this.skipRow(row)) {
            this.cache.push(row);
            this.cachedIn++;
          }
      } else {
        this.cache.push(rows);
        this.cachedIn++;
      }
      this.paused = false;
    } else if (this.queue.length >= this.common.bufferLength && !this.pressure) {
      this.metrics.error(new Error(`buffer full, drop message from ${this.metrics.name}`));
      this.warnDropped();
    } else {
      this.queue.push(rows);
      this.entriesIn++;
      // the rule's sources wait (they all can): what is already on its way is kept
      if (this.pressure && !this.pressed && this.queue.length >= this.common.bufferLength) {
        this.pressed = true;
        this.pressure(true);
      }
    }
    this.updateBuffer();
    if (this.opened) this.kick();
  }

  /** Drops are counted per row in the metrics; the log says so at most once a second, with the count since. */
  private warnDropped(): void {
    this.droppedSinceWarn++;
    const now = Date.now();
    if (now - this.lastDropWarn < DROP_WARN_INTERVAL_MS) return;
    this.logger.warn('sink %s buffer full, dropped %d message(s)', this.metrics.name, this.droppedSinceWarn);
    this.lastDropWarn = now;
    this.droppedSinceWarn = 0;
  }

  private skipRow(row: ValueObject): boolean {
    if (!this.common.omitIfEmpty) return false;
    for (const _ in row) return false;
    return true;
  }

  /** The next live unit to send: a whole list, or with sendSingle the next (non-skipped) row of the queued lists. */
  private nextLive(): SinkUnit | undefined {
    if (!this.common.sendSingle) return this.queue.shift();
    for (;;) {
      const cur = this.current;
      if (cur !== undefined && this.currentPos < cur.length) {
        const row = cur[this.currentPos++];
        if (!this.skipRow(row)) return row;
        continue;
      }
      // every row of the previous entry has been started: it is done once they have settled
      if (cur !== undefined) this.entryTaken();
      const next = this.queue.shift() as ValueObject[] | undefined;
      this.current = next;
      this.currentPos = 0;
      if (next === undefined) return undefined;
    }
  }

  private hasLive(): boolean {
    return this.queue.length > 0 || (this.current !== undefined && this.currentPos < this.current.length);
  }

  /** Rows (sendSingle) or lists waiting, including cached ones. */
  private updateBuffer(): void {
    const pendingRows = this.current === undefined ? 0 : this.current.length - this.currentPos;
    this.metrics.bufferLength = this.queue.length + pendingRows + (this.cache ? this.cache.size : 0);
  }

  private kick(): void {
    if (!this.cache) {
      this.pump();
      return;
    }
    if (this.running || this.closed) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      this.updateBuffer();
      // items may have arrived while the loop was finishing
      if (!this.closed && this.hasWork()) this.kick();
    });
  }

  private hasWork(): boolean {
    return this.hasLive() || (!this.paused && this.cache !== undefined && this.cache.size > 0);
  }

  private async drain(): Promise<void> {
    if (this.cache && this.common.cache.alterQueue) return this.drainAlternate(this.cache);
    if (!this.cache) return;
    let first = true;
    while (!this.closed && !this.paused) {
      const unit = await this.cache.head();
      if (unit === undefined || this.closed) break;
      if (!first && this.common.cache.resendInterval > 0 && this.cache.size > 1) {
        await this.sleep(this.common.cache.resendInterval);
        if (this.closed) break;
      }
      first = false;
      const outcome = await this.send(unit);
      if (outcome === 'retry') {
        this.paused = true;
        this.scheduleRetry();
        this.settleFlushes();
        break;
      }
      this.cache.shift();
      this.cachedOut++;
      this.settleFlushes();
      this.updateBuffer();
    }
  }

  /** sends started by {@link pump} and not settled yet */
  private inflight = 0;
  /** a large list is being encoded in slices: later items wait */
  private encoding = false;
  private pumping = false;
  private yielded = false;
  /** resolves the wait of {@link close} for the sends in flight */
  private settledAll: (() => void) | undefined;
  private readonly settleWaiters: Array<() => void> = [];
  private readonly pumpFn = (): void => {
    this.yielded = false;
    this.pump();
  };

  /**
   * The live path without a failure cache: sends synchronously while the connector settles synchronously (no
   * promise or microtask per item), keeps one send pending for ordinary connectors and up to
   * {@link PIPELINE_DEPTH} for pipelined ones (their transport keeps the order), and yields to the event loop
   * after a long burst so that other rules and the REST API keep answering.
   */
  private pump(): void {
    if (this.pumping || this.yielded || this.closed || !this.opened) return;
    this.pumping = true;
    const depth = this.connector.pipelined === true ? PIPELINE_DEPTH : this.common.concurrency;
    let sent = 0;
    try {
      while (this.inflight < depth && !this.closed && !this.encoding) {
        if (sent >= BURST) {
          this.yielded = true;
          setImmediate(this.pumpFn);
          break;
        }
        const unit = this.nextLive();
        if (unit === undefined) break;
        sent++;
        const seq = ++this.unitsStarted;
        if (!this.common.sendSingle) this.entryTaken();
        // the metric is refreshed now and then, not per row of a large burst
        if ((sent & 63) === 0) this.updateBuffer();
        this.sendLive(unit, seq);
      }
    } finally {
      this.pumping = false;
    }
    this.releasePressure();
    this.updateBuffer();
    if (this.inflight === 0 && this.settledAll) this.settledAll();
  }

  private sendLive(unit: SinkUnit, seq: number): void {
    const start = performance.now();
    this.metrics.lastInvocation = Math.round(performance.timeOrigin + start);
    let payload: Payload;
    try {
      payload = this.transform(unit, false);
    } catch (err) {
      this.transformFailed(err);
      this.unitSettled(seq);
      return;
    }
    if (Array.isArray(unit) && unit.length >= LARGE_LIST && this.plainJson()) {
      this.encodeInSlices(unit, payload, start, seq);
      return;
    }
    this.collectNow(unit, payload, start, seq);
  }

  /** JSON of the rows as they are: a list's text is the texts of its rows, which can be encoded a slice at a time. */
  private plainJson(): boolean {
    const c = this.common;
    return (
      c.format === 'json' &&
      c.dataTemplate === '' &&
      c.dataField === '' &&
      (c.fields === undefined || c.fields.length === 0)
    );
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
      if (this.closed) {
        this.encoding = false;
        this.unitSettled(seq);
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
        this.transformFailed(err);
        this.unitSettled(seq);
        this.settled();
        return;
      }
      this.encoding = false;
      this.inflight--;
      this.collectNow(rows, payload, start, seq);
      this.wakeSettleWaiters();
      this.pump();
    };
    setImmediate(step, 0);
  }

  private collectNow(unit: SinkUnit, payload: SinkPayload, start: number, seq: number): void {
    let pending: Promise<void> | void;
    try {
      pending = this.connector.collect(this.ctx, payload);
    } catch (err) {
      this.metrics.error(err);
      this.unitSettled(seq);
      return;
    }
    if (pending === undefined) {
      this.sent(unit, start);
      this.unitSettled(seq);
      return;
    }
    this.inflight++;
    pending.then(
      () => {
        this.sent(unit, start);
        this.unitSettled(seq);
        this.settled();
      },
      (err: unknown) => {
        this.metrics.error(err);
        this.unitSettled(seq);
        this.settled();
      },
    );
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

  /** Resolves when the next send in flight settles (a closing sink waits on it instead of polling). */
  private nextSettle(): Promise<void> {
    return new Promise<void>((resolve) => this.settleWaiters.push(resolve));
  }

  private sent(unit: SinkUnit, start: number): void {
    this.metrics.recordsOut++;
    this.metrics.messagesProcessed += Array.isArray(unit) ? unit.length : 1;
    this.metrics.processLatencyUs = Math.round((performance.now() - start) * 1000);
  }

  private transformFailed(err: unknown): void {
    this.metrics.error(err);
    this.logger.warn({ err }, 'sink %s cannot transform data', this.metrics.name);
    if (listensToTransformFailures(this.connector)) {
      void this.connector
        .transformFailed(this.ctx, err instanceof Error ? err : new Error(String(err)))
        .catch(() => undefined);
    }
  }

  /** Which queue sends next under the alternate-queue priority (live items never wait for a failing target). */
  private resendTurn = false;
  private pick(cache: SinkCache): 'live' | 'resend' | undefined {
    const live = this.hasLive();
    const resend = !this.paused && cache.size > 0;
    if (!live && !resend) return undefined;
    if (!live) return 'resend';
    if (!resend) return 'live';
    const p = this.common.cache.priority;
    if (p === 1) return 'resend';
    if (p === -1) return 'live';
    this.resendTurn = !this.resendTurn;
    return this.resendTurn ? 'resend' : 'live';
  }

  private async drainAlternate(cache: SinkCache): Promise<void> {
    while (!this.closed) {
      const which = this.pick(cache);
      if (which === undefined) break;
      if (which === 'live') {
        const unit = this.nextLive();
        if (unit === undefined) continue;
        const seq = ++this.unitsStarted;
        if (!this.common.sendSingle) this.entryTaken();
        if ((await this.send(unit, false)) === 'retry') {
          cache.push(unit);
          this.cachedIn++;
        }
        this.unitSettled(seq);
      } else {
        const unit = await cache.head();
        if (unit === undefined || this.closed) break;
        if (this.common.cache.resendInterval > 0) {
          await this.sleep(this.common.cache.resendInterval);
          if (this.closed) break;
        }
        if ((await this.send(this.markResent(unit), true)) === 'retry') {
          this.paused = true;
          this.scheduleRetry();
        } else {
          cache.shift();
          this.cachedOut++;
        }
        this.settleFlushes();
      }
      this.updateBuffer();
    }
  }

  private markResent(unit: SinkUnit): SinkUnit {
    const f = this.common.cache.indicatorField;
    if (f === '') return unit;
    return Array.isArray(unit) ? unit.map((r) => ({ ...r, [f]: true })) : { ...unit, [f]: true };
  }

  private entryDone(): void {
    this.entriesDone++;
    if (this.flushWaiters.length > 0) this.settleFlushes();
  }

  /**
   * Every unit of the entry just taken from the queue has been started: it is done once as many units have settled
   * (units settle in the order they start; a flush waits for the entries pushed before it).
   */
  private entryTaken(): void {
    this.entryMarks.push(this.unitsStarted);
    this.settleMarks();
  }

  /**
   * Unit `seq` settled. Units settle out of order when several sends are in flight (`concurrency`): an entry is done
   * only once every unit up to its last one has settled.
   */
  private unitSettled(seq: number): void {
    if (seq !== this.unitsSettled + 1) {
      this.settledAhead.add(seq);
      return;
    }
    this.unitsSettled = seq;
    while (this.settledAhead.delete(this.unitsSettled + 1)) this.unitsSettled++;
    this.settleMarks();
  }

  private settleMarks(): void {
    const marks = this.entryMarks;
    while (this.markHead < marks.length && marks[this.markHead] <= this.unitsSettled) {
      this.markHead++;
      this.entryDone();
    }
    if (this.markHead === marks.length) {
      marks.length = 0;
      this.markHead = 0;
    }
  }

  flush(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.flushWaiters.push({ entries: this.entriesIn, cached: this.cachedIn, resolve });
      this.settleFlushes();
    });
  }

  /**
   * Resolves the flushes whose inputs are all settled. Units still in the cache count as settled once the cache is
   * saved; it is saved when sending is paused by a failure, or when only cached units (alternate queue) remain.
   */
  private settleFlushes(): void {
    const waiters = this.flushWaiters;
    if (waiters.length === 0) return;
    let needSave = false;
    let i = 0;
    for (; i < waiters.length; i++) {
      const w = waiters[i];
      if (w.entries > this.entriesDone) break;
      if (w.cached > this.cachedOut) {
        if (this.paused || this.common.cache.alterQueue) needSave = true;
        break;
      }
      w.resolve(true);
    }
    if (i > 0) waiters.splice(0, i);
    if (needSave && !this.persisting && this.cache) {
      const cache = this.cache;
      // what is in the cache when the save starts is durable when it ends
      const covered = this.cachedIn;
      const entries = this.entriesDone;
      this.persisting = cache
        .save()
        .then(
          () => {
            const rest: typeof waiters = [];
            for (const w of this.flushWaiters.splice(0)) {
              if (w.cached <= covered && w.entries <= entries) w.resolve(true);
              else rest.push(w);
            }
            this.flushWaiters.push(...rest);
          },
          (err: unknown) => this.logger.warn({ err }, 'sink %s cannot save its cache', this.metrics.name),
        )
        .finally(() => {
          this.persisting = undefined;
          if (this.flushWaiters.length > 0 && !this.closed) setTimeout(() => this.settleFlushes(), 50).unref();
        });
    }
  }

  /** Retries a failed head even if no new item arrives (eKuiper waits for the next item; Eddy also retries on its own). */
  private scheduleRetry(): void {
    if (this.retryTimer || this.closed) return;
    const delay = Math.max(this.common.cache.resendInterval, 1000);
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
  private async send(unit: SinkUnit, resend = false): Promise<'ok' | 'drop' | 'retry'> {
    const start = performance.now();
    // wall time from the monotonic reading already taken (one clock read less per send)
    this.metrics.lastInvocation = Math.round(performance.timeOrigin + start);
    let payload: SinkPayload;
    try {
      payload = this.transform(unit, resend);
    } catch (err) {
      this.metrics.error(err);
      this.logger.warn({ err }, 'sink %s cannot transform data', this.metrics.name);
      if (listensToTransformFailures(this.connector)) {
        await this.connector
          .transformFailed(this.ctx, err instanceof Error ? err : new Error(String(err)))
          .catch(() => undefined);
      }
      return 'drop';
    }
    try {
      await this.connector.collect(this.ctx, payload);
    } catch (err) {
      this.metrics.error(err);
      if (this.cache && isRecoverable(err)) return 'retry';
      return 'drop';
    }
    this.metrics.recordsOut++;
    this.metrics.messagesProcessed += Array.isArray(unit) ? unit.length : 1;
    this.metrics.processLatencyUs = Math.round((performance.now() - start) * 1000);
    return 'ok';
  }

  private transform(unit: SinkUnit, resend: boolean): Payload {
    const { dataTemplate, dataField, fields } = this.common;
    const rows = Array.isArray(unit) ? unit : [unit];
    let data: Value = unit;
    let text: string | undefined;
    if (dataTemplate !== '') {
      text = this.deps.render(dataTemplate, unit);
      data = parseTemplateOutput(text);
    }
    const reshaped = dataField !== '' || (fields !== undefined && fields.length > 0);
    if (reshaped) {
      if (text !== undefined && data === undefined) {
        throw new Error(`fail to decode data ${text} after applying dataTemplate`);
      }
      if (dataField !== '') {
        if (Array.isArray(data)) data = isObject(data[0]) ? (data[0][dataField] ?? null) : null;
        else data = isObject(data) ? (data[dataField] ?? null) : null;
      }
      if (fields !== undefined && fields.length > 0) {
        data = Array.isArray(data) ? data.map((r) => pickFields(r, fields)) : pickFields(data, fields);
      }
    }
    const templateOnly = text !== undefined && !reshaped;
    const format = this.format;
    const isJson = this.common.format === 'json';
    const finalData: Value = templateOnly && data === undefined ? text! : data;
    const encodeFn = (): Uint8Array => {
      if (templateOnly && isJson) return textEncoder.encode(text!);
      if (templateOnly && !isObject(data))
        throw new Error(`template output must be a JSON object for format ${this.common.format}`);
      return format.encode(finalData as ValueObject | ValueObject[]);
    };
    return new Payload(finalData, rows, encodeFn, resend);
  }

  /** the connector's connect, awaited by close so that a connection made after a stop is not left open */
  private opening: Promise<void> | undefined;

  async close(): Promise<void> {
    if (this.closed) return;
    await this.drainBeforeClose(FLUSH_LIMIT_MS);
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.sleepTimer) {
      clearTimeout(this.sleepTimer.timer);
      this.sleepTimer.resolve();
    }
    // the drain above already gave the send in flight its time: a target that never answers must not hold the close
    if (this.running) await settledWithin(this.running, IN_FLIGHT_GRACE_MS);
    if (this.inflight > 0) {
      await new Promise<void>((resolve) => {
        // a connector that never settles must not hold the close forever
        const timer = setTimeout(resolve, CLOSE_WAIT_MS);
        this.settledAll = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    for (const w of this.flushWaiters.splice(0)) w.resolve(false);
    this.queue.clear();
    this.current = undefined;
    if (this.cache) {
      try {
        if (this.common.cache.cleanCacheAtStop) await this.cache.drop();
        else await this.cache.save();
      } catch (err) {
        this.logger.warn({ err }, 'sink %s cannot save its cache', this.metrics.name);
      }
    }
    this.updateBuffer();
    // a rule stopped while its sink still connects: the connector closes what that connect opens, not before it
    if (this.opening) await settledWithin(this.opening, CLOSE_WAIT_MS);
    try {
      await this.connector.close(this.ctx);
    } catch (err) {
      this.logger.warn({ err }, 'sink %s close failed', this.metrics.name);
    }
  }

  /**
   * Stop and delete send what the sink already accepted before its connection closes (docs/runtime.md §1.3): waits,
   * at most `limitMs`, for the queue and the send in flight. A target that is failing (paused cache) is not waited
   * for: its rows stay in the failure cache.
   */
  private async drainBeforeClose(limitMs: number): Promise<void> {
    if (!this.opened) return;
    const deadline = Date.now() + limitMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      while (!this.paused && (this.running !== undefined || this.inflight > 0 || this.hasWork())) {
        const left = deadline - Date.now();
        if (left <= 0) {
          this.logger.warn('sink %s closes with %d items unsent', this.metrics.name, this.metrics.bufferLength);
          return;
        }
        if (this.running === undefined) this.kick();
        const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, left)));
        // the cache's loop, or else the next send in flight to settle (the live path): never a busy wait
        const progress = this.running ?? (this.inflight > 0 ? this.nextSettle() : undefined);
        await Promise.race([progress, expired]);
        clearTimeout(timer);
        // the loop's own `finally` restarts it when items arrived meanwhile: let it settle first
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Template output parsed as JSON when it is JSON, else undefined. */
function parseTemplateOutput(text: string): Value {
  try {
    return parseJsonExact(text) as Value;
  } catch {
    return undefined;
  }
}

/** Store namespace of a sink's failure cache (docs/runtime.md §3.5: `sink/<ruleId><sinkName><instance>`). */
export function sinkCacheNamespace(ruleId: string, type: string, index: number): string {
  return `sink/${ruleId}${type}_${index}0`;
}

/** Creates the node of one rule action; throws EddyError 2201 for an unknown type or invalid properties. */
export function createSinkNode(opts: SinkNodeOptions, deps: SinkNodeDeps): SinkNode {
  return new SinkNodeImpl(opts, deps);
}
