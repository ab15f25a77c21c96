/**
 * Go `encoding/json` Marshal of template values: sorted object keys, `<>&` escaped as `\u003c…` (unless raw),
 * integers in decimal, floats in plain notation between 1e-6 and 1e21 (else `1e-7` / `1e+21`), []byte as base64,
 * time.Time as RFC 3339. NaN and infinities fail, as in Go.
 */
import { DateTime } from '../values/value.js';
import { formatRfc3339 } from '../values/datetime.js';
import { compareKeys, isMap } from './fmt.js';

export class JsonError extends Error {}

function jsonFloat(x: number): string {
  if (!Number.isFinite(x))
    throw new JsonError(`json: unsupported value: ${Number.isNaN(x) ? 'NaN' : x > 0 ? '+Inf' : '-Inf'}`);
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const a = Math.abs(x);
  if (a < 1e-6 || a >= 1e21) {
    // JS exponent form (`1e-7`, `1.5e+21`) is exactly Go's after its e-07 → e-7 clean-up
    return x.toExponential().replace(/^(-?)(\d)(\.\d+)?e/, '$1$2$3e');
  }
  const s = String(x);
  if (!s.includes('e')) return s;
  // 1e-6 <= a < 1e-5 may print with an exponent in JS (never: JS switches at 1e-7) — keep for safety
  return x.toFixed(20).replace(/0+$/, '').replace(/\.$/, '');
}

const HEX = '0123456789abcdef';

function jsonString(s: string, escapeHtml: boolean): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let rep: string | undefined;
    if (c < 0x20) {
      switch (c) {
        case 0x0a:
          rep = '\\n';
          break;
        case 0x0d:
          rep = '\\r';
          break;
        case 0x09:
          rep = '\\t';
          break;
        case 0x08:
          rep = '\\b';
          break;
        case 0x0c:
          rep = '\\f';
          break;
        default:
          rep = '\\u00' + HEX[c >> 4] + HEX[c & 15];
      }
    } else if (c === 0x22) rep = '\\"';
    else if (c === 0x5c) rep = '\\\\';
    else if (escapeHtml && (c === 0x3c || c === 0x3e || c === 0x26)) rep = '\\u00' + HEX[c >> 4] + HEX[c & 15];
    else if (c === 0x2028) rep = '\\u2028';
    else if (c === 0x2029) rep = '\\u2029';
    else if (c >= 0xd800 && c <= 0xdfff) {
      const next = s.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      rep = '\ufffd';
    }
    if (rep !== undefined) {
      out += s.slice(start, i) + rep;
      start = i + 1;
    }
  }
  return out + s.slice(start) + '"';
}

function enc(v: unknown, escapeHtml: boolean, indent: string | null, level: number): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return v.toString();
    case 'number':
      return jsonFloat(v);
    case 'string':
      return jsonString(v, escapeHtml);
  }
  if (v instanceof Uint8Array) return '"' + Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') + '"';
  if (v instanceof DateTime) return jsonString(formatRfc3339(v), escapeHtml);
  const nl = indent === null ? '' : '\n' + indent.repeat(level + 1);
  const end = indent === null ? '' : '\n' + indent.repeat(level);
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ',' : '') + nl + enc(v[i], escapeHtml, indent, level + 1);
    return s + end + ']';
  }
  if (isMap(v)) {
    const keys = Object.keys(v).sort(compareKeys);
    if (keys.length === 0) return '{}';
    const colon = indent === null ? ':' : ': ';
    let s = '{';
    for (let i = 0; i < keys.length; i++)
      s +=
        (i ? ',' : '') + nl + jsonString(keys[i], escapeHtml) + colon + enc(v[keys[i]], escapeHtml, indent, level + 1);
    return s + end + '}';
  }
  throw new JsonError(`json: unsupported type: ${typeof v}`);
}

/** `json.Marshal` (HTML-escaped). */
export function goJson(v: unknown): string {
  return enc(v, true, null, 0);
}

/** `json.Marshal` without HTML escaping (sprig `toRawJson`). */
export function goJsonRaw(v: unknown): string {
  return enc(v, false, null, 0);
}

/** `json.MarshalIndent(v, "", "  ")` (sprig `toPrettyJson`). */
export function goJsonPretty(v: unknown): string {
  return enc(v, true, '  ', 0);
}
