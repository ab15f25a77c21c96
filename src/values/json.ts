/**
 * JSON serialisation of values (docs/sql.md §6.8): ints as integer literals with full 64-bit precision, floats as
 * shortest round-trip digits (JS and Go agree for JSON), datetimes as RFC 3339 in their zone, bytes as base64.
 * A non-finite float cannot be serialised (EvalError). This runs for every sink message, so values holding only
 * JSON-native data take `JSON.stringify` directly after a cheap scan.
 */
import { DateTime, type Value } from './value.js';
import { EvalError } from './errors.js';
import { formatRfc3339 } from './datetime.js';
import { formatFloatG } from './text.js';

export interface JsonOptions {
  /** Write object keys in sorted order (Go's encoder does; `to_json` needs it). */
  sortKeys?: boolean;
  /** Escape `<`, `>`, `&`, U+2028, U+2029 as Go's encoder does. */
  escapeHtml?: boolean;
}

/** True when `JSON.stringify` alone gives the right text: no bigint, datetime, bytes or non-finite float. */
function isNative(v: unknown, depth: number): boolean {
  if (v === null || v === undefined) return true;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object': {
      if (depth > 64) return false;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (!isNative(v[i], depth + 1)) return false;
        return true;
      }
      if (v instanceof DateTime || v instanceof Uint8Array) return false;
      for (const k in v as Record<string, unknown>) {
        if (!isNative((v as Record<string, unknown>)[k], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

export function bytesToBase64(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
}

function nonFinite(x: number): EvalError {
  return new EvalError(`json: unsupported value: ${formatFloatG(x)}`);
}

function write(v: Value, sort: boolean): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return v.toString();
    case 'number':
      if (!Number.isFinite(v)) throw nonFinite(v);
      return JSON.stringify(v);
  }
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ',' : '') + write(v[i], sort);
    return s + ']';
  }
  if (v instanceof DateTime) return '"' + formatRfc3339(v) + '"';
  if (v instanceof Uint8Array) return '"' + bytesToBase64(v) + '"';
  const keys = Object.keys(v);
  if (sort) keys.sort();
  let s = '{';
  let first = true;
  for (const k of keys) {
    const x = v[k];
    if (x === undefined) continue;
    s += (first ? '' : ',') + JSON.stringify(k) + ':' + write(x, sort);
    first = false;
  }
  return s + '}';
}

const HTML_TEST = /[<>&\u2028\u2029]/;
const HTML_RE = /[<>&\u2028\u2029]/g;
const HTML_ESC: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** Go's HTML-safe escaping of JSON text (`<`, `>`, `&`, U+2028, U+2029 as `\u…`). */
export function escapeJsonHtml(s: string): string {
  return HTML_TEST.test(s) ? s.replace(HTML_RE, (c) => HTML_ESC[c]) : s;
}

/** JSON text of a value. Object members whose value is `undefined` are omitted. */
export function toJson(v: Value, opts?: JsonOptions): string {
  const sort = opts?.sortKeys === true;
  const s = !sort && isNative(v, 0) ? (JSON.stringify(v) ?? 'null') : write(v, sort);
  return opts?.escapeHtml ? escapeJsonHtml(s) : s;
}

/**
 * A value as plain JSON data (bigint → number when exact else kept, datetime → RFC 3339 string, bytes → base64):
 * for consumers that need objects rather than text (e.g. template engines).
 */
export function toJsonData(v: Value): unknown {
  if (v === null || v === undefined || typeof v !== 'object') {
    if (typeof v === 'bigint') return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v;
    return v;
  }
  if (Array.isArray(v)) return v.map(toJsonData);
  if (v instanceof DateTime) return formatRfc3339(v);
  if (v instanceof Uint8Array) return bytesToBase64(v);
  const out: Record<string, unknown> = {};
  for (const k in v) out[k] = toJsonData(v[k]);
  return out;
}
