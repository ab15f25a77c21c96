/**
 * The HTTP client settings shared by the httppull source/lookup and the rest sink (docs/runtime.md §2.5 httppull,
 * docs/runtime.md §3.6 rest): method, body type, templated url/headers/body, timeout, response checks, OAuth-style tokens and
 * compression. Requests go through Node's `fetch`.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props } from '../../contracts/index.js';
import { checkCompression, compress, decompress, type Compression } from '../../core/compression.js';
import { prop, propBool, propInt, propObject, propString } from '../props.js';
import { renderTemplate } from '../../template/index.js';
import { tlsSettings, type TlsSettings } from '../tls.js';
import { request as httpsRequest } from 'node:https';
import { gunzipSync, inflateSync, inflateRawSync } from 'node:zlib';

export const METHODS = ['GET', 'POST', 'PUT', 'DELETE'] as const;

export const BODY_TYPES: Record<string, string | null> = {
  none: null,
  text: 'text/plain',
  json: 'application/json',
  html: 'text/html',
  xml: 'application/xml',
  javascript: 'application/javascript',
  form: 'application/x-www-form-urlencoded;param=value',
};

export type ResponseType = 'code' | 'body';

export interface OAuthSettings {
  access: { url: string; body: string; expire: string };
  refresh?: { url: string; headers: Record<string, string>; body: string };
}

export interface HttpSettings {
  url: string;
  method: string;
  bodyType: string;
  timeout: number;
  /** a map of header → template, or one template rendering a JSON object */
  headers: Record<string, string> | string | undefined;
  responseType: ResponseType;
  body: string;
  compression: Compression | undefined;
  debugResp: boolean;
  oauth: OAuthSettings | undefined;
  /** TLS options for https URLs (docs/runtime.md §2.4), undefined for the platform defaults */
  tls: TlsSettings | undefined;
}

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

/** Checks a URL the way the connectors do: http or https with a host (templates are checked after rendering). */
export function checkUrl(url: string): void {
  if (url.includes('{{')) return;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw bad(`Invalid url, expect http or https scheme: ${url}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw bad(`Invalid url, expect http or https scheme: ${url}`);
  if (!u.hostname) throw bad(`Invalid url, host not found: ${url}`);
}

/** Reads and validates the common HTTP properties; `defaults` gives the per-connector defaults. */
export function httpSettings(props: Props, defaults: { url: string; method: string }): HttpSettings {
  const url = propString(props, 'url', defaults.url);
  const method = propString(props, 'method', defaults.method).toUpperCase();
  if (!(METHODS as readonly string[]).includes(method))
    throw bad(`Not supported HTTP method ${propString(props, 'method', defaults.method)}`);
  const bodyType = propString(props, 'bodyType', method === 'GET' || method === 'HEAD' ? 'none' : 'json').toLowerCase();
  // a templated body type (rest sink) is checked once rendered
  if (!(bodyType in BODY_TYPES) && !bodyType.includes('{{')) throw bad(`Not valid body type value ${bodyType}.`);
  const rt = propString(props, 'responseType', 'code');
  if (rt !== 'code' && rt !== 'body') throw bad(`Not valid response type value ${rt}.`);
  const timeout = propInt(props, 'timeout', 5000);
  if (timeout < 0) throw bad('timeout must be non-negative');
  const rawHeaders = prop(props, 'headers');
  let headers: HttpSettings['headers'];
  if (typeof rawHeaders === 'string') headers = rawHeaders;
  else if (rawHeaders && typeof rawHeaders === 'object' && !Array.isArray(rawHeaders)) {
    headers = {};
    for (const [k, v] of Object.entries(rawHeaders)) headers[k] = typeof v === 'string' ? v : String(v);
  } else if (rawHeaders !== undefined && rawHeaders !== null) throw bad(`headers must be a map or a string`);
  const comp = propString(props, 'compression');
  let compression: Compression | undefined;
  if (comp) {
    try {
      compression = checkCompression(comp);
    } catch (e) {
      throw bad((e as Error).message);
    }
  }
  checkUrl(url);
  let tls: TlsSettings | undefined;
  try {
    tls = tlsSettings(props);
  } catch (e) {
    throw bad((e as Error).message);
  }
  return {
    tls,
    url,
    method,
    bodyType,
    timeout,
    headers,
    responseType: rt,
    body: propString(props, 'body', ''),
    compression,
    debugResp: propBool(props, 'debugResp', false),
    oauth: oauthSettings(props),
  };
}

function oauthSettings(props: Props): OAuthSettings | undefined {
  const o = propObject(props, 'oauth');
  if (!o) return undefined;
  const access = propObject(o, 'access');
  if (!access) return undefined;
  const url = propString(access, 'url', '');
  if (!url) throw bad('oauth access url is required');
  const out: OAuthSettings = {
    access: { url, body: propString(access, 'body', ''), expire: propString(access, 'expire', '') },
  };
  const refresh = propObject(o, 'refresh');
  if (refresh && propString(refresh, 'url', '')) {
    const h = propObject(refresh, 'headers') ?? {};
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(h)) headers[k] = String(v);
    out.refresh = { url: propString(refresh, 'url', ''), headers, body: propString(refresh, 'body', '') };
  }
  return out;
}

/** Renders the configured headers (map of templates, or one template giving a JSON object) against `data`. */
export function renderHeaders(h: HttpSettings['headers'], data: unknown): Record<string, string> {
  if (h === undefined) return {};
  if (typeof h === 'string') {
    const text = renderTemplate(h, data);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`parse headers ${text} error: not a JSON object`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error(`parse headers ${text} error: not a JSON object`);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(parsed)) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
    return out;
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k] = renderTemplate(v, data);
  return out;
}

export interface HttpResponse {
  status: number;
  body: Buffer;
}

/** An error of the transport (refused, reset, timeout): the request may succeed when retried. */
export class TransportError extends Error {
  readonly transport = true;
}

/** Sends one request; transport failures reject with a {@link TransportError}, any HTTP status resolves. */
export async function httpSend(
  method: string,
  url: string,
  headers: Record<string, string>,
  body: Uint8Array | string | undefined,
  timeoutMs: number,
  compression?: Compression,
  tls?: TlsSettings,
): Promise<HttpResponse> {
  const h: Record<string, string> = { ...headers };
  let payload: Uint8Array | string | undefined = body;
  if (compression) {
    const enc = compression === 'flate' ? 'deflate' : compression;
    h['Accept-Encoding'] = enc;
    if (payload !== undefined) {
      payload = compress(compression, typeof payload === 'string' ? Buffer.from(payload) : payload);
      h['Content-Encoding'] = enc;
    }
  }
  if (tls && url.startsWith('https:')) return httpsSend(method, url, h, payload, timeoutMs, tls);
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers: h,
      body: method === 'GET' || method === 'HEAD' ? undefined : payload,
      signal: timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined,
      redirect: 'follow',
    });
  } catch (e) {
    throw new TransportError(describeFetchError(e, url, method));
  }
  let buf: Buffer;
  try {
    buf = Buffer.from(await res.arrayBuffer());
  } catch (e) {
    throw new TransportError(describeFetchError(e, url, method));
  }
  const ce = res.headers.get('content-encoding');
  if (compression && ce && buf.length > 0) {
    const alg: Compression | undefined =
      ce === 'gzip' ? 'gzip' : ce === 'deflate' ? 'flate' : ce === 'zlib' ? 'zlib' : undefined;
    // fetch already decodes gzip/deflate responses; only undecoded bodies are left to us
    if (alg && buf[0] === 0x1f && buf[1] === 0x8b) buf = Buffer.from(decompress(alg, buf));
  }
  return { status: res.status, body: buf };
}

/** https with explicit TLS options (fetch offers no way to pass them). */
function httpsSend(
  method: string,
  url: string,
  headers: Record<string, string>,
  body: Uint8Array | string | undefined,
  timeoutMs: number,
  tls: TlsSettings,
): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const fail = (msg: string): void => {
      if (timer) clearTimeout(timer);
      reject(new TransportError(`${method} ${url}: ${msg}`));
    };
    const req = httpsRequest(
      url,
      {
        method,
        headers,
        rejectUnauthorized: tls.rejectUnauthorized,
        cert: tls.cert,
        key: tls.key,
        ca: tls.ca,
        minVersion: tls.minVersion,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => fail(e.message));
        res.on('end', () => {
          if (timer) clearTimeout(timer);
          let buf: Buffer = Buffer.concat(chunks);
          try {
            const ce = res.headers['content-encoding'];
            if (ce === 'gzip') buf = gunzipSync(buf);
            else if (ce === 'deflate') buf = inflateSafe(buf);
          } catch (e) {
            reject(new Error(`${method} ${url}: cannot decode the response: ${(e as Error).message}`));
            return;
          }
          resolve({ status: res.statusCode ?? 0, body: buf });
        });
      },
    );
    req.on('error', (e) => fail(e.message));
    if (timeoutMs > 0)
      timer = setTimeout(() => {
        req.destroy();
        fail('request timed out');
      }, timeoutMs);
    if (body !== undefined && method !== 'GET' && method !== 'HEAD') req.write(body);
    req.end();
  });
}

/** `deflate` bodies come zlib-wrapped or raw depending on the server. */
function inflateSafe(buf: Buffer): Buffer {
  try {
    return inflateSync(buf);
  } catch {
    return inflateRawSync(buf);
  }
}

function describeFetchError(e: unknown, url: string, method: string): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') return `${method} ${url}: request timed out`;
  const cause = err?.cause?.message ?? err?.cause?.code;
  return `${method} ${url}: ${cause ?? err?.message ?? String(e)}`;
}

/** Checks a response as `responseType` asks; returns the body text. Throws with eKuiper-like messages. */
export function checkResponse(res: HttpResponse, responseType: ResponseType): string {
  const text = res.body.toString('utf8');
  if (res.status < 200 || res.status > 299) throw new Error(`http return code error: ${res.status}, body: ${text}`);
  if (responseType === 'body') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`http return body is not a valid json: ${text}`);
    }
    const code =
      parsed && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>).code
        : undefined;
    if (typeof code !== 'number') throw new Error(`http return body does not contain a numeric code: ${text}`);
    if (code < 200 || code > 299) throw new Error(`http status code is not 200: ${code}, body: ${text}`);
  }
  return text;
}

/** Body and Content-Type of a request for a body type; `form` url-encodes a JSON object's fields. */
export function encodeBody(
  bodyType: string,
  text: string,
  listAsResult = false,
): { body: string | undefined; contentType: string | null } {
  const ct = BODY_TYPES[bodyType] ?? null;
  if (bodyType === 'none') return { body: undefined, contentType: null };
  if (bodyType === 'form') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`invalid content: ${text}`);
    }
    const form = new URLSearchParams();
    if (Array.isArray(parsed) || listAsResult) form.set('result', text);
    else if (parsed && typeof parsed === 'object') {
      for (const [k, v] of Object.entries(parsed)) form.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    } else throw new Error(`invalid content: ${text}`);
    return { body: form.toString(), contentType: ct };
  }
  return { body: text, contentType: ct };
}

/**
 * The body of a request with settings `s` (none for GET; `text` is only asked for otherwise), adding its Content-Type
 * to `headers` unless one of them already sets it.
 */
export function requestBody(
  s: HttpSettings,
  bodyType: string,
  text: () => string,
  headers: Record<string, string>,
  listAsResult = false,
): string | undefined {
  if (s.method === 'GET') return undefined;
  const enc = encodeBody(bodyType, text(), listAsResult);
  if (enc.contentType && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-type'))
    headers['Content-Type'] = enc.contentType;
  return enc.body;
}

/** {@link httpSend} with the method, timeout, compression and TLS of the settings. */
export function sendWith(
  s: HttpSettings,
  url: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<HttpResponse> {
  return httpSend(s.method, url, headers, body, s.timeout, s.compression, s.tls);
}

/** The token manager of settings with `oauth`. */
export function tokenManager(s: HttpSettings): TokenManager | undefined {
  return s.oauth ? new TokenManager(s.oauth, s.timeout, s.tls) : undefined;
}

/**
 * OAuth-style tokens (`oauth.access` / `oauth.refresh`): fetched on start, refreshed when `expire` seconds have
 * passed. The tokens are the fields of the JSON responses and are offered to url/header/body templates.
 */
export class TokenManager {
  tokens: Record<string, unknown> = {};
  private expiresAt = Infinity;

  constructor(
    private readonly oauth: OAuthSettings,
    private readonly timeoutMs: number,
    private readonly tls?: TlsSettings,
  ) {}

  /** Runs the access request; rejects with the reason (bad credentials give the server's answer). */
  async access(): Promise<void> {
    const a = this.oauth.access;
    const body = renderTemplate(a.body, this.tokens);
    const res = await httpSend(
      'POST',
      renderTemplate(a.url, this.tokens),
      { 'Content-Type': 'application/json' },
      body,
      this.timeoutMs,
      undefined,
      this.tls,
    );
    this.merge(this.parse(res, 'access'), true);
  }

  private parse(res: HttpResponse, what: string): Record<string, unknown> {
    const text = res.body.toString('utf8');
    if (res.status < 200 || res.status > 299)
      throw new Error(`fail to get ${what} token: http return code error: ${res.status}, body: ${text}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`fail to get ${what} token: response is not a JSON object: ${text}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error(`fail to get ${what} token: response is not a JSON object: ${text}`);
    return parsed as Record<string, unknown>;
  }

  private merge(fields: Record<string, unknown>, replace: boolean): void {
    if (replace) this.tokens = {};
    for (const [k, v] of Object.entries(fields)) if (v !== null && v !== undefined) this.tokens[k] = v;
    const expire = this.oauth.access.expire;
    if (expire) {
      const secs = Number(renderTemplate(expire, this.tokens));
      this.expiresAt = Number.isFinite(secs) && secs > 0 ? Date.now() + secs * 1000 : Infinity;
    } else this.expiresAt = Infinity;
  }

  /** Refreshes (or re-acquires) the tokens when expired. */
  async ensureFresh(): Promise<void> {
    if (Date.now() < this.expiresAt) return;
    const r = this.oauth.refresh;
    if (!r) return this.access();
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    for (const [k, v] of Object.entries(r.headers)) headers[k] = renderTemplate(v, this.tokens);
    const res = await httpSend(
      'POST',
      renderTemplate(r.url, this.tokens),
      headers,
      renderTemplate(r.body, this.tokens),
      this.timeoutMs,
      undefined,
      this.tls,
    );
    this.merge(this.parse(res, 'refresh'), false);
  }
}
