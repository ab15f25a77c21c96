/**
 * Functions callable from templates: Go's text/template builtins, eKuiper's `json`/`base64`, and the sprig v3
 * library (docs/runtime.md §3.4). Each function declares its Go parameter kinds so arguments are checked the way Go's
 * reflection-based call does (`wrong type for value; expected string; got float64`).
 */
import { createHash, randomBytes, randomInt, randomUUID, createCipheriv, createDecipheriv } from 'node:crypto';
import { posix as path } from 'node:path';
import { DateTime } from '../values/value.js';
import {
  goLayout,
  formatLayout,
  parseLayout,
  hostZone,
  checkZone,
  fieldsOf,
  DAY_NAMES,
  MONTH_NAMES,
} from '../values/datetime.js';
import {
  formatV,
  goType,
  goQuote,
  isMap,
  sprint,
  sprintf,
  sprintln,
  utf8Bytes,
  bytesText,
  compareKeys,
} from './fmt.js';
import { goJson, goJsonPretty, goJsonRaw } from './json.js';
import type { RE2JS } from 're2js';
import { compileRegex, goMatches, regexReplace } from '../functions/regex.js';

/** A parameter's Go type: values are checked (and constants converted) before the call. */
export type ParamKind = 'any' | 'raw' | 'string' | 'int' | 'float' | 'bool';

export interface TemplateFunc {
  params: readonly ParamKind[];
  variadic?: ParamKind;
  fn: (...args: never[]) => unknown;
}

/** Raised by a function; the executor reports it as `error calling <name>: <message>`. */
export class FuncError extends Error {}

const fail = (msg: string): never => {
  throw new FuncError(msg);
};

// ------------------------------------------------------------------------------------------------ helpers

/** Go's truth of a value (if/with/and/or/not). */
export function truth(v: unknown): boolean {
  if (v === null || v === undefined) return false;
  switch (typeof v) {
    case 'boolean':
      return v;
    case 'bigint':
      return v !== 0n;
    case 'number':
      return v !== 0;
    case 'string':
      return v.length > 0;
  }
  if (Array.isArray(v)) return v.length > 0;
  if (v instanceof Uint8Array) return v.length > 0;
  if (v instanceof DateTime) return true;
  if (isMap(v)) return Object.keys(v).length > 0;
  return true;
}

/** sprig's `strval`: strings as is, bytes as text, everything else `%v`. */
function strval(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return bytesText(v);
  return formatV(v);
}

/** spf13/cast ToInt64 (errors give 0). */
function toInt64(v: unknown): bigint {
  switch (typeof v) {
    case 'bigint':
      return BigInt.asIntN(64, v);
    case 'number':
      return Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n;
    case 'boolean':
      return v ? 1n : 0n;
    case 'string': {
      const s = v.replace(/^([+-]?\d+)\.0*$/, '$1');
      try {
        if (/^[+-]?(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO]?[0-7]+|\d+)$/.test(s)) {
          const neg = s.startsWith('-');
          let b = s.replace(/^[+-]/, '');
          if (/^0[0-7]+$/.test(b)) b = '0o' + b.slice(1);
          const n = BigInt(b);
          return neg ? -n : n;
        }
      } catch {
        /* fall through */
      }
      return 0n;
    }
  }
  return 0n;
}

/** spf13/cast ToFloat64 (errors give 0). */
function toFloat64(v: unknown): number {
  switch (typeof v) {
    case 'bigint':
      return Number(v);
    case 'number':
      return v;
    case 'boolean':
      return v ? 1 : 0;
    case 'string': {
      const n = Number(v.trim());
      return v.trim() !== '' && !Number.isNaN(n) ? n : 0;
    }
  }
  return 0;
}

function isList(v: unknown): v is unknown[] {
  return Array.isArray(v);
}

function listOf(v: unknown, fn: string): unknown[] {
  if (Array.isArray(v)) return v;
  if (v instanceof Uint8Array) return Array.from(v, (b) => BigInt(b));
  return fail(`Cannot ${fn} on type ${goType(v)}`);
}

/** sprig `empty`. */
function empty(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (v instanceof DateTime) return false;
  return !truth(v);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
  if (typeof a !== typeof b) return false;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (a instanceof Uint8Array) return b instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i]);
  if (a instanceof DateTime) return b instanceof DateTime && a.ms === b.ms && a.nanos === b.nanos && a.zone === b.zone;
  if (isMap(a) && isMap(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

function deepCopy(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(deepCopy);
  if (v instanceof Uint8Array) return v.slice();
  if (isMap(v)) {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v)) o[k] = deepCopy(v[k]);
    return o;
  }
  return v;
}

const enc64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

// ------------------------------------------------------------------------------------------------ comparisons

type BasicKind = 'invalid' | 'bool' | 'int' | 'float' | 'string' | 'other';

function basicKind(v: unknown): BasicKind {
  if (v === null || v === undefined) return 'invalid';
  switch (typeof v) {
    case 'boolean':
      return 'bool';
    case 'bigint':
      return 'int';
    case 'number':
      return 'float';
    case 'string':
      return 'string';
  }
  return 'other';
}

function eq(a: unknown, ...rest: unknown[]): boolean {
  if (rest.length === 0) return fail('missing argument for comparison');
  const k1 = basicKind(a);
  for (const b of rest) {
    const k2 = basicKind(b);
    let t = false;
    if (k1 !== k2) {
      if (k1 !== 'invalid' && k2 !== 'invalid') return fail('incompatible types for comparison');
    } else if (k1 === 'other') {
      if (a instanceof DateTime && b instanceof DateTime) t = a.ms === b.ms && a.nanos === b.nanos && a.zone === b.zone;
      else if (goType(a) !== goType(b))
        return fail(`non-comparable types ${formatV(a)}: ${goType(a)}, ${goType(b)}: ${formatV(b)}`);
      else return fail(`non-comparable type ${formatV(b)}: ${goType(b)}`);
    } else if (k1 === 'invalid') t = true;
    else t = a === b;
    if (t) return true;
  }
  return false;
}

function lt(a: unknown, b: unknown): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (k1 === 'invalid' || k1 === 'other' || k2 === 'invalid' || k2 === 'other')
    return fail('invalid type for comparison');
  if (k1 !== k2) return fail('incompatible types for comparison');
  if (k1 === 'bool') return fail('invalid type for comparison');
  return (a as number) < (b as number);
}

// ------------------------------------------------------------------------------------------------ builtins

function indexOne(item: unknown, idx: unknown): unknown {
  if (item === null) return fail('index of nil pointer');
  if (Array.isArray(item) || typeof item === 'string' || item instanceof Uint8Array) {
    if (idx === null || idx === undefined) return fail('cannot index slice/array with nil');
    if (typeof idx !== 'bigint') return fail(`cannot index slice/array with type ${goType(idx)}`);
    const bytes = typeof item === 'string' ? utf8Bytes(item) : item;
    const len = bytes.length;
    if (idx < 0n || idx >= BigInt(len)) return fail(`index out of range: ${idx}`);
    const x = bytes[Number(idx)];
    return typeof x === 'number' && !Array.isArray(item) ? BigInt(x) : x;
  }
  if (isMap(item)) {
    if (typeof idx !== 'string') return fail(`value has type ${goType(idx)}; should be string`);
    return Object.hasOwn(item, idx) ? item[idx] : null;
  }
  return fail(`can't index item of type ${goType(item)}`);
}

function goLen(v: unknown): bigint {
  if (v === null || v === undefined) return fail('len of nil pointer');
  if (typeof v === 'string') return BigInt(utf8Bytes(v).length);
  if (Array.isArray(v) || v instanceof Uint8Array) return BigInt(v.length);
  if (isMap(v)) return BigInt(Object.keys(v).length);
  return fail(`len of type ${goType(v)}`);
}

/** text/template's evalArgs: one string argument as is, else Sprint with `<no value>` for nil. */
function evalArgs(args: unknown[]): string {
  if (args.length === 1 && typeof args[0] === 'string') return args[0];
  return sprint(args.map((a) => (a === null || a === undefined ? '<no value>' : a)));
}

function htmlEscape(s: string): string {
  return s.replace(
    /[\0"'&<>]/g,
    (c) => ({ '\0': '\ufffd', '"': '&#34;', "'": '&#39;', '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!,
  );
}

function jsEscape(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    switch (ch) {
      case '\\':
        out += '\\\\';
        break;
      case "'":
        out += "\\'";
        break;
      case '"':
        out += '\\"';
        break;
      case '<':
        out += '\\u003C';
        break;
      case '>':
        out += '\\u003E';
        break;
      case '&':
        out += '\\u0026';
        break;
      case '=':
        out += '\\u003D';
        break;
      default:
        if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) out += '\\u' + cp.toString(16).toUpperCase().padStart(4, '0');
        else out += ch;
    }
  }
  return out;
}

/** url.QueryEscape */
function queryEscape(s: string): string {
  let out = '';
  for (const b of utf8Bytes(s)) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === ' ') out += '+';
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ strings

function title(s: string): string {
  let prev = ' ';
  let out = '';
  for (const ch of s) {
    const sep = !/[\p{L}\p{N}_]/u.test(prev);
    out += sep ? ch.toUpperCase() : ch;
    prev = ch;
  }
  return out;
}

function untitle(s: string): string {
  let prevSpace = true;
  let out = '';
  for (const ch of s) {
    out += prevSpace ? ch.toLowerCase() : ch;
    prevSpace = /\s/u.test(ch);
  }
  return out;
}

function swapcase(s: string): string {
  let prevSpace = true;
  let out = '';
  for (const ch of s) {
    const up = ch.toUpperCase();
    const low = ch.toLowerCase();
    if (ch === up && ch !== low) out += low;
    else if (ch === low && ch !== up) out += prevSpace ? ch.toUpperCase() : up;
    else out += ch;
    prevSpace = /\s/u.test(ch);
  }
  return out;
}

function initials(s: string): string {
  return s
    .split(/\s+/u)
    .filter((w) => w)
    .map((w) => [...w][0])
    .join('');
}

function words(s: string): string[] {
  return s
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w);
}

function snakecase(s: string): string {
  return words(s)
    .map((w) => w.toLowerCase())
    .join('_');
}

function kebabcase(s: string): string {
  return words(s)
    .map((w) => w.toLowerCase())
    .join('-');
}

function camelcase(s: string): string {
  return s
    .split('_')
    .map((w) => (w ? w[0].toUpperCase() + w.slice(1) : ''))
    .join('');
}

function wrapText(s: string, width: number, sep: string): string {
  if (width < 1) width = 1;
  const lines = s.split('\n');
  return lines
    .map((line) => {
      const out: string[] = [];
      let rest = line;
      while ([...rest].length > width) {
        const cut = rest.lastIndexOf(' ', width);
        if (cut > 0) {
          out.push(rest.slice(0, cut));
          rest = rest.slice(cut + 1);
        } else {
          const sp = rest.indexOf(' ', width);
          if (sp < 0) break;
          out.push(rest.slice(0, sp));
          rest = rest.slice(sp + 1);
        }
      }
      out.push(rest);
      return out.join(sep);
    })
    .join(sep);
}

function abbrev(width: bigint, s: string): string {
  const w = Number(width);
  if (w < 4) return '';
  if ([...s].length <= w) return s;
  return [...s].slice(0, w - 3).join('') + '...';
}

function abbrevboth(left: bigint, right: bigint, s: string): string {
  let offset = Number(left);
  const max = Number(right);
  const chars = [...s];
  if (max < 4 || (offset > 0 && max < 7)) return '';
  if (chars.length <= max) return s;
  if (offset > chars.length) offset = chars.length;
  if (chars.length - offset < max - 3) offset = chars.length - (max - 3);
  if (offset <= 4) return chars.slice(0, max - 3).join('') + '...';
  if (offset + max - 3 < chars.length) return '...' + abbrev(BigInt(max - 3), chars.slice(offset).join(''));
  return '...' + chars.slice(chars.length - (max - 3)).join('');
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function randFrom(chars: string, n: bigint): string {
  let out = '';
  for (let i = 0n; i < n; i++) out += chars[randomInt(chars.length)];
  return out;
}
const ASCII_PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('');

function adler32(s: string): number {
  let a = 1;
  let b = 0;
  for (const x of utf8Bytes(s)) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

function splitMap(parts: string[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  parts.forEach((p, i) => (o['_' + i] = p));
  return o;
}

function goSplitN(s: string, sep: string, n: number): string[] {
  if (n === 0) return [];
  if (sep === '') {
    const chars = [...s];
    if (n < 0 || n >= chars.length) return chars;
    return [...chars.slice(0, n - 1), chars.slice(n - 1).join('')];
  }
  const parts = s.split(sep);
  if (n < 0 || parts.length <= n) return parts;
  return [...parts.slice(0, n - 1), parts.slice(n - 1).join(sep)];
}

function strslice(v: unknown): string[] {
  if (Array.isArray(v)) return v.filter((x) => x !== null && x !== undefined).map(strval);
  if (v === null || v === undefined) return [];
  return [strval(v)];
}

// ------------------------------------------------------------------------------------------------ regex

/** A Go pattern compiled on RE2 (linear time, Go's syntax); a template error with Go's text when RE2 refuses it. */
function goRegex(pattern: string): RE2JS {
  try {
    return compileRegex(pattern);
  } catch (e) {
    return fail((e as Error).message);
  }
}

/** Go's `FindAllString(s, n)`: every match (n < 0) or the first n. */
function regexFindAll(re: string, s: string, n: bigint): string[] {
  const out: string[] = [];
  if (n === 0n) return out;
  for (const m of goMatches(goRegex(re), s)) {
    out.push(m[0]);
    if (n > 0n && BigInt(out.length) === n) break;
  }
  return out;
}

/** Go's `Regexp.Split(s, n)`. */
function regexSplit(re: string, s: string, n: bigint): string[] {
  if (n === 0n) return [];
  const r = goRegex(re);
  if (re !== '' && s === '') return [''];
  const out: string[] = [];
  let beg = 0;
  let end = 0;
  for (const m of goMatches(r, s)) {
    if (n > 0n && BigInt(out.length) === n - 1n) break;
    const start = m.index ?? 0;
    end = start;
    const matchEnd = start + m[0].length;
    if (matchEnd !== 0) out.push(s.slice(beg, end));
    beg = matchEnd;
  }
  if (end !== s.length) out.push(s.slice(beg));
  return out;
}

/** Go's `ReplaceAllString` / `ReplaceAllLiteralString`. */
function replaceAll(re: string, s: string, repl: string, literal: boolean): string {
  goRegex(re);
  return regexReplace(s, re, repl, literal);
}

// ------------------------------------------------------------------------------------------------ dates

function toTime(v: unknown): DateTime {
  if (v instanceof DateTime) return v;
  if (typeof v === 'bigint') return new DateTime(Number(v) * 1000, 'Local');
  return new DateTime(Date.now(), 'Local');
}

function localZone(): string {
  return hostZone();
}

function inZoneNamed(dt: DateTime, zone: string): DateTime {
  let z: string;
  try {
    z = zone === 'Local' ? localZone() : checkZone(zone);
  } catch {
    z = 'UTC';
  }
  return new DateTime(dt.ms, z, dt.nanos);
}

function dateInZone(layout: string, date: unknown, zone: string): string {
  return formatLayout(inZoneNamed(toTime(date), zone), goLayout(layout));
}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 };

/** time.ParseDuration → ms */
function parseDuration(s: string): number {
  const orig = s;
  let neg = false;
  if (s[0] === '-' || s[0] === '+') {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (!s) return fail(`time: invalid duration "${orig}"`);
  let total = 0;
  const re = /^(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)/;
  while (s) {
    const m = re.exec(s);
    if (!m || m[1] === '' || m[1] === '.')
      return fail(m ? `time: invalid duration "${orig}"` : `time: missing unit in duration "${orig}"`);
    total += Number(m[1]) * UNITS[m[2]];
    s = s.slice(m[0].length);
  }
  return neg ? -total : total;
}

/** time.Duration.String() of a duration in nanoseconds */
function durationString(ns: bigint): string {
  if (ns === 0n) return '0s';
  const neg = ns < 0n;
  let u = neg ? -ns : ns;
  let out: string;
  if (u < 1_000_000_000n) {
    let unit: string;
    let div: bigint;
    if (u < 1000n) return (neg ? '-' : '') + u + 'ns';
    else if (u < 1_000_000n) {
      unit = 'µs';
      div = 1000n;
    } else {
      unit = 'ms';
      div = 1_000_000n;
    }
    out = fracStr(u, div) + unit;
  } else {
    const h = u / 3_600_000_000_000n;
    u -= h * 3_600_000_000_000n;
    const m = u / 60_000_000_000n;
    u -= m * 60_000_000_000n;
    out = fracStr(u, 1_000_000_000n) + 's';
    if (h > 0n) out = `${h}h${m}m` + out;
    else if (m > 0n) out = `${m}m` + out;
  }
  return (neg ? '-' : '') + out;
}

function fracStr(v: bigint, div: bigint): string {
  const whole = v / div;
  const frac = v % div;
  if (frac === 0n) return whole.toString();
  const digits = div.toString().length - 1;
  return whole + '.' + frac.toString().padStart(digits, '0').replace(/0+$/, '');
}

function durationRound(v: unknown): string {
  let ms: number;
  if (typeof v === 'string') {
    try {
      ms = parseDuration(v);
    } catch {
      ms = 0;
    }
  } else if (v instanceof DateTime) ms = Date.now() - v.ms;
  else ms = Number(toInt64(v)) / 1e6;
  const neg = ms < 0;
  const u = Math.abs(ms) / 1000;
  const pre = neg ? '-' : '';
  const Y = 31536000,
    MO = 2592000,
    D = 86400,
    H = 3600,
    MI = 60;
  if (u > Y) return pre + Math.floor(u / Y) + 'y';
  if (u > MO) return pre + Math.floor(u / MO) + 'mo';
  if (u > D) return pre + Math.floor(u / D) + 'd';
  if (u > H) return pre + Math.floor(u / H) + 'h';
  if (u > MI) return pre + Math.floor(u / MI) + 'm';
  if (u > 0) return pre + Math.floor(u) + 's';
  return '0s';
}

function toDate(layout: string, s: string): DateTime {
  const dt = parseLayout(s, goLayout(layout), localZone());
  if (!dt) return fail(`parsing time ${goQuote(s)} as ${goQuote(layout)}: cannot parse`);
  return dt;
}

// ------------------------------------------------------------------------------------------------ decimal arithmetic (sprig addf…)

interface Dec {
  n: bigint;
  scale: number;
}

function toDec(x: number): Dec {
  if (!Number.isFinite(x)) return { n: 0n, scale: 0 };
  const s = x.toExponential();
  const e = s.indexOf('e');
  const mant = s.slice(0, e).replace('.', '');
  const neg = mant.startsWith('-');
  const digits = neg ? mant.slice(1) : mant;
  const exp = Number(s.slice(e + 1)) - (digits.length - 1);
  let n = BigInt(digits);
  if (neg) n = -n;
  return exp >= 0 ? { n: n * 10n ** BigInt(exp), scale: 0 } : { n, scale: -exp };
}

function decAlign(a: Dec, b: Dec): [bigint, bigint, number] {
  const s = Math.max(a.scale, b.scale);
  return [a.n * 10n ** BigInt(s - a.scale), b.n * 10n ** BigInt(s - b.scale), s];
}

function decToFloat(d: Dec): number {
  const neg = d.n < 0n;
  const digits = (neg ? -d.n : d.n).toString();
  return Number((neg ? '-' : '') + digits + 'e-' + d.scale);
}

function decOp(a: unknown, rest: unknown[], op: 'add' | 'sub' | 'mul' | 'div'): number {
  let acc = toDec(toFloat64(a));
  for (const b of rest) {
    const d = toDec(toFloat64(b));
    if (op === 'mul') acc = { n: acc.n * d.n, scale: acc.scale + d.scale };
    else if (op === 'div') {
      if (d.n === 0n) return fail('decimal division by 0');
      // 16 decimal places, rounded half away from zero (shopspring's default division precision)
      const [x, y] = decAlign(acc, d);
      const num = x * 10n ** 17n;
      let q = num / y;
      const neg = q < 0n;
      if (neg) q = -q;
      q = (q + 5n) / 10n;
      acc = { n: neg ? -q : q, scale: 16 };
    } else {
      const [x, y, s] = decAlign(acc, d);
      acc = { n: op === 'add' ? x + y : x - y, scale: s };
    }
  }
  return decToFloat(acc);
}

// ------------------------------------------------------------------------------------------------ lists / dicts

function uniq(list: unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const x of list) if (!out.some((y) => deepEqual(x, y))) out.push(x);
  return out;
}

function mergeInto(dst: Record<string, unknown>, src: unknown, overwrite: boolean): void {
  if (!isMap(src)) return;
  for (const k of Object.keys(src)) {
    const sv = src[k];
    const dv = dst[k];
    if (isMap(dv) && isMap(sv)) mergeInto(dv, sv, overwrite);
    else if (!Object.hasOwn(dst, k) || empty(dv) || (overwrite && !empty(sv))) dst[k] = sv;
  }
}

/** sprig's `slice` (it replaces Go's builtin): lists only; an empty list gives nil. */
function goSlice(list: unknown, idx: unknown[]): unknown[] | null {
  if (!Array.isArray(list) && !(list instanceof Uint8Array))
    return fail(`list should be type of slice or array but ${kindOf(list)}`);
  const l = listOf(list, 'slice');
  const len = l.length;
  if (len === 0) return null;
  const a = idx.length > 0 ? Number(toInt64(idx[0])) : 0;
  const b = idx.length > 1 ? Number(toInt64(idx[1])) : len;
  if (a < 0 || b > len || a > b) return fail('reflect: slice index out of range');
  return l.slice(a, b);
}

function dig(args: unknown[]): unknown {
  if (args.length < 3) return fail('dig needs at least three arguments');
  const dict = args[args.length - 1];
  const def = args[args.length - 2];
  const keys = args
    .slice(0, -2)
    .map((k) => (typeof k === 'string' ? k : fail(`wrong type for value; expected string; got ${goType(k)}`)));
  let cur: unknown = dict;
  for (const k of keys) {
    if (!isMap(cur) || !Object.hasOwn(cur, k)) return def;
    cur = cur[k];
  }
  return cur;
}

function urlParse(s: string): Record<string, unknown> {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return fail(`unable to parse url: parse ${goQuote(s)}: invalid URL`);
  }
  const userinfo = u.username ? u.username + (u.password ? ':' + u.password : '') : '';
  // WHATWG URL drops default ports; Go keeps the host as written
  const host = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/?#]*)/.exec(s)?.[1] ?? u.host;
  return {
    scheme: u.protocol.replace(/:$/, ''),
    host,
    hostname: u.hostname,
    path: decodeURIComponent(u.pathname),
    query: u.search.replace(/^\?/, ''),
    opaque: '',
    fragment: decodeURIComponent(u.hash.replace(/^#/, '')),
    userinfo,
  };
}

function urlJoin(d: unknown): string {
  const m = isMap(d) ? d : {};
  const str = (k: string): string => (typeof m[k] === 'string' ? (m[k] as string) : '');
  let out = '';
  if (str('scheme')) out += str('scheme') + ':';
  if (str('opaque')) out += str('opaque');
  else {
    if (str('scheme') || str('host') || str('userinfo')) {
      out += '//';
      if (str('userinfo')) out += str('userinfo') + '@';
      out += str('host');
    }
    let p = str('path');
    if (p && !p.startsWith('/') && str('host')) p = '/' + p;
    out += encodeURI(p);
  }
  if (str('query')) out += '?' + str('query');
  if (str('fragment')) out += '#' + encodeURIComponent(str('fragment'));
  return out;
}

function aesKey(password: string): Buffer {
  const key = Buffer.alloc(32);
  Buffer.from(password, 'utf8').copy(key);
  return key;
}

function encryptAES(password: string, plaintext: string): string {
  const key = aesKey(password);
  const content = Buffer.from(plaintext, 'utf8');
  const padding = 16 - (content.length % 16);
  const padded = Buffer.concat([content, Buffer.alloc(padding, padding)]);
  const iv = randomBytes(16);
  const c = createCipheriv('aes-256-cbc', key, iv);
  c.setAutoPadding(false);
  return Buffer.concat([iv, c.update(padded), c.final()]).toString('base64');
}

function decryptAES(password: string, crypt64: string): string {
  const data = Buffer.from(crypt64, 'base64');
  if (data.length < 16 || data.length % 16 !== 0) return fail('blocksize must be multipe of decoded message length');
  const d = createDecipheriv('aes-256-cbc', aesKey(password), data.subarray(0, 16));
  d.setAutoPadding(false);
  const out = Buffer.concat([d.update(data.subarray(16)), d.final()]);
  const pad = out[out.length - 1];
  return out.subarray(0, out.length - pad).toString('utf8');
}

function timeField(t: DateTime, f: keyof ReturnType<typeof fieldsOf>): bigint {
  return BigInt(fieldsOf(t)[f]);
}

// ------------------------------------------------------------------------------------------------ table

type F = TemplateFunc;
const f = (params: ParamKind[], fn: (...args: never[]) => unknown, variadic?: ParamKind): F => ({
  params,
  fn,
  variadic,
});

const S: ParamKind = 'string';
const I: ParamKind = 'int';
const A: ParamKind = 'any';
const R: ParamKind = 'raw';

function baseFuncs(): Record<string, F> {
  return {
    // text/template builtins (and/or are evaluated lazily by the executor)
    not: f([R], (a: unknown) => !truth(a)),
    len: f([R], goLen),
    index: f(
      [R],
      (item: unknown, ...idx: unknown[]) => {
        if (item === null || item === undefined) return fail('index of untyped nil');
        let cur: unknown = item;
        for (const i of idx) cur = indexOne(cur, i);
        return cur;
      },
      R,
    ),
    print: f([], (...a: unknown[]) => sprint(a), A),
    printf: f([S], (format: string, ...a: unknown[]) => sprintf(format, a), A),
    println: f([], (...a: unknown[]) => sprintln(a), A),
    html: f([], (...a: unknown[]) => htmlEscape(evalArgs(a)), A),
    js: f([], (...a: unknown[]) => jsEscape(evalArgs(a)), A),
    urlquery: f([], (...a: unknown[]) => queryEscape(evalArgs(a)), A),
    call: f([R], (fn: unknown) => fail(`non-function ${formatV(fn)} of type ${goType(fn)}`), R),
    eq: f([R], eq, R),
    ne: f([R, R], (a: unknown, b: unknown) => !eq(a, b)),
    lt: f([R, R], lt),
    le: f([R, R], (a: unknown, b: unknown) => lt(a, b) || eq(a, b)),
    gt: f([R, R], (a: unknown, b: unknown) => !(lt(a, b) || eq(a, b))),
    ge: f([R, R], (a: unknown, b: unknown) => !lt(a, b)),

    // eKuiper
    json: f([A], (v: unknown) => {
      try {
        return goJson(v);
      } catch {
        return '';
      }
    }),
    base64: f([A], (v: unknown) => {
      if (typeof v === 'string' || typeof v === 'bigint' || typeof v === 'boolean') return enc64(String(v));
      if (typeof v === 'number') return enc64(sprintf('%v', [v]));
      if (isMap(v)) return enc64(goJson(v));
      return fail(`unsupported type ${goType(v)}`);
    }),

    // sprig: strings
    hello: f([], () => 'Hello!'),
    abbrev: f([I, S], abbrev),
    abbrevboth: f([I, I, S], abbrevboth),
    trunc: f([I, S], (c: bigint, s: string) => {
      const n = Number(c);
      if (n < 0 && s.length + n > 0) return s.slice(s.length + n);
      if (n >= 0 && s.length > n) return s.slice(0, n);
      return s;
    }),
    trim: f([S], (s: string) => s.trim()),
    upper: f([S], (s: string) => s.toUpperCase()),
    lower: f([S], (s: string) => s.toLowerCase()),
    title: f([S], title),
    untitle: f([S], untitle),
    substr: f([I, I, S], (start: bigint, end: bigint, s: string) => {
      const a = Number(start);
      const b = Number(end);
      if (a < 0) return s.slice(0, b);
      if (b < 0 || b > s.length) return s.slice(a);
      return s.slice(a, b);
    }),
    repeat: f([I, S], (n: bigint, s: string) =>
      n < 0n ? fail('strings: negative Repeat count') : s.repeat(Number(n)),
    ),
    trimall: f([S, S], (cut: string, s: string) => goTrim(s, cut)),
    trimAll: f([S, S], (cut: string, s: string) => goTrim(s, cut)),
    trimSuffix: f([S, S], (suf: string, s: string) => (suf && s.endsWith(suf) ? s.slice(0, s.length - suf.length) : s)),
    trimPrefix: f([S, S], (pre: string, s: string) => (s.startsWith(pre) ? s.slice(pre.length) : s)),
    nospace: f([S], (s: string) => s.replace(/\s/gu, '')),
    initials: f([S], initials),
    randAlphaNum: f([I], (n: bigint) => randFrom(ALNUM, n)),
    randAlpha: f([I], (n: bigint) => randFrom(ALNUM.slice(0, 52), n)),
    randAscii: f([I], (n: bigint) => randFrom(ASCII_PRINTABLE, n)),
    randNumeric: f([I], (n: bigint) => randFrom('0123456789', n)),
    swapcase: f([S], swapcase),
    shuffle: f([S], (s: string) => {
      const c = [...s];
      for (let i = c.length - 1; i > 0; i--) {
        const j = randomInt(i + 1);
        [c[i], c[j]] = [c[j], c[i]];
      }
      return c.join('');
    }),
    snakecase: f([S], snakecase),
    camelcase: f([S], camelcase),
    kebabcase: f([S], kebabcase),
    wrap: f([I, S], (l: bigint, s: string) => wrapText(s, Number(l), '\n')),
    wrapWith: f([I, S, S], (l: bigint, sep: string, s: string) => wrapText(s, Number(l), sep)),
    contains: f([S, S], (sub: string, s: string) => s.includes(sub)),
    hasPrefix: f([S, S], (p: string, s: string) => s.startsWith(p)),
    hasSuffix: f([S, S], (p: string, s: string) => s.endsWith(p)),
    quote: f(
      [],
      (...a: unknown[]) =>
        a
          .filter((x) => x !== null && x !== undefined)
          .map((x) => goQuote(strval(x)))
          .join(' '),
      A,
    ),
    squote: f(
      [],
      (...a: unknown[]) =>
        a
          .filter((x) => x !== null && x !== undefined)
          .map((x) => `'${strval(x)}'`)
          .join(' '),
      A,
    ),
    cat: f(
      [],
      (...a: unknown[]) =>
        a
          .filter((x) => x !== null && x !== undefined)
          .map(strval)
          .join(' '),
      A,
    ),
    indent: f([I, S], (n: bigint, s: string) => indent(Number(n), s)),
    nindent: f([I, S], (n: bigint, s: string) => '\n' + indent(Number(n), s)),
    replace: f([S, S, S], (o: string, n: string, s: string) => s.split(o).join(n)),
    plural: f([S, S, I], (one: string, many: string, n: bigint) => (n === 1n ? one : many)),
    sha1sum: f([S], (s: string) => createHash('sha1').update(s, 'utf8').digest('hex')),
    sha256sum: f([S], (s: string) => createHash('sha256').update(s, 'utf8').digest('hex')),
    adler32sum: f([S], (s: string) => String(adler32(s))),
    toString: f([A], strval),
    split: f([S, S], (sep: string, s: string) => splitMap(goSplitN(s, sep, -1))),
    splitList: f([S, S], (sep: string, s: string) => goSplitN(s, sep, -1)),
    splitn: f([S, I, S], (sep: string, n: bigint, s: string) => splitMap(goSplitN(s, sep, Number(n)))),
    toStrings: f([A], (v: unknown) => (Array.isArray(v) ? v.map(strval) : v === null ? [] : [strval(v)])),
    join: f([S, A], (sep: string, v: unknown) => strslice(v).join(sep)),
    sortAlpha: f([A], (v: unknown) => {
      if (Array.isArray(v)) return v.map(strval).sort(compareKeys);
      return [strval(v)];
    }),

    // regex
    regexMatch: f([S, S], (re: string, s: string) => {
      try {
        return goRegex(re).test(s);
      } catch {
        return false;
      }
    }),
    mustRegexMatch: f([S, S], (re: string, s: string) => goRegex(re).test(s)),
    regexFindAll: f([S, S, I], (re: string, s: string, n: bigint) => safe(() => regexFindAll(re, s, n), [])),
    mustRegexFindAll: f([S, S, I], regexFindAll),
    regexFind: f([S, S], (re: string, s: string) => safe(() => goRegex(re).exec(s)?.[0] ?? '', '')),
    mustRegexFind: f([S, S], (re: string, s: string) => goRegex(re).exec(s)?.[0] ?? ''),
    regexReplaceAll: f([S, S, S], (re: string, s: string, r: string) => safe(() => replaceAll(re, s, r, false), s)),
    mustRegexReplaceAll: f([S, S, S], (re: string, s: string, r: string) => replaceAll(re, s, r, false)),
    regexReplaceAllLiteral: f([S, S, S], (re: string, s: string, r: string) =>
      safe(() => replaceAll(re, s, r, true), s),
    ),
    mustRegexReplaceAllLiteral: f([S, S, S], (re: string, s: string, r: string) => replaceAll(re, s, r, true)),
    regexSplit: f([S, S, I], (re: string, s: string, n: bigint) => safe(() => regexSplit(re, s, n), [])),
    mustRegexSplit: f([S, S, I], regexSplit),
    regexQuoteMeta: f([S], (s: string) => s.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')),

    // dates
    now: f([], () => new DateTime(Date.now(), localZone())),
    date: f([S, A], (layout: string, d: unknown) => dateInZone(layout, d, 'Local')),
    date_in_zone: f([S, A, S], dateInZone),
    dateInZone: f([S, A, S], dateInZone),
    htmlDate: f([A], (d: unknown) => dateInZone('2006-01-02', d, 'Local')),
    htmlDateInZone: f([A, S], (d: unknown, z: string) => dateInZone('2006-01-02', d, z)),
    date_modify: f([S, A], (mod: string, d: unknown) => safe(() => modify(mod, d), toTime(d))),
    dateModify: f([S, A], (mod: string, d: unknown) => safe(() => modify(mod, d), toTime(d))),
    must_date_modify: f([S, A], modify),
    mustDateModify: f([S, A], modify),
    ago: f([A], (d: unknown) =>
      durationString(BigInt(Math.round((Date.now() - toTime(d).ms) / 1000)) * 1_000_000_000n),
    ),
    duration: f([A], (sec: unknown) => durationString(toInt64(sec) * 1_000_000_000n)),
    durationRound: f([A], durationRound),
    toDate: f([S, S], (layout: string, s: string) =>
      safe(() => toDate(layout, s), new DateTime(-62135596800000, 'UTC')),
    ),
    mustToDate: f([S, S], toDate),
    unixEpoch: f([A], (d: unknown) => String(Math.floor(toTime(d).ms / 1000))),

    // numbers
    atoi: f([S], (s: string) => (/^[+-]?\d+$/.test(s) ? BigInt(s) : 0n)),
    int: f([A], toInt64),
    int64: f([A], toInt64),
    float64: f([A], toFloat64),
    toDecimal: f([A], (v: unknown) => {
      const s = strval(v);
      return /^[0-7]+$/.test(s) ? BigInt('0o' + s) : 0n;
    }),
    seq: f([], (...p: unknown[]) => seq(p.map((x) => Number(toInt64(x)))), A),
    until: f([I], (n: bigint) => untilStep(0, Number(n), n >= 0n ? 1 : -1)),
    untilStep: f([I, I, I], (a: bigint, b: bigint, s: bigint) => untilStep(Number(a), Number(b), Number(s))),
    add1: f([A], (a: unknown) => toInt64(a) + 1n),
    add: f(
      [],
      (...a: unknown[]) =>
        BigInt.asIntN(
          64,
          a.reduce<bigint>((s, x) => s + toInt64(x), 0n),
        ),
      A,
    ),
    sub: f([A, A], (a: unknown, b: unknown) => BigInt.asIntN(64, toInt64(a) - toInt64(b))),
    div: f([A, A], (a: unknown, b: unknown) => {
      const d = toInt64(b);
      if (d === 0n) return fail('runtime error: integer divide by zero');
      return toInt64(a) / d;
    }),
    mod: f([A, A], (a: unknown, b: unknown) => {
      const d = toInt64(b);
      if (d === 0n) return fail('runtime error: integer divide by zero');
      return toInt64(a) % d;
    }),
    mul: f(
      [A],
      (a: unknown, ...r: unknown[]) =>
        BigInt.asIntN(
          64,
          r.reduce<bigint>((s, x) => s * toInt64(x), toInt64(a)),
        ),
      A,
    ),
    randInt: f([I, I], (a: bigint, b: bigint) =>
      b <= a ? fail('invalid argument to Intn') : a + BigInt(randomInt(Number(b - a))),
    ),
    add1f: f([A], (a: unknown) => decOp(a, [1], 'add')),
    addf: f([], (...a: unknown[]) => decOp(0, a, 'add'), A),
    subf: f([A], (a: unknown, ...r: unknown[]) => decOp(a, r, 'sub'), A),
    divf: f([A], (a: unknown, ...r: unknown[]) => decOp(a, r, 'div'), A),
    mulf: f([A], (a: unknown, ...r: unknown[]) => decOp(a, r, 'mul'), A),
    biggest: f(
      [A],
      (a: unknown, ...r: unknown[]) => r.reduce<bigint>((m, x) => (toInt64(x) > m ? toInt64(x) : m), toInt64(a)),
      A,
    ),
    max: f(
      [A],
      (a: unknown, ...r: unknown[]) => r.reduce<bigint>((m, x) => (toInt64(x) > m ? toInt64(x) : m), toInt64(a)),
      A,
    ),
    min: f(
      [A],
      (a: unknown, ...r: unknown[]) => r.reduce<bigint>((m, x) => (toInt64(x) < m ? toInt64(x) : m), toInt64(a)),
      A,
    ),
    maxf: f(
      [A],
      (a: unknown, ...r: unknown[]) => r.reduce<number>((m, x) => Math.max(m, toFloat64(x)), toFloat64(a)),
      A,
    ),
    minf: f(
      [A],
      (a: unknown, ...r: unknown[]) => r.reduce<number>((m, x) => Math.min(m, toFloat64(x)), toFloat64(a)),
      A,
    ),
    ceil: f([A], (a: unknown) => Math.ceil(toFloat64(a))),
    floor: f([A], (a: unknown) => Math.floor(toFloat64(a))),
    round: f(
      [A, I],
      (a: unknown, p: bigint, ...r: unknown[]) => {
        const roundOn = r.length ? toFloat64(r[0]) : 0.5;
        const pow = Math.pow(10, Number(p));
        const digit = pow * toFloat64(a);
        const frac = digit - Math.trunc(digit);
        return (frac >= roundOn ? Math.ceil(digit) : Math.floor(digit)) / pow;
      },
      'float',
    ),

    // defaults / flow / json
    default: f([A], (d: unknown, ...given: unknown[]) => (given.length === 0 || empty(given[0]) ? d : given[0]), A),
    empty: f([A], empty),
    coalesce: f([], (...a: unknown[]) => a.find((x) => !empty(x)) ?? null, A),
    all: f([], (...a: unknown[]) => a.every((x) => !empty(x)), A),
    any: f([], (...a: unknown[]) => a.some((x) => !empty(x)), A),
    compact: f([A], (l: unknown) => listOf(l, 'compact').filter((x) => !empty(x))),
    mustCompact: f([A], (l: unknown) => listOf(l, 'compact').filter((x) => !empty(x))),
    ternary: f([A, A, 'bool'], (t: unknown, e: unknown, c: boolean) => (c ? t : e)),
    fail: f([S], (m: string) => fail(m)),
    fromJson: f([S], (s: string) => safe(() => JSON.parse(s) as unknown, null)),
    mustFromJson: f([S], (s: string) => {
      try {
        return JSON.parse(s) as unknown;
      } catch (e) {
        return fail((e as Error).message);
      }
    }),
    toJson: f([A], (v: unknown) => safe(() => goJson(v), '')),
    mustToJson: f([A], goJson),
    toPrettyJson: f([A], (v: unknown) => safe(() => goJsonPretty(v), '')),
    mustToPrettyJson: f([A], goJsonPretty),
    toRawJson: f([A], (v: unknown) => safe(() => goJsonRaw(v), '')),
    mustToRawJson: f([A], goJsonRaw),
    deepCopy: f([A], deepCopy),
    mustDeepCopy: f([A], (v: unknown) => (v === null ? fail('copy: cannot copy nil') : deepCopy(v))),

    // reflection
    typeOf: f([A], goType),
    typeIs: f([S, A], (t: string, v: unknown) => t === goType(v)),
    typeIsLike: f([S, A], (t: string, v: unknown) => t === goType(v) || t === '*' + goType(v)),
    kindOf: f([A], kindOf),
    kindIs: f([S, A], (t: string, v: unknown) => t === kindOf(v)),
    deepEqual: f([A, A], deepEqual),

    // encoding
    b64enc: f([S], enc64),
    b64dec: f([S], (s: string) => {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0)
        return `illegal base64 data at input byte ${firstBad64(s)}`;
      return Buffer.from(s, 'base64').toString('utf8');
    }),
    b32enc: f([S], (s: string) => base32(utf8Bytes(s))),
    b32dec: f([S], (s: string) => safe(() => bytesText(unbase32(s)), 'illegal base32 data')),

    // lists and dicts
    list: f([], (...a: unknown[]) => a, A),
    tuple: f([], (...a: unknown[]) => a, A),
    dict: f(
      [],
      (...a: unknown[]) => {
        const o: Record<string, unknown> = {};
        for (let i = 0; i < a.length; i += 2) o[strval(a[i])] = i + 1 < a.length ? a[i + 1] : '';
        return o;
      },
      A,
    ),
    get: f([A, S], (d: unknown, k: string) => (isMap(d) && Object.hasOwn(d, k) ? d[k] : '')),
    set: f([A, S, A], (d: unknown, k: string, v: unknown) => (isMap(d) ? ((d[k] = v), d) : fail('set on non-map'))),
    unset: f([A, S], (d: unknown, k: string) => (isMap(d) ? (delete d[k], d) : fail('unset on non-map'))),
    hasKey: f([A, S], (d: unknown, k: string) => isMap(d) && Object.hasOwn(d, k)),
    pluck: f(
      [S],
      (k: string, ...ds: unknown[]) =>
        ds.filter((d) => isMap(d) && Object.hasOwn(d, k)).map((d) => (d as Record<string, unknown>)[k]),
      A,
    ),
    keys: f([], (...ds: unknown[]) => ds.flatMap((d) => (isMap(d) ? Object.keys(d) : [])), A),
    values: f([A], (d: unknown) => (isMap(d) ? Object.values(d) : [])),
    pick: f(
      [A],
      (d: unknown, ...ks: unknown[]) => {
        const o: Record<string, unknown> = {};
        if (isMap(d)) for (const k of ks.map(strval)) if (Object.hasOwn(d, k)) o[k] = d[k];
        return o;
      },
      S,
    ),
    omit: f(
      [A],
      (d: unknown, ...ks: unknown[]) => {
        const o: Record<string, unknown> = {};
        const skip = new Set(ks.map(strval));
        if (isMap(d)) for (const k of Object.keys(d)) if (!skip.has(k)) o[k] = d[k];
        return o;
      },
      S,
    ),
    merge: f(
      [A],
      (d: unknown, ...src: unknown[]) => {
        if (!isMap(d)) return fail('merge on non-map');
        for (const s of src) mergeInto(d, s, false);
        return d;
      },
      A,
    ),
    mustMerge: f(
      [A],
      (d: unknown, ...src: unknown[]) => {
        if (!isMap(d)) return fail('merge on non-map');
        for (const s of src) mergeInto(d, s, false);
        return d;
      },
      A,
    ),
    mergeOverwrite: f(
      [A],
      (d: unknown, ...src: unknown[]) => {
        if (!isMap(d)) return fail('merge on non-map');
        for (const s of src) mergeInto(d, s, true);
        return d;
      },
      A,
    ),
    mustMergeOverwrite: f(
      [A],
      (d: unknown, ...src: unknown[]) => {
        if (!isMap(d)) return fail('merge on non-map');
        for (const s of src) mergeInto(d, s, true);
        return d;
      },
      A,
    ),
    append: f([A, A], (l: unknown, v: unknown) => [...listOf(l, 'append'), v]),
    push: f([A, A], (l: unknown, v: unknown) => [...listOf(l, 'push'), v]),
    mustAppend: f([A, A], (l: unknown, v: unknown) => [...listOf(l, 'append'), v]),
    mustPush: f([A, A], (l: unknown, v: unknown) => [...listOf(l, 'push'), v]),
    prepend: f([A, A], (l: unknown, v: unknown) => [v, ...listOf(l, 'prepend')]),
    mustPrepend: f([A, A], (l: unknown, v: unknown) => [v, ...listOf(l, 'prepend')]),
    first: f([A], (l: unknown) => listOf(l, 'find first').at(0) ?? null),
    mustFirst: f([A], (l: unknown) => listOf(l, 'find first').at(0) ?? null),
    rest: f([A], (l: unknown) => listOf(l, 'find rest').slice(1)),
    mustRest: f([A], (l: unknown) => listOf(l, 'find rest').slice(1)),
    last: f([A], (l: unknown) => listOf(l, 'find last').at(-1) ?? null),
    mustLast: f([A], (l: unknown) => listOf(l, 'find last').at(-1) ?? null),
    initial: f([A], (l: unknown) => listOf(l, 'find initial').slice(0, -1)),
    mustInitial: f([A], (l: unknown) => listOf(l, 'find initial').slice(0, -1)),
    reverse: f([A], (l: unknown) => listOf(l, 'find reverse').slice().reverse()),
    mustReverse: f([A], (l: unknown) => listOf(l, 'find reverse').slice().reverse()),
    uniq: f([A], (l: unknown) => uniq(listOf(l, 'find uniq'))),
    mustUniq: f([A], (l: unknown) => uniq(listOf(l, 'find uniq'))),
    without: f(
      [A],
      (l: unknown, ...o: unknown[]) => listOf(l, 'find without').filter((x) => !o.some((y) => deepEqual(x, y))),
      A,
    ),
    mustWithout: f(
      [A],
      (l: unknown, ...o: unknown[]) => listOf(l, 'find without').filter((x) => !o.some((y) => deepEqual(x, y))),
      A,
    ),
    has: f([A, A], (n: unknown, l: unknown) =>
      l === null ? false : listOf(l, 'find has').some((x) => deepEqual(x, n)),
    ),
    mustHas: f([A, A], (n: unknown, l: unknown) =>
      l === null ? false : listOf(l, 'find has').some((x) => deepEqual(x, n)),
    ),
    slice: f([A], (l: unknown, ...i: unknown[]) => goSlice(l, i), A),
    mustSlice: f([A], (l: unknown, ...i: unknown[]) => goSlice(l, i), A),
    concat: f([], (...ls: unknown[]) => ls.flatMap((l) => listOf(l, 'concat')), A),
    dig: f([], (...a: unknown[]) => dig(a), A),
    chunk: f([I, A], (size: bigint, l: unknown) => chunk(Number(size), listOf(l, 'chunk'))),
    mustChunk: f([I, A], (size: bigint, l: unknown) => chunk(Number(size), listOf(l, 'chunk'))),
    isList: f([A], isList),

    // OS / paths / URL
    env: f([S], (k: string) => process.env[k] ?? ''),
    expandenv: f([S], (s: string) =>
      s.replace(
        /\$\{([^}]*)\}|\$([A-Za-z0-9_]+)/g,
        (_m, a: string | undefined, b: string | undefined) => process.env[(a ?? b)!] ?? '',
      ),
    ),
    base: f([S], goBase),
    dir: f([S], goDir),
    clean: f([S], goClean),
    ext: f([S], goExt),
    isAbs: f([S], (p: string) => p.startsWith('/')),
    osBase: f([S], goBase),
    osClean: f([S], goClean),
    osDir: f([S], goDir),
    osExt: f([S], goExt),
    osIsAbs: f([S], (p: string) => p.startsWith('/')),
    urlParse: f([S], urlParse),
    urlJoin: f([A], urlJoin),

    // crypto / ids
    uuidv4: f([], () => randomUUID()),
    randBytes: f([I], (n: bigint) => randomBytes(Number(n)).toString('base64')),
    encryptAES: f([S, S], encryptAES),
    decryptAES: f([S, S], decryptAES),
  };
}

function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

function goTrim(s: string, cut: string): string {
  const set = new Set([...cut]);
  const c = [...s];
  let a = 0;
  let b = c.length;
  while (a < b && set.has(c[a])) a++;
  while (b > a && set.has(c[b - 1])) b--;
  return c.slice(a, b).join('');
}

function indent(n: number, s: string): string {
  const pad = ' '.repeat(Math.max(n, 0));
  return pad + s.replace(/\n/g, '\n' + pad);
}

function seq(p: number[]): string {
  let start = 1;
  let step = 1;
  let end: number;
  if (p.length === 0) return '';
  if (p.length === 1) end = p[0];
  else if (p.length === 2) {
    start = p[0];
    end = p[1];
    if (end < start) step = -1;
  } else if (p.length === 3) {
    [start, step, end] = p;
    if ((end < start && step > 0) || (end > start && step < 0) || step === 0) return '';
  } else return '';
  const out: number[] = [];
  if (step > 0) for (let i = start; i <= end; i += step) out.push(i);
  else for (let i = start; i >= end; i += step) out.push(i);
  return out.join(' ');
}

function untilStep(start: number, stop: number, step: number): bigint[] {
  const out: bigint[] = [];
  if (step === 0) return out;
  if (step > 0) for (let i = start; i < stop; i += step) out.push(BigInt(i));
  else for (let i = start; i > stop; i += step) out.push(BigInt(i));
  return out;
}

function chunk(size: number, l: unknown[]): unknown[][] {
  if (size <= 0) return fail('invalid chunk size');
  const out: unknown[][] = [];
  for (let i = 0; i < l.length; i += size) out.push(l.slice(i, i + size));
  return out;
}

function modify(mod: string, d: unknown): DateTime {
  const t = toTime(d);
  const ms = parseDuration(mod);
  const whole = Math.trunc(ms);
  const nanos = t.nanos + Math.round((ms - whole) * 1e6);
  return new DateTime(t.ms + whole + Math.floor(nanos / 1e6), t.zone, ((nanos % 1e6) + 1e6) % 1e6);
}

/** Go's reflect kind: the type name for scalars, the kind of the composite types. */
function kindOf(v: unknown): string {
  if (v === null || v === undefined) return 'invalid';
  if (Array.isArray(v) || v instanceof Uint8Array) return 'slice';
  if (v instanceof DateTime) return 'struct';
  if (typeof v === 'object' || typeof v === 'function') return 'map';
  return goType(v);
}

function goClean(p: string): string {
  if (p === '') return '.';
  const n = path.normalize(p);
  return n.length > 1 ? n.replace(/\/$/, '') : n;
}
function goBase(p: string): string {
  if (p === '') return '.';
  const t = p.replace(/\/+$/, '');
  if (t === '') return '/';
  return t.slice(t.lastIndexOf('/') + 1);
}
function goDir(p: string): string {
  const i = p.lastIndexOf('/');
  return goClean(p.slice(0, i + 1));
}
function goExt(p: string): string {
  for (let i = p.length - 1; i >= 0 && p[i] !== '/'; i--) if (p[i] === '.') return p.slice(i);
  return '';
}

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
function base32(b: Uint8Array): string {
  let out = '';
  let bits = 0;
  let val = 0;
  for (const x of b) {
    val = (val << 8) | x;
    bits += 8;
    while (bits >= 5) {
      out += B32[(val >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(val << (5 - bits)) & 31];
  while (out.length % 8) out += '=';
  return out;
}
function unbase32(s: string): Uint8Array {
  const clean = s.replace(/=+$/, '');
  const out: number[] = [];
  let bits = 0;
  let val = 0;
  for (const c of clean) {
    const i = B32.indexOf(c);
    if (i < 0) throw new Error('illegal base32 data');
    val = (val << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((val >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Uint8Array.from(out);
}
function firstBad64(s: string): number {
  for (let i = 0; i < s.length; i++) if (!/[A-Za-z0-9+/=]/.test(s[i])) return i;
  return s.length - (s.length % 4);
}

/** Methods of time.Time reachable as fields (`{{now.Unix}}`, `{{.t.Format "2006"}}`). */
export function timeMethod(t: DateTime, name: string, args: unknown[]): unknown {
  const need = (n: number): void => {
    if (args.length !== n) fail(`wrong number of args for ${name}: want ${n} got ${args.length}`);
  };
  switch (name) {
    case 'Unix':
      need(0);
      return BigInt(Math.floor(t.ms / 1000));
    case 'UnixMilli':
      need(0);
      return BigInt(t.ms);
    case 'UnixMicro':
      need(0);
      return BigInt(t.ms) * 1000n + BigInt(Math.floor(t.nanos / 1000));
    case 'UnixNano':
      need(0);
      return BigInt(t.ms) * 1_000_000n + BigInt(t.nanos);
    case 'Year':
      need(0);
      return timeField(t, 'year');
    case 'YearDay':
      need(0);
      return timeField(t, 'yearDay');
    case 'Month':
      need(0);
      return MONTH_NAMES[fieldsOf(t).month - 1];
    case 'Day':
      need(0);
      return timeField(t, 'day');
    case 'Weekday':
      need(0);
      return DAY_NAMES[fieldsOf(t).weekday];
    case 'Hour':
      need(0);
      return timeField(t, 'hour');
    case 'Minute':
      need(0);
      return timeField(t, 'minute');
    case 'Second':
      need(0);
      return timeField(t, 'second');
    case 'Nanosecond':
      need(0);
      return timeField(t, 'nanos');
    case 'UTC':
      need(0);
      return new DateTime(t.ms, 'UTC', t.nanos);
    case 'Local':
      need(0);
      return new DateTime(t.ms, localZone(), t.nanos);
    case 'String':
      need(0);
      return formatV(t);
    case 'IsZero':
      need(0);
      return t.ms === -62135596800000 && t.nanos === 0;
    case 'Format':
      need(1);
      if (typeof args[0] !== 'string') return fail(`wrong type for value; expected string; got ${goType(args[0])}`);
      return formatLayout(t, goLayout(args[0]));
  }
  return undefined;
}

let table: Record<string, F> | undefined;

/** The function map every template sees (built once). */
export function funcMap(): Readonly<Record<string, F>> {
  return (table ??= baseFuncs());
}
