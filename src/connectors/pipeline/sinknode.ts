/**
 * The sink node shared by every sink (docs/runtime.md §3): input conversion, a bounded buffer (`buffer.ts`), the
 * output transformation (`transform.ts`), a send path — live (`live.ts`) or through the failure cache with resend
 * (`resend.ts`) — and metrics. A failing sink never stops its rule: failures are counted, cached when the connector
 * marks them recoverable, and retried.
 */
import type { Logger } from 'pino';
import { EddyError } from '../../core/errors.js';
import {
  disconnected,
  ErrorRecord,
  NodeMetrics,
  type Format,
  type Props,
  type SinkConnector,
  type SinkContext,
  type SinkInput,
  type SinkNode,
  type SinkNodeOptions,
} from '../../contracts/index.js';
import type { KVStore } from '../../store/kv.js';
import type { ValueObject } from '../../values/value.js';
import type { Registry } from '../registry.js';
import { propBool, propKey, propString } from '../props.js';
import { SinkBuffer } from './buffer.js';
import { SendLedger } from './ledger.js';
import { LiveSender } from './live.js';
import { ResendSender } from './resend.js';
import type { Sender, SinkParts } from './sender.js';
import { executorError, readSinkSettings, type SinkDefaults, type SinkSettings } from './settings.js';
import { SinkTransform } from './transform.js';
import { settledWithin } from '../../core/waits.js';

export type { SinkDefaults } from './settings.js';

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

/** Longest wait of stop/delete for a sink to send what it accepted (docs/runtime.md §1.3). */
const FLUSH_LIMIT_MS = 5000;
/** At most one `buffer full` warning per sink in this time; the metrics count every drop. */
const DROP_WARN_INTERVAL_MS = 1000;
/** longest wait of close for a connect still under way */
const CLOSE_WAIT_MS = 5000;

class SinkNodeImpl implements SinkNode, SinkParts {
  readonly metrics: NodeMetrics;
  readonly connector: SinkConnector;
  readonly ctx: SinkContext;
  readonly settings: SinkSettings;
  readonly buffer: SinkBuffer;
  readonly ledger: SendLedger;
  readonly transform: SinkTransform;
  readonly logger: Logger;
  readonly atLeastOnce: boolean;
  closed = false;
  private readonly sender: Sender;
  private readonly fatalCbs: Array<(err: Error) => void> = [];
  private pressure: ((full: boolean) => void) | undefined;
  private pressed = false;
  private opened = false;
  /** the connector's connect, awaited by close so that a connection made after a stop is not left open */
  private opening: Promise<void> | undefined;
  private lastDropWarn = 0;
  private droppedSinceWarn = 0;

  constructor(opts: SinkNodeOptions, deps: SinkNodeDeps) {
    this.metrics = new NodeMetrics(opts.name ?? `sink_${opts.type}_${opts.index}`);
    this.logger = opts.logger;
    this.atLeastOnce = opts.ruleOptions.qos >= 1;
    const factory = deps.registry.sink(opts.type);
    if (!factory) throw executorError(`sink ${opts.type} is not found`);
    const rk = propKey(opts.props, 'resourceId');
    const resourceId = rk ? opts.props[rk] : undefined;
    if (resourceId !== undefined && typeof resourceId !== 'string') {
      throw executorError('fail to parse sink configuration: resourceId should be a string');
    }
    const props: Props = { ...deps.registry.sinkProps(opts.type, resourceId), ...opts.props };
    this.settings = readSinkSettings(props, deps.sinkDefaults, deps.registry);
    if (this.settings.dataTemplate !== '') {
      try {
        deps.checkTemplate(this.settings.dataTemplate);
      } catch (err) {
        throw executorError(`fail to parse sink configuration: dataTemplate: ${(err as Error).message}`);
      }
    }
    let format: Format;
    try {
      format = deps.registry.format(this.settings.format)!({
        schemaId: propString(props, 'schemaId'),
        delimiter: propString(props, 'delimiter', ','),
        fields: this.settings.fields,
        hasHeader: propBool(props, 'hasHeader', false),
      });
    } catch (err) {
      throw executorError((err as Error).message);
    }
    this.transform = new SinkTransform(this.settings, format, deps.render);
    this.ctx = {
      ruleId: opts.ruleId,
      logger: opts.logger,
      dataDir: deps.dataDir,
      render: (template, data) => deps.render(template, data),
      cacheEnabled: this.settings.cache.enabled,
    };
    this.connector = factory();
    try {
      this.connector.provision(this.ctx, props);
    } catch (err) {
      if (err instanceof EddyError) throw err;
      throw executorError((err as Error).message);
    }
    const resend = this.settings.cache.enabled
      ? new ResendSender(this, deps.store, sinkCacheNamespace(opts.stateId ?? opts.ruleId, opts.type, opts.index))
      : undefined;
    this.sender = resend ?? new LiveSender(this);
    this.ledger = new SendLedger(this.metrics.name, this.logger, resend);
    this.buffer = new SinkBuffer(this.settings.sendSingle, this.settings.omitIfEmpty, this.ledger);
  }

  onPressure(cb: (full: boolean) => void): void {
    // with a failure cache nothing is dropped anyway: the cache holds what the target does not take
    if (!this.settings.cache.enabled) this.pressure = cb;
  }

  /** with back-pressure: the sources were asked to wait and are released once the buffer is half empty */
  releasePressure(): void {
    if (this.pressed && this.buffer.entries <= this.settings.bufferLength / 2) {
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
    await this.sender.open();
    this.metrics.setConnection('connecting');
    try {
      await this.connector.connect(this.ctx);
    } catch (err) {
      this.metrics.setConnection(disconnected(err));
      throw err;
    }
    this.metrics.setConnection('connected');
    this.opened = true;
    this.updateBuffer();
    if (this.sender.hasWork()) this.sender.kick();
  }

  push(input: SinkInput): void {
    if (this.closed) return;
    this.metrics.recordsIn++;
    const rows: ValueObject[] = input instanceof ErrorRecord ? [{ error: input.message }] : input;
    if (this.settings.omitIfEmpty && rows.length === 0) return;
    if (this.sender.accept(rows)) {
      // kept by the failure cache
    } else if (this.buffer.entries >= this.settings.bufferLength && !this.pressure) {
      this.metrics.error(new Error(`buffer full, drop message from ${this.metrics.name}`));
      this.warnDropped();
    } else {
      this.buffer.push(rows);
      this.ledger.entryPushed();
      // the rule's sources wait (they all can): what is already on its way is kept
      if (this.pressure && !this.pressed && this.buffer.entries >= this.settings.bufferLength) {
        this.pressed = true;
        this.pressure(true);
      }
    }
    this.updateBuffer();
    if (this.opened) this.sender.kick();
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

  /** Rows (sendSingle) or lists waiting, including cached ones. */
  updateBuffer(): void {
    this.metrics.bufferLength = this.buffer.size + this.sender.cached;
  }

  flush(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    return this.ledger.flush();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.drainBeforeClose(FLUSH_LIMIT_MS);
    this.closed = true;
    await this.sender.halt();
    this.ledger.abandon();
    this.buffer.clear();
    await this.sender.finish();
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
   * at most `limitMs`, for the buffer and the send in flight. A target that is failing (paused cache) is not waited
   * for: its rows stay in the failure cache.
   */
  private async drainBeforeClose(limitMs: number): Promise<void> {
    if (!this.opened) return;
    const deadline = Date.now() + limitMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      while (!this.sender.stalled() && this.sender.pending()) {
        const left = deadline - Date.now();
        if (left <= 0) {
          this.logger.warn('sink %s closes with %d items unsent', this.metrics.name, this.metrics.bufferLength);
          return;
        }
        this.sender.kick();
        const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, left)));
        // the cache's loop, or else the next send in flight to settle (the live path): never a busy wait
        await Promise.race([this.sender.progress(), expired]);
        clearTimeout(timer);
        // the loop's own `finally` restarts it when items arrived meanwhile: let it settle first
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      clearTimeout(timer);
    }
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
