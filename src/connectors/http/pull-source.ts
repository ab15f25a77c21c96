/**
 * The httppull source (docs/runtime.md §2.5 httppull): requests `url + DATASOURCE` immediately and then every
 * `interval` ms. url, body and header values are templates over the OAuth tokens plus `LastPullTime` and
 * `PullTime`. With `incremental`, a body whose MD5 equals the previous one is skipped. The body is handed to the
 * stream's format decoder (JSON by default: an object is one row, an array one row per element). As in eKuiper, a
 * body the stream's format cannot decode (say a JSON error answer on a protobuf stream) is taken as plain JSON.
 */
import { createHash } from 'node:crypto';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Format, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { ValueObject } from '../../values/value.js';
import { JsonFormat } from '../formats/json.js';
import type { ConnectorRegistry } from '../../contracts/index.js';
import { propBool, propInt, propString } from '../props.js';
import { renderTemplate } from '../../template/index.js';
import {
  checkResponse,
  checkUrl,
  httpSettings,
  renderHeaders,
  requestBody,
  sendWith,
  tokenManager,
  type HttpSettings,
  type TokenManager,
} from './client.js';
import { transientError } from '../../contracts/failures.js';

/** Settings and request logic shared by the httppull source and lookup. */
export class HttpPuller {
  readonly s: HttpSettings;
  readonly interval: number;
  readonly incremental: boolean;
  private readonly tokens: TokenManager | undefined;
  private lastPullTime = Date.now();
  private lastMd5 = '';

  constructor(datasource: string, props: Props) {
    try {
      const s = httpSettings(props, { url: 'http://localhost', method: 'GET' });
      s.url = s.url + datasource;
      checkUrl(s.url);
      this.s = s;
      this.interval = propInt(props, 'interval', 10000);
      this.incremental = propBool(props, 'incremental', false);
    } catch (e) {
      throw e instanceof EddyError ? e : new EddyError(ErrorCode.Executor, (e as Error).message);
    }
    this.tokens = tokenManager(this.s);
  }

  async start(): Promise<void> {
    if (this.tokens) await this.tokens.access();
  }

  /**
   * One request: the checked body (raw bytes: a protobuf answer is not text), or null when `incremental` found it
   * unchanged. Throws on transport errors, non-2xx statuses and failed body checks.
   */
  async pull(logger?: ConnectorContext['logger']): Promise<Buffer | null> {
    if (this.tokens) await this.tokens.ensureFresh();
    const now = Date.now();
    const data = { ...(this.tokens?.tokens ?? {}), LastPullTime: BigInt(this.lastPullTime), PullTime: BigInt(now) };
    const url = renderTemplate(this.s.url, data);
    checkUrl(url);
    const headers = renderHeaders(this.s.headers, data);
    const body = requestBody(this.s, this.s.bodyType, () => renderTemplate(this.s.body, data), headers);
    const res = await sendWith(this.s, url, headers, body);
    if (this.s.debugResp)
      logger?.info('httppull %s response: status %d, body %s', url, res.status, res.body.toString('utf8'));
    checkResponse(res, this.s.responseType);
    this.lastPullTime = now;
    if (this.incremental) {
      const md5 = createHash('md5').update(res.body).digest('hex');
      if (md5 === this.lastMd5) return null;
      this.lastMd5 = md5;
    }
    return res.body;
  }
}

/** Formats that accept any bytes: JSON is the fallback itself, binary and delimited never fail. */
const NEVER_FALLS_BACK = new Set(['json', 'binary', 'delimited']);

export class HttpPullSource implements SourceConnector {
  private puller!: HttpPuller;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private closed = false;
  private held = false;
  /** the stream's decoder when a body it rejects should be read as plain JSON instead */
  private decoder: Format | undefined;
  private readonly plainJson = new JsonFormat({ schema: null });

  constructor(private readonly registry: Pick<ConnectorRegistry, 'format'>) {}

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    this.puller = new HttpPuller(datasource, props);
    if (this.puller.interval <= 0) throw new EddyError(ErrorCode.Executor, 'interval must be greater than 0');
    const format = propString(props, 'format', 'json').toLowerCase();
    const factory = NEVER_FALLS_BACK.has(format) ? undefined : this.registry.format(format);
    if (factory) {
      try {
        this.decoder = factory({ schemaId: propString(props, 'schemaId'), delimiter: propString(props, 'delimiter') });
      } catch {
        // a bad schema id is reported by the rule's own decoder
        this.decoder = undefined;
      }
    }
  }

  /** The event of one body: decoded here when the stream's format fails on it and plain JSON does not. */
  private event(body: Buffer): SourceEvent {
    const payload = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    if (this.decoder) {
      try {
        return { payload: this.decoder.decode(payload), meta: {}, timestamp: Date.now() };
      } catch {
        try {
          const rows = this.plainJson.decode(payload);
          if (!Array.isArray(rows) || rows.every((r) => typeof r === 'object' && r !== null && !Array.isArray(r))) {
            return { payload: rows as ValueObject | ValueObject[], meta: {}, timestamp: Date.now() };
          }
        } catch {
          // neither: the rule's decoder reports the format's own error
        }
      }
    }
    return { payload, meta: {}, timestamp: Date.now() };
  }

  async connect(ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    this.closed = false;
    await this.puller.start();
    const tick = async (): Promise<void> => {
      // held back by a full sink: the next interval pulls again (nothing is lost by not asking)
      if (this.busy || this.closed || this.held) return;
      this.busy = true;
      try {
        const body = await this.puller.pull(ctx.logger);
        if (body !== null && !this.closed && body.toString('utf8').trim() !== '') emit(this.event(body));
      } catch (e) {
        if (!this.closed) {
          ctx.logger.warn('httppull %s: %s', this.puller.s.url, (e as Error).message);
          // a failed pull is reported and the next interval tries again
          onError(transientError(e as Error));
        }
      } finally {
        this.busy = false;
      }
    };
    void tick();
    this.timer = setInterval(() => void tick(), this.puller.interval);
  }

  /** back-pressure: a pull source can always wait */
  canPause(): boolean {
    return true;
  }

  pause(): void {
    this.held = true;
  }

  resume(): void {
    this.held = false;
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
