/**
 * Go's `fmt` for template values: `%v` default printing (what `{{.x}}` shows), `print`/`println`/`printf` with
 * Go's verbs, flags, width, precision and its `%!verb(type=value)` error forms.
 *
 * Template values: `bigint` is a Go int, `number` a float64, `Uint8Array` a []byte, `DateTime` a time.Time,
 * arrays `[]interface{}`, plain objects `map[string]interface{}`, `null`/`undefined` nil.
 */
import { DateTime, type Value } from '../values/value.js';
import { goTypeName, textOf } from '../values/text.js';
import { formatGoTime } from '../values/datetime.js';

export function isMap(v: unknown): v is Record<string, unknown> {
  return (
    v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof DateTime)
  );
}

/** Go's `%T` of a template value: template data are Eddy values, so this is their Go type name. */
export function goType(v: unknown): string {
  return goTypeName(v as Value);
}

// ------------------------------------------------------------------------------------------------ floats

interface Digits {
  /** significant decimal digits without leading zeros ('' for zero) */
  d: string;
  /** position of the decimal point relative to the start of d (value = 0.d × 10^dp) */
  dp: number;
}

/** The exact decimal expansion of a finite, non-negative double. */
function exactDigits(x: number): Digits {
  if (x === 0) return { d: '', dp: 0 };
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, x);
  const hi = buf.getUint32(0);
  const lo = buf.getUint32(4);
  const bexp = (hi >>> 20) & 0x7ff;
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exp: number;
  if (bexp === 0) exp = -1074;
  else {
    mant |= 1n << 52n;
    exp = bexp - 1075;
  }
  let digits: string;
  let dp: number;
  if (exp >= 0) {
    digits = (mant << BigInt(exp)).toString();
    dp = digits.length;
  } else {
    digits = (mant * 5n ** BigInt(-exp)).toString();
    dp = digits.length + exp;
  }
  const stripped = digits.replace(/^0+/, '');
  dp -= digits.length - stripped.length;
  return { d: stripped.replace(/0+$/, ''), dp };
}

/** Shortest round-trip digits (what JS and Go both produce for `%v`). */
function shortestDigits(x: number): Digits {
  if (x === 0) return { d: '', dp: 0 };
  const s = x.toExponential(); // d.ddde±n, shortest
  const e = s.indexOf('e');
  const d = s.slice(0, e).replace('.', '');
  return { d: d.replace(/0+$/, ''), dp: Number(s.slice(e + 1)) + 1 };
}

/** Rounds exact digits to `n` significant digits, half to even (Go's correct rounding). */
function roundDigits(dg: Digits, n: number): Digits {
  if (n < 0) return { d: '', dp: dg.dp };
  if (dg.d.length <= n) return dg;
  const keep = dg.d.slice(0, n);
  const rest = dg.d.slice(n);
  let up: boolean;
  if (rest[0] > '5') up = true;
  else if (rest[0] < '5') up = false;
  else if (/[1-9]/.test(rest.slice(1))) up = true;
  else up = n > 0 && Number(keep[n - 1]) % 2 === 1;
  if (!up) return { d: keep.replace(/0+$/, ''), dp: dg.dp };
  if (n === 0) return { d: '1', dp: dg.dp + 1 };
  const inc = (BigInt(keep) + 1n).toString();
  if (inc.length > keep.length) return { d: inc.replace(/0+$/, ''), dp: dg.dp + 1 };
  return { d: inc.replace(/0+$/, ''), dp: dg.dp };
}

function padDigits(d: string, n: number): string {
  return d.length >= n ? d : d + '0'.repeat(n - d.length);
}

function fmtE(dg: Digits, prec: number, upper: boolean): string {
  // prec = digits after the point
  const mant = padDigits(dg.d || '0', prec + 1);
  const exp = dg.d ? dg.dp - 1 : 0;
  const ae = Math.abs(exp);
  return (
    mant[0] +
    (prec > 0 ? '.' + mant.slice(1, prec + 1) : '') +
    (upper ? 'E' : 'e') +
    (exp < 0 ? '-' : '+') +
    (ae < 10 ? '0' : '') +
    ae
  );
}

function fmtF(dg: Digits, prec: number): string {
  let intPart: string;
  let frac: string;
  if (dg.dp <= 0) {
    intPart = '0';
    frac = '0'.repeat(-dg.dp) + dg.d;
  } else if (dg.dp >= dg.d.length) {
    intPart = dg.d + '0'.repeat(dg.dp - dg.d.length);
    frac = '';
  } else {
    intPart = dg.d.slice(0, dg.dp);
    frac = dg.d.slice(dg.dp);
  }
  if (!intPart) intPart = '0';
  frac = padDigits(frac, prec).slice(0, prec);
  return prec > 0 ? intPart + '.' + frac : intPart;
}

/** Go `strconv.FormatFloat(abs(x), verb, prec, 64)` for a finite non-negative x (sign handled by caller). */
function formatFloatAbs(x: number, verb: string, prec: number): string {
  const shortest = prec < 0;
  switch (verb) {
    case 'e':
    case 'E': {
      const dg = shortest ? shortestDigits(x) : roundDigits(exactDigits(x), prec + 1);
      return fmtE(dg, shortest ? Math.max(dg.d.length - 1, 0) : prec, verb === 'E');
    }
    case 'f':
    case 'F': {
      if (shortest) {
        const dg = shortestDigits(x);
        return fmtF(dg, Math.max(dg.d.length - dg.dp, 0));
      }
      const ex = exactDigits(x);
      const dg = roundDigits(ex, ex.dp + prec);
      return fmtF(dg, prec);
    }
    default: {
      // g / G, following strconv's choice between %e and %f
      let dg: Digits;
      let p = prec;
      if (shortest) {
        dg = shortestDigits(x);
        p = dg.d.length;
      } else {
        if (p === 0) p = 1;
        dg = roundDigits(exactDigits(x), p);
      }
      const nd = dg.d.length;
      let eprec = p;
      if (eprec > nd && nd >= dg.dp) eprec = nd;
      if (shortest) eprec = 6;
      const exp = dg.dp - 1;
      if (nd && (exp < -4 || exp >= eprec)) {
        if (p > nd) p = nd;
        return fmtE(dg, Math.max(p - 1, 0), verb === 'G');
      }
      if (p > dg.dp) p = nd;
      return fmtF(dg, Math.max(p - dg.dp, 0));
    }
  }
}

interface Flags {
  plus?: boolean;
  minus?: boolean;
  sharp?: boolean;
  space?: boolean;
  zero?: boolean;
  width?: number;
  prec?: number;
}

function formatFloatVerb(x: number, verb: string, prec: number, f: Flags): string {
  let body: string;
  if (Number.isNaN(x)) body = 'NaN';
  else if (!Number.isFinite(x)) body = 'Inf';
  else body = formatFloatAbs(Math.abs(x), verb, prec);
  const neg = x < 0 || Object.is(x, -0);
  let sign = neg ? '-' : f.plus ? '+' : f.space ? ' ' : '';
  if (Number.isNaN(x)) sign = f.plus ? '+' : f.space ? ' ' : '';
  if (!Number.isFinite(x) && !Number.isNaN(x) && !neg && !f.plus && !f.space) sign = '+';
  if (!Number.isFinite(x) && !Number.isNaN(x) && !neg && !f.plus && !f.space && verb === 'v') sign = '+';
  return padNumber(sign, body, f, Number.isFinite(x));
}

function padNumber(sign: string, body: string, f: Flags, zeroOk: boolean): string {
  const w = f.width ?? 0;
  const len = sign.length + body.length;
  if (len >= w) return sign + body;
  if (f.minus) return sign + body + ' '.repeat(w - len);
  if (f.zero && zeroOk) return sign + '0'.repeat(w - len) + body;
  return ' '.repeat(w - len) + sign + body;
}

function pad(s: string, f: Flags): string {
  const w = f.width ?? 0;
  const n = [...s].length;
  if (n >= w) return s;
  if (f.minus) return s + ' '.repeat(w - n);
  return (f.zero ? '0' : ' ').repeat(w - n) + s;
}

// ------------------------------------------------------------------------------------------------ strings

function isPrintable(cp: number): boolean {
  if (cp < 0x20 || cp === 0x7f) return false;
  if (cp >= 0x80 && cp < 0xa0) return false;
  if (cp === 0xad) return false;
  return !/[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u.test(String.fromCodePoint(cp)) || cp === 0x20;
}

/** Go `strconv.Quote` (`asciiOnly` = QuoteToASCII, for `%+q`). */
export function goQuote(s: string, asciiOnly = false, quote = '"'): string {
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') {
      out += '\\' + ch;
      continue;
    }
    if (asciiOnly ? cp < 0x80 && isPrintable(cp) : isPrintable(cp)) {
      out += ch;
      continue;
    }
    switch (ch) {
      case '\x07':
        out += '\\a';
        break;
      case '\b':
        out += '\\b';
        break;
      case '\f':
        out += '\\f';
        break;
      case '\n':
        out += '\\n';
        break;
      case '\r':
        out += '\\r';
        break;
      case '\t':
        out += '\\t';
        break;
      case '\v':
        out += '\\v';
        break;
      default:
        if (cp < 0x20 || cp === 0x7f) out += '\\x' + cp.toString(16).padStart(2, '0');
        else if (cp < 0x10000) out += '\\u' + cp.toString(16).padStart(4, '0');
        else out += '\\U' + cp.toString(16).padStart(8, '0');
    }
  }
  return out + quote;
}

const utf8 = new TextEncoder();
const utf8d = new TextDecoder();

export function utf8Bytes(s: string): Uint8Array {
  return utf8.encode(s);
}

export function bytesText(b: Uint8Array): string {
  return utf8d.decode(b);
}

// ------------------------------------------------------------------------------------------------ %v

/** Go `%v` of a value: the values' own text form, except that nil prints `<nil>` (as it does nested). */
export function formatV(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'function' || typeof v === 'symbol') return String(v);
  return textOf(v as Value);
}

/** Byte-wise (UTF-8) order of Go's sorted map keys; equals UTF-16 order outside surrogate ranges. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ------------------------------------------------------------------------------------------------ Sprint

function isString(v: unknown): boolean {
  return typeof v === 'string';
}

/** `fmt.Sprint`: spaces between operands when neither side is a string. */
export function sprint(args: readonly unknown[]): string {
  let out = '';
  for (let i = 0; i < args.length; i++) {
    if (i > 0 && !isString(args[i]) && !isString(args[i - 1])) out += ' ';
    out += formatV(args[i]);
  }
  return out;
}

/** `fmt.Sprintln`: always spaces, newline at the end. */
export function sprintln(args: readonly unknown[]): string {
  return args.map(formatV).join(' ') + '\n';
}

// ------------------------------------------------------------------------------------------------ Sprintf

function badVerb(verb: string, v: unknown): string {
  if (v === null || v === undefined) return `%!${verb}(<nil>)`;
  return `%!${verb}(${goType(v)}=${formatV(v)})`;
}

function fmtInteger(n: bigint, verb: string, f: Flags): string {
  const neg = n < 0n;
  let a = neg ? -n : n;
  let body: string;
  let prefix = '';
  switch (verb) {
    case 'd':
    case 'v':
      body = a.toString();
      break;
    case 'b':
      body = a.toString(2);
      if (f.sharp) prefix = '0b';
      break;
    case 'o':
      body = a.toString(8);
      if (f.sharp && body[0] !== '0') prefix = '0';
      break;
    case 'O':
      body = a.toString(8);
      prefix = '0o';
      break;
    case 'x':
      body = a.toString(16);
      if (f.sharp) prefix = '0x';
      break;
    case 'X':
      body = a.toString(16).toUpperCase();
      if (f.sharp) prefix = '0X';
      break;
    case 'c':
      return pad(String.fromCodePoint(Number(a)), f);
    case 'q':
      return pad(goQuote(String.fromCodePoint(Number(a)), f.plus, "'"), f);
    case 'U': {
      a = neg ? -a : a;
      const h = a.toString(16).toUpperCase().padStart(4, '0');
      return pad('U+' + h + (f.sharp ? " '" + String.fromCodePoint(Number(a)) + "'" : ''), f);
    }
    default:
      return badVerb(verb, n);
  }
  if (f.prec !== undefined) {
    if (f.prec === 0 && a === 0n) body = '';
    body = body.padStart(f.prec, '0');
  }
  const sign = neg ? '-' : f.plus ? '+' : f.space ? ' ' : '';
  return padNumber(sign, prefix + body, f, f.prec === undefined);
}

function hexOf(bytes: Uint8Array, upper: boolean, f: Flags): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    if (f.space && i > 0) out += ' ';
    if (f.sharp && (f.space || i === 0)) out += upper ? '0X' : '0x';
    const h = bytes[i].toString(16).padStart(2, '0');
    out += upper ? h.toUpperCase() : h;
  }
  return out;
}

function fmtString(s: string, verb: string, f: Flags): string {
  if (f.prec !== undefined) s = [...s].slice(0, f.prec).join('');
  switch (verb) {
    case 'v':
    case 's':
      return pad(s, f);
    case 'q':
      if (f.sharp && !s.includes('`') && ![...s].some((c) => c !== '\t' && !isPrintable(c.codePointAt(0)!)))
        return pad('`' + s + '`', f);
      return pad(goQuote(s, f.plus), f);
    case 'x':
    case 'X':
      return pad(hexOf(utf8Bytes(s), verb === 'X', f), f);
    default:
      return badVerb(verb, s);
  }
}

function fmtValue(v: unknown, verb: string, f: Flags, depth: number): string {
  if (verb === 'T') return pad(goType(v), f);
  if (v === null || v === undefined) {
    if (verb === 'v') return pad('<nil>', f);
    return badVerb(verb, v);
  }
  switch (typeof v) {
    case 'boolean':
      if (verb === 'v' || verb === 't') return pad(v ? 'true' : 'false', f);
      return badVerb(verb, v);
    case 'bigint':
      return fmtInteger(v, verb, f);
    case 'number':
      switch (verb) {
        case 'v':
          return formatFloatVerb(v, 'g', f.prec ?? -1, f);
        case 'e':
        case 'E':
        case 'f':
        case 'F':
          return formatFloatVerb(v, verb, f.prec ?? 6, f);
        case 'g':
        case 'G':
          return formatFloatVerb(v, verb, f.prec ?? -1, f);
        default:
          return badVerb(verb, v);
      }
    case 'string':
      return fmtString(v, verb, f);
  }
  if (v instanceof DateTime) {
    if (verb === 'v' || verb === 's') return fmtString(formatGoTime(v), 's', f);
    if (verb === 'q' || verb === 'x' || verb === 'X') return fmtString(formatGoTime(v), verb, f);
    return badVerb(verb, v);
  }
  if (v instanceof Uint8Array) {
    if (verb === 's') return fmtString(bytesText(v), 's', f);
    if (verb === 'q') return fmtString(bytesText(v), 'q', f);
    if (verb === 'x' || verb === 'X')
      return pad(hexOf(f.prec !== undefined ? v.subarray(0, f.prec) : v, verb === 'X', f), f);
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ' ' : '') + fmtInteger(BigInt(v[i]), verb, { ...f, width: undefined });
    return s + ']';
  }
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ' ' : '') + fmtValue(v[i], verb, f, depth + 1);
    return s + ']';
  }
  if (isMap(v)) {
    const keys = Object.keys(v).sort(compareKeys);
    let s = 'map[';
    for (let i = 0; i < keys.length; i++)
      s += (i ? ' ' : '') + fmtValue(keys[i], verb, f, depth + 1) + ':' + fmtValue(v[keys[i]], verb, f, depth + 1);
    return s + ']';
  }
  return badVerb(verb, v);
}

/** Go `fmt.Sprintf` over template values. */
export function sprintf(format: string, args: readonly unknown[]): string {
  let out = '';
  let argNum = 0;
  let reordered = false;
  let goodArgNum: boolean;
  const n = format.length;
  let i = 0;
  const argIndex = (): void => {
    // [n] explicit argument index
    if (format[i] !== '[') return;
    reordered = true;
    const close = format.indexOf(']', i);
    const num = close > i ? Number(format.slice(i + 1, close)) : NaN;
    if (close < 0 || !Number.isInteger(num) || num < 1 || num > args.length) {
      goodArgNum = false;
      i = close < 0 ? n : close + 1;
      return;
    }
    argNum = num - 1;
    i = close + 1;
  };
  while (i < n) {
    const pct = format.indexOf('%', i);
    if (pct < 0) {
      out += format.slice(i);
      break;
    }
    out += format.slice(i, pct);
    i = pct + 1;
    const f: Flags = {};
    // flags
    for (; i < n; i++) {
      const c = format[i];
      if (c === '+') f.plus = true;
      else if (c === '-') f.minus = true;
      else if (c === '#') f.sharp = true;
      else if (c === ' ') f.space = true;
      else if (c === '0') f.zero = !f.minus;
      else break;
    }
    goodArgNum = true;
    argIndex();
    // width
    if (format[i] === '*') {
      i++;
      const w = args[argNum++];
      if (typeof w === 'bigint') {
        f.width = Number(w);
        if (f.width < 0) {
          f.minus = true;
          f.width = -f.width;
        }
      } else out += '%!(BADWIDTH)';
    } else {
      const m = /^[0-9]+/.exec(format.slice(i));
      if (m) {
        f.width = Number(m[0]);
        i += m[0].length;
      }
    }
    // precision
    if (format[i] === '.') {
      i++;
      argIndex();
      if (format[i] === '*') {
        i++;
        const p = args[argNum++];
        if (typeof p === 'bigint' && p >= 0n) f.prec = Number(p);
        else out += '%!(BADPREC)';
      } else {
        const m = /^[0-9]+/.exec(format.slice(i));
        f.prec = m ? Number(m[0]) : 0;
        if (m) i += m[0].length;
      }
    }
    argIndex();
    if (i >= n) {
      out += '%!(NOVERB)';
      break;
    }
    const verb = String.fromCodePoint(format.codePointAt(i)!);
    i += verb.length;
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (!goodArgNum) {
      out += `%!${verb}(BADINDEX)`;
      continue;
    }
    if (argNum >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    if (verb === 'w') {
      out += badVerb(verb, args[argNum++]);
      continue;
    }
    out += fmtValue(args[argNum++], verb, f, 0);
  }
  if (!reordered && argNum < args.length) {
    out += '%!(EXTRA ';
    out += args
      .slice(argNum)
      .map((a) => (a === null || a === undefined ? '<nil>' : `${goType(a)}=${formatV(a)}`))
      .join(', ');
    out += ')';
  }
  return out;
}
