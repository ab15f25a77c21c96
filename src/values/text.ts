/**
 * Text forms of values (docs/sql.md §6.6): what `concat`, string functions, group keys and error messages print.
 * The forms follow Go's `fmt` `%v`, which is what eKuiper users see.
 */
import { DateTime, type Value } from './value.js';
import { formatGoTime } from './datetime.js';

/** Go's type name of a value as eKuiper prints it in error messages (`%T`). */
export function goTypeName(v: Value): string {
  if (v === null || v === undefined) return '<nil>';
  switch (typeof v) {
    case 'bigint':
      return 'int64';
    case 'number':
      return 'float64';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
  }
  if (Array.isArray(v)) return '[]interface {}';
  if (v instanceof DateTime) return 'time.Time';
  if (v instanceof Uint8Array) return '[]uint8';
  return 'map[string]interface {}';
}

/**
 * Go `%g` with the shortest round-trip digits (what `%v` prints for a float64): scientific notation with a signed,
 * at least two-digit exponent when the decimal exponent is below −4 or at least 6 (`1e+06`, `1.5e-05`).
 */
export function formatFloatG(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'NaN' : x > 0 ? '+Inf' : '-Inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const ax = Math.abs(x);
  if (ax >= 1e-4 && ax < 1e6) return String(x);
  return expForm(x.toExponential());
}

/** Rewrites JS `1.5e+6` / `1e-7` exponent notation as Go's `1.5e+06` / `1e-07`. */
function expForm(s: string): string {
  const e = s.indexOf('e');
  const sign = s[e + 1];
  const digits = s.slice(e + 2);
  return s.slice(0, e + 1) + sign + (digits.length < 2 ? '0' + digits : digits);
}

/** Go `strconv.FormatFloat(x, 'f', -1, 64)`: shortest digits, never an exponent (`1e21` → `1000000000000000000000`). */
export function formatFloatPlain(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'NaN' : x > 0 ? '+Inf' : '-Inf';
  const s = String(x);
  if (!s.includes('e')) return Object.is(x, -0) ? '-0' : s;
  // Expand the exponent form digit by digit so no precision is invented.
  const neg = s[0] === '-';
  const body = neg ? s.slice(1) : s;
  const [mant, expStr] = body.split('e');
  const exp = Number(expStr);
  const dot = mant.indexOf('.');
  const digits = dot < 0 ? mant : mant.slice(0, dot) + mant.slice(dot + 1);
  const intLen = (dot < 0 ? mant.length : dot) + exp;
  let out: string;
  if (intLen <= 0) out = '0.' + '0'.repeat(-intLen) + digits;
  else if (intLen >= digits.length) out = digits + '0'.repeat(intLen - digits.length);
  else out = digits.slice(0, intLen) + '.' + digits.slice(intLen);
  return neg ? '-' + out : out;
}

/** Text form of a value nested inside an array/map debug form (null prints as `<nil>`). */
function nestedText(v: Value): string {
  return v === null || v === undefined ? '<nil>' : textOf(v);
}

/**
 * The text form of a value: strings as is, ints decimal, floats Go `%v`, bools `true`/`false`, null as the empty
 * string, datetimes as Go's `time.Time` String, bytes/arrays/objects in Go's debug forms (`[1 a]`, `map[a:1]`).
 */
export function textOf(v: Value): string {
  if (v === null || v === undefined) return '';
  switch (typeof v) {
    case 'string':
      return v;
    case 'bigint':
      return v.toString();
    case 'number':
      return formatFloatG(v);
    case 'boolean':
      return v ? 'true' : 'false';
  }
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ' ' : '') + nestedText(v[i]);
    return s + ']';
  }
  if (v instanceof DateTime) return formatGoTime(v);
  if (v instanceof Uint8Array) return '[' + Array.prototype.join.call(v, ' ') + ']';
  const keys = Object.keys(v).sort();
  let s = 'map[';
  for (let i = 0; i < keys.length; i++) s += (i ? ' ' : '') + keys[i] + ':' + nestedText(v[keys[i]]);
  return s + ']';
}

/** Text of a value in a group or partition key: like {@link textOf} but null is `<nil>`. */
export function keyText(v: Value): string {
  return v === null || v === undefined ? '<nil>' : textOf(v);
}

/** `type(value)` as eKuiper renders an operand in error messages, e.g. `string(32)`, `int64(3)`. */
export function typedText(v: Value): string {
  return `${goTypeName(v)}(${nestedText(v)})`;
}
