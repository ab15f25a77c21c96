/**
 * Explicit conversions (docs/sql.md §6.6, §7.3 `cast` table) and the coercions functions apply to their arguments.
 * Every failure is an EvalError with eKuiper's text.
 */
import { DateTime, type Value } from './value.js';
import { EvalError } from './errors.js';
import { formatFloatPlain, textOf, typedText } from './text.js';
import { defaultZone, parseAuto } from './datetime.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function cannot(v: Value, target: string): EvalError {
  return new EvalError(`cannot convert ${typedText(v)} to ${target}`);
}

function digitsValid(s: string, base: number): boolean {
  if (s.length === 0) return false;
  let prevUnderscore = true; // an underscore may only sit between digits
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '_') {
      if (prevUnderscore) return false;
      prevUnderscore = true;
      continue;
    }
    const d = parseInt(c, 36);
    if (!(d >= 0 && d < base)) return false;
    prevUnderscore = false;
  }
  return !prevUnderscore;
}

/**
 * Go's `strconv.ParseInt(s, 0, 64)`: optional sign, `0x`/`0o`/`0b` prefixes, a leading `0` meaning octal,
 * `_` separators. Returns undefined for bad syntax or out-of-range values.
 */
export function parseGoInt(s: string): bigint | undefined {
  let t = s;
  let neg = false;
  if (t[0] === '+' || t[0] === '-') {
    neg = t[0] === '-';
    t = t.slice(1);
  }
  let base = 10;
  let prefix = '';
  if (t.length > 1 && t[0] === '0') {
    const p = t[1].toLowerCase();
    if (p === 'x') {
      base = 16;
      prefix = '0x';
      t = t.slice(2);
    } else if (p === 'o') {
      base = 8;
      prefix = '0o';
      t = t.slice(2);
    } else if (p === 'b') {
      base = 2;
      prefix = '0b';
      t = t.slice(2);
    } else {
      base = 8;
      prefix = '0o';
      t = t.slice(1);
    }
    if (t[0] === '_') t = t.slice(1);
  }
  if (!digitsValid(t, base)) return undefined;
  let n = BigInt(prefix + t.replaceAll('_', ''));
  if (neg) n = -n;
  if (n < INT64_MIN || n > INT64_MAX) return undefined;
  return n;
}

const FLOAT_RE = /^[+-]?(?:(?:\d+(?:_\d+)*)?(?:\.(?:\d+(?:_\d+)*)?)?(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i;

/** Go's `strconv.ParseFloat(s, 64)` (decimal and scientific forms, `inf`, `nan`); undefined on bad syntax. */
export function parseGoFloat(s: string): number | undefined {
  if (!FLOAT_RE.test(s) || !/[\dinf]/i.test(s) || /^[+-]?\.?(?:[eE]|$)/.test(s)) return undefined;
  const lower = s.toLowerCase().replace(/^[+]/, '');
  if (lower.endsWith('inf') || lower.endsWith('infinity')) return lower.startsWith('-') ? -Infinity : Infinity;
  if (lower.endsWith('nan')) return NaN;
  const x = Number(s.replaceAll('_', ''));
  return Number.isNaN(x) ? undefined : x;
}

const BOOL_TEXT: Record<string, boolean> = {
  '1': true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  '0': false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

/** Float to int64 by truncation toward zero (Go's conversion), saturating like amd64 for out-of-range values. */
export function truncToInt(x: number): bigint {
  if (Number.isNaN(x)) return INT64_MIN;
  if (x >= 9.223372036854776e18 || x < -9.223372036854776e18) return INT64_MIN;
  return BigInt(Math.trunc(x));
}

/** `cast(x, "bigint")` source rules. */
export function castToInt(v: Value): bigint {
  switch (typeof v) {
    case 'bigint':
      return v;
    case 'number':
      return truncToInt(v);
    case 'boolean':
      return v ? 1n : 0n;
    case 'string': {
      const n = parseGoInt(v);
      if (n !== undefined) return n;
      break;
    }
  }
  throw cannot(v, 'int64');
}

/** `cast(x, "float")` source rules. */
export function castToFloat(v: Value): number {
  switch (typeof v) {
    case 'number':
      return v;
    case 'bigint':
      return Number(v);
    case 'boolean':
      return v ? 1 : 0;
    case 'string': {
      const x = parseGoFloat(v);
      if (x !== undefined) return x;
      break;
    }
  }
  throw cannot(v, 'float64');
}

const utf8 = new TextDecoder();
const utf8Enc = new TextEncoder();

export function utf8Bytes(s: string): Uint8Array {
  return utf8Enc.encode(s);
}

export function utf8Text(b: Uint8Array): string {
  return utf8.decode(b);
}

/** `cast(x, "string")` source rules (floats never use an exponent here). */
export function castToString(v: Value): string {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
      return formatFloatPlain(v);
    case 'bigint':
      return v.toString();
    case 'boolean':
      return v ? 'true' : 'false';
  }
  if (v instanceof Uint8Array) return utf8Text(v);
  return textOf(v);
}

/** `cast(x, "boolean")` source rules; ⚠ ints are rejected like the reference does. */
export function castToBool(v: Value): boolean {
  switch (typeof v) {
    case 'boolean':
      return v;
    case 'number':
      return v !== 0;
    case 'string': {
      const b = BOOL_TEXT[v];
      if (b !== undefined) return b;
      break;
    }
  }
  throw cannot(v, 'bool');
}

/** `cast(x, "bytea")` source rules: bytes as is, strings base64-decoded. */
export function castToBytes(v: Value): Uint8Array {
  if (v instanceof Uint8Array) return v;
  if (typeof v === 'string') {
    const b = decodeBase64Strict(v);
    if (b) return b;
    throw new EvalError(`illegal base64 data at input byte ${badBase64Offset(v)}`);
  }
  throw new EvalError(`cannot convert ${typeof v === 'bigint' ? 'int' : goTypeNameShort(v)}(${textOf(v)}) to bytea`);
}

function goTypeNameShort(v: Value): string {
  return typedText(v).replace(/\(.*$/s, '');
}

const B64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Standard base64 with padding, strictly (Go's `StdEncoding`); undefined when invalid. */
export function decodeBase64Strict(s: string): Uint8Array | undefined {
  const t = s.replace(/[\r\n]/g, '');
  if (!B64_RE.test(t)) return undefined;
  return new Uint8Array(Buffer.from(t, 'base64'));
}

function badBase64Offset(s: string): number {
  for (let i = 0; i < s.length; i++) {
    if (!/[A-Za-z0-9+/=\r\n]/.test(s[i])) return i;
  }
  return Math.max(0, s.length - (s.length % 4 || 4));
}

/**
 * A datetime argument (docs/sql.md §7.8): a datetime, an int/float epoch-ms value, or a string parsed with the auto layouts
 * in `zone`. Other kinds → `unsupported type to convert to timestamp <v>`.
 */
export function toDateTime(v: Value, zone: string = defaultZone()): DateTime {
  if (v instanceof DateTime) return v;
  switch (typeof v) {
    case 'bigint':
      return new DateTime(Number(v), zone);
    case 'number':
      return new DateTime(Math.trunc(v), zone);
    case 'string':
      return parseAuto(v, zone);
  }
  throw new EvalError(
    `unsupported type to convert to timestamp ${v === null || v === undefined ? '<nil>' : textOf(v)}`,
  );
}

export const CAST_TYPES = ['bigint', 'float', 'string', 'boolean', 'datetime', 'bytea'] as const;

/** `cast(v, type)` (docs/sql.md §7.3). `zone` is used to read datetimes from numbers and strings. */
export function cast(v: Value, type: string, zone: string = defaultZone()): Value {
  try {
    switch (type) {
      case 'bigint':
        return castToInt(v);
      case 'float':
        return castToFloat(v);
      case 'string':
        return castToString(v);
      case 'boolean':
        return castToBool(v);
      case 'datetime':
        return toDateTime(v, zone);
      case 'bytea':
        return castToBytes(v);
    }
  } catch (e) {
    if (e instanceof EvalError && (type === 'bigint' || type === 'float' || type === 'string' || type === 'boolean')) {
      throw new EvalError(`not supported type conversion, got error ${e.message}`);
    }
    throw e;
  }
  throw new EvalError('unknow type, only support bigint, float, string, boolean and datetime');
}

/** Numeric coercion used by math functions: ints/floats, else `cannot convert string(…) to float64`. */
export function toFloat64(v: Value): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  throw cannot(v, 'float64');
}

/** Integer coercion used by functions: ints, floats truncated, else `cannot convert string(…) to int`. */
export function toInt64(v: Value, target = 'int'): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return truncToInt(v);
  throw cannot(v, target);
}
