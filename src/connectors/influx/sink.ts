/**
 * The influx sink (docs/runtime.md §3.6 influx; docs/connectors.md influx): writes every row of a send as one point to
 * an InfluxDB 1.x database over its HTTP `/write` API in line protocol, all rows of a send in one request. Tags
 * are a map of tag name → value, each value a template rendered against the row; point fields are the row's
 * fields after the sink pipeline (so `fields` chooses them); the timestamp is the row's `tsFieldName` value in
 * `precision` units, or now. Transport failures and 5xx answers are recoverable (the failure cache resends
 * them); other answers are errors naming InfluxDB's reason.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { httpSend, TransportError } from '../http/client.js';
import { PRECISIONS, nowIn, pointLine, type Precision } from './line.js';
import { propObject, propString } from '../props.js';
import { recoverable } from '../../contracts/failures.js';
import { tlsSettings, type TlsSettings } from '../tls.js';

const WRITE_TIMEOUT_MS = 10_000;
const PING_TIMEOUT_MS = 10_000;

export interface InfluxTarget {
  addr: string;
  headers: Record<string, string>;
  tls?: TlsSettings;
}

/** `addr` (an http(s) URL, a scheme added when missing) with basic credentials and TLS. */
export function influxTarget(
  props: Props,
  credentials: { username?: string; password?: string; token?: string },
): InfluxTarget {
  let addr = propString(props, 'addr', '');
  if (addr === '') throw new Error('addr is required');
  if (!/^https?:\/\//i.test(addr)) addr = `http://${addr}`;
  addr = addr.replace(/\/+$/, '');
  const headers: Record<string, string> = {};
  if (credentials.token) headers.Authorization = `Token ${credentials.token}`;
  else if (credentials.username)
    headers.Authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password ?? ''}`).toString('base64')}`;
  const t: InfluxTarget = { addr, headers };
  const tls = tlsSettings(props);
  if (tls) t.tls = tls;
  return t;
}

export function readPrecision(props: Props): Precision {
  const p = propString(props, 'precision', 'ms');
  if (!(PRECISIONS as readonly string[]).includes(p))
    throw new Error(`precision ${p} is not supported, should be one of ns, us, ms, s`);
  return p as Precision;
}

/** tag name → value template */
export function readTags(props: Props): Array<[string, string]> {
  const tags = propObject(props, 'tags') ?? {};
  return Object.entries(tags).map(([k, v]) => {
    if (typeof v !== 'string') throw new Error(`tag ${k} should be a string`);
    return [k, v];
  });
}

/** The rows of a send with, for each, the row the tag templates see (the untransformed row where there is one). */
export function pointRows(payload: SinkPayload): Array<{ fields: ValueObject; scope: ValueObject }> {
  const data = payload.data;
  const list: Value[] = Array.isArray(data) ? data : [data];
  const out: Array<{ fields: ValueObject; scope: ValueObject }> = [];
  for (let i = 0; i < list.length; i++) {
    const row = list[i];
    if (!isObject(row))
      throw new Error(`unsupported data type ${Array.isArray(row) ? 'array' : typeof row}, should be a map`);
    const raw = payload.rows.length === list.length ? payload.rows[i] : undefined;
    out.push({ fields: row, scope: raw ? { ...raw, ...row } : row });
  }
  return out;
}

/** The timestamp of a point: the row's `tsFieldName` (an integer in precision units) or now. */
export function pointTime(scope: ValueObject, tsField: string, precision: Precision): bigint {
  if (tsField === '') return nowIn(precision);
  const v = scope[tsField];
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  throw new Error(`time field ${tsField} can not convert to timestamp(int64) : ${String(v)}`);
}

export function renderTags(
  ctx: SinkContext,
  tags: ReadonlyArray<[string, string]>,
  scope: ValueObject,
): Array<[string, string]> {
  return tags.map(([k, v]) => [k, v.includes('{{') ? ctx.render(v, scope) : v]);
}

/** POSTs line protocol; 2xx is success, 5xx and transport failures are recoverable. */
export async function writeLines(target: InfluxTarget, path: string, body: string): Promise<void> {
  let res;
  try {
    res = await httpSend(
      'POST',
      target.addr + path,
      { ...target.headers, 'Content-Type': 'text/plain; charset=utf-8' },
      body,
      WRITE_TIMEOUT_MS,
      undefined,
      target.tls,
    );
  } catch (e) {
    throw recoverable(e);
  }
  if (res.status >= 200 && res.status < 300) return;
  const reason = influxError(res.body.toString('utf8'));
  const err = new Error(`influx write failed with status ${res.status}: ${reason}`);
  throw res.status >= 500 ? recoverable(err) : err;
}

function influxError(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof j.error === 'string') return j.error;
    if (typeof j.message === 'string') return j.message;
  } catch {
    // not JSON: the body as it is
  }
  return text.trim();
}

/** GET `/ping` (10 s): InfluxDB answers 204 (2.x also 200). */
export async function pingInflux(target: InfluxTarget): Promise<void> {
  let res;
  try {
    res = await httpSend(
      'GET',
      `${target.addr}/ping`,
      target.headers,
      undefined,
      PING_TIMEOUT_MS,
      undefined,
      target.tls,
    );
  } catch (e) {
    throw new Error(`error pinging InfluxDB: ${(e as Error).message}`);
  }
  if (res.status < 200 || res.status >= 300) throw new Error(`error pinging InfluxDB: status ${res.status}`);
}

interface InfluxSettings {
  target: InfluxTarget;
  database: string;
  measurement: string;
  precision: Precision;
  tsFieldName: string;
  tags: Array<[string, string]>;
}

export function influxSettings(props: Props): InfluxSettings {
  try {
    const target = influxTarget(props, {
      username: propString(props, 'username'),
      password: propString(props, 'password'),
    });
    const database = propString(props, 'database', '');
    if (database === '') throw new Error('database is required');
    const measurement = propString(props, 'measurement', '');
    if (measurement === '') throw new Error('measurement is required');
    return {
      target,
      database,
      measurement,
      precision: readPrecision(props),
      tsFieldName: propString(props, 'tsFieldName', ''),
      tags: readTags(props),
    };
  } catch (e) {
    throw new EddyError(ErrorCode.Executor, `influx sink: ${(e as Error).message}`);
  }
}

export class InfluxSink implements SinkConnector {
  private s!: InfluxSettings;
  private path = '';

  provision(_ctx: SinkContext, props: Props): void {
    this.s = influxSettings(props);
    this.path = `/write?db=${encodeURIComponent(this.s.database)}&precision=${this.s.precision}`;
  }

  async connect(_ctx: SinkContext): Promise<void> {}

  async collect(ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const { measurement, tags, tsFieldName, precision } = this.s;
    const lines: string[] = [];
    for (const { fields, scope } of pointRows(payload)) {
      const line = pointLine(
        measurement,
        renderTags(ctx, tags, scope),
        Object.entries(fields),
        pointTime(scope, tsFieldName, precision),
      );
      if (line !== undefined) lines.push(line);
    }
    if (lines.length === 0) return;
    try {
      await writeLines(this.s.target, this.path, lines.join('\n'));
    } catch (e) {
      if (e instanceof TransportError) throw recoverable(e);
      throw e;
    }
  }

  async close(_ctx: SinkContext): Promise<void> {}
}
