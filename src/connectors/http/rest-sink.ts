/**
 * The rest sink (docs/runtime.md §3.6 rest): sends each payload as an HTTP request. url, method, body type and header
 * values may be templates rendered against the item sent (the row with sendSingle, else the list). Transient
 * failures are recoverable, so that the failure cache keeps and resends them in order: transport errors (refused,
 * timeout), 5xx answers and 429 (eKuiper 1.14 drops 5xx answers even with the cache on; Eddy does not). Any other
 * answer that is not a success (4xx, or a body without a 2xx code) is a plain error: the item is dropped.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { propBool, propString } from '../props.js';
import { recoverable } from '../../contracts/failures.js';
import * as http from './client.js';

const textDecoder = new TextDecoder();

export class RestSink implements SinkConnector {
  private s!: http.HttpSettings;
  private sendSingle = false;
  /** target of resent items (alternate resend queue); the url when empty */
  private resendUrl = '';
  private tokens: http.TokenManager | undefined;

  provision(_ctx: SinkContext, props: Props): void {
    try {
      this.s = http.httpSettings(props, { url: 'http://localhost', method: 'GET' });
      this.sendSingle = propBool(props, 'sendSingle', false);
      this.resendUrl = propString(props, 'resendDestination', '');
    } catch (e) {
      throw e instanceof EddyError ? e : new EddyError(ErrorCode.Executor, (e as Error).message);
    }
    this.tokens = http.tokenManager(this.s);
  }

  async connect(_ctx: SinkContext): Promise<void> {
    if (this.tokens) await this.tokens.access();
  }

  async collect(ctx: SinkContext, payload: SinkPayload): Promise<void> {
    if (this.tokens) {
      try {
        await this.tokens.ensureFresh();
      } catch (e) {
        throw e instanceof http.TransportError ? recoverable(e) : e;
      }
    }
    const item: unknown = this.sendSingle ? payload.rows[0] : payload.rows;
    // tokens are offered to url/header templates next to the row's own fields
    const renderData = this.tokens ? mergeTokens(item, this.tokens.tokens) : item;
    const target = payload.resend && this.resendUrl !== '' ? this.resendUrl : this.s.url;
    const url = ctx.render(target, renderData);
    http.checkUrl(url);
    const bodyType = this.s.bodyType.includes('{{') ? ctx.render(this.s.bodyType, item) : this.s.bodyType;
    if (!(bodyType in http.BODY_TYPES)) throw new Error(`Not valid body type value ${bodyType}.`);
    const headers = http.renderHeaders(this.s.headers, renderData);
    const listAsResult = !this.sendSingle && bodyType === 'form' && Array.isArray(payload.data);
    const body = http.requestBody(this.s, bodyType, () => textDecoder.decode(payload.bytes), headers, listAsResult);
    let res;
    try {
      res = await http.sendWith(this.s, url, headers, body);
    } catch (e) {
      throw recoverable(e);
    }
    if (this.s.debugResp)
      ctx.logger.info('rest sink response: status %d, body %s', res.status, res.body.toString('utf8'));
    if (isTransientStatus(res.status)) {
      try {
        http.checkResponse(res, 'code');
      } catch (e) {
        throw recoverable(e);
      }
    }
    http.checkResponse(res, this.s.responseType);
  }

  async close(_ctx: SinkContext): Promise<void> {}
}

/** An answer that says "try again later": the server is failing or overloaded (5xx), or asks to slow down (429). */
function isTransientStatus(status: number): boolean {
  return status >= 500 || status === 429;
}

/** Tokens fill fields a row does not have (each row of a list too). */
function mergeTokens(item: unknown, tokens: Record<string, unknown>): unknown {
  if (Array.isArray(item)) return item.map((r) => ({ ...tokens, ...(r as Record<string, unknown>) }));
  return { ...tokens, ...(item as Record<string, unknown>) };
}
