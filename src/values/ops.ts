/**
 * Operators on runtime values (docs/sql.md §6.2–§6.4): arithmetic, bitwise and comparison, with eKuiper's null rules,
 * int/float typing and error texts. Every function here is called per record: no allocation on the success path.
 */
import { DateTime, isObject, type Value } from './value.js';
import { EvalError } from './errors.js';
import { goTypeName, typedText } from './text.js';
import { defaultZone, parseAuto } from './datetime.js';

function invalidOp(a: Value, op: string, b: Value): EvalError {
  return new EvalError(`invalid operation ${typedText(a)} ${op} ${typedText(b)}`);
}

/** Arrays and objects may only be navigated; any other operator on them (as left operand) is this error. */
function containerLeft(a: Value, op: string): EvalError | undefined {
  if (a !== null && typeof a === 'object' && (Array.isArray(a) || isObject(a))) {
    return new EvalError(`${op} is an invalid operation for ${goTypeName(a)}`);
  }
  return undefined;
}

function arith(a: Value, b: Value, op: string): EvalError {
  return containerLeft(a, op) ?? invalidOp(a, op, b);
}

const DIV_ZERO = 'divided by zero';

export function add(a: Value, b: Value): Value {
  if (typeof a === 'bigint') {
    if (typeof b === 'bigint') return BigInt.asIntN(64, a + b);
    if (typeof b === 'number') return Number(a) + b;
  } else if (typeof a === 'number') {
    if (typeof b === 'number') return a + b;
    if (typeof b === 'bigint') return a + Number(b);
  }
  if (a === null || a === undefined || b === null || b === undefined) {
    const e = containerLeft(a, '+');
    if (e) throw e;
    return null;
  }
  throw arith(a, b, '+');
}

export function sub(a: Value, b: Value): Value {
  if (typeof a === 'bigint') {
    if (typeof b === 'bigint') return BigInt.asIntN(64, a - b);
    if (typeof b === 'number') return Number(a) - b;
  } else if (typeof a === 'number') {
    if (typeof b === 'number') return a - b;
    if (typeof b === 'bigint') return a - Number(b);
  }
  if (a === null || a === undefined || b === null || b === undefined) {
    const e = containerLeft(a, '-');
    if (e) throw e;
    return null;
  }
  throw arith(a, b, '-');
}

export function mul(a: Value, b: Value): Value {
  if (typeof a === 'bigint') {
    if (typeof b === 'bigint') return BigInt.asIntN(64, a * b);
    if (typeof b === 'number') return Number(a) * b;
  } else if (typeof a === 'number') {
    if (typeof b === 'number') return a * b;
    if (typeof b === 'bigint') return a * Number(b);
  }
  if (a === null || a === undefined || b === null || b === undefined) {
    const e = containerLeft(a, '*');
    if (e) throw e;
    return null;
  }
  throw arith(a, b, '*');
}

export function div(a: Value, b: Value): Value {
  if (typeof a === 'bigint') {
    if (typeof b === 'bigint') {
      if (b === 0n) throw new EvalError(DIV_ZERO);
      return BigInt.asIntN(64, a / b);
    }
    if (typeof b === 'number') {
      if (b === 0) throw new EvalError(DIV_ZERO);
      return Number(a) / b;
    }
  } else if (typeof a === 'number') {
    if (typeof b === 'number') {
      if (b === 0) throw new EvalError(DIV_ZERO);
      return a / b;
    }
    if (typeof b === 'bigint') {
      if (b === 0n) throw new EvalError(DIV_ZERO);
      return a / Number(b);
    }
  }
  if (a === null || a === undefined || b === null || b === undefined) {
    const e = containerLeft(a, '/');
    if (e) throw e;
    return null;
  }
  throw arith(a, b, '/');
}

export function mod(a: Value, b: Value): Value {
  if (typeof a === 'bigint') {
    if (typeof b === 'bigint') {
      if (b === 0n) throw new EvalError(DIV_ZERO);
      return a % b;
    }
    if (typeof b === 'number') {
      if (b === 0) throw new EvalError(DIV_ZERO);
      return Number(a) % b;
    }
  } else if (typeof a === 'number') {
    if (typeof b === 'number') {
      if (b === 0) throw new EvalError(DIV_ZERO);
      return a % b;
    }
    if (typeof b === 'bigint') {
      if (b === 0n) throw new EvalError(DIV_ZERO);
      return a % Number(b);
    }
  }
  if (a === null || a === undefined || b === null || b === undefined) {
    const e = containerLeft(a, '%');
    if (e) throw e;
    return null;
  }
  throw arith(a, b, '%');
}

/** `&`: bit AND on two ints, logical AND on two bools; a null operand gives false (docs/sql.md §6.2). */
export function bitAnd(a: Value, b: Value): Value {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a & b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a && b;
  return bitwiseOther(a, b, '&');
}

/** `|`: bit OR on two ints, logical OR on two bools; a null operand gives false. */
export function bitOr(a: Value, b: Value): Value {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a | b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a || b;
  return bitwiseOther(a, b, '|');
}

/** `^`: bit XOR on two ints, logical XOR on two bools; a null operand gives false. */
export function bitXor(a: Value, b: Value): Value {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a ^ b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a !== b;
  return bitwiseOther(a, b, '^');
}

function bitwiseOther(a: Value, b: Value, op: string): Value {
  const e = containerLeft(a, op);
  if (e) throw e;
  if (a === null || a === undefined || b === null || b === undefined) return false;
  throw invalidOp(a, op, b);
}

// ---------------------------------------------------------------------------------------------------------------
// Comparison

/** UTF-8 byte order of two JS strings (differs from UTF-16 order only for astral vs U+E000–U+FFFF). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      if (x >= 0xd800 && y >= 0xd800) {
        x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
        y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      }
      return x - y;
    }
  }
  return a.length - b.length;
}

/** Comparison result codes; `NaN` (float NaN) compares false for every operator. */
const LT = -1;
const EQ = 0;
const GT = 1;

function dtMs(d: DateTime): number {
  return d.ms;
}

function cmpDateTime(a: DateTime, b: Value, op: string): number {
  let bms: number;
  let bns = 0;
  if (b instanceof DateTime) {
    bms = dtMs(b);
    bns = b.nanos;
  } else if (typeof b === 'bigint') bms = Number(b);
  else if (typeof b === 'number') bms = Math.trunc(b);
  else if (typeof b === 'string') {
    const p = parseAuto(b, defaultZone());
    bms = p.ms;
    bns = p.nanos;
  } else throw invalidOp(a, op, b);
  if (a.ms !== bms) return a.ms < bms ? LT : GT;
  return a.nanos === bns ? EQ : a.nanos < bns ? LT : GT;
}

/**
 * Three-way comparison for `op`, or throws eKuiper's error. Nulls are handled by the callers.
 * Returns NaN when a float NaN is involved (every comparison is then false).
 */
function compare(a: Value, b: Value, op: string, ordering: boolean): number {
  switch (typeof a) {
    case 'bigint':
      if (typeof b === 'bigint') return a < b ? LT : a > b ? GT : EQ;
      if (typeof b === 'number') return b !== b ? NaN : a < b ? LT : a > b ? GT : EQ;
      break;
    case 'number':
      if (typeof b === 'number') return a < b ? LT : a > b ? GT : a === b ? EQ : NaN;
      if (typeof b === 'bigint') return a !== a ? NaN : a < b ? LT : a > b ? GT : EQ;
      break;
    case 'string':
      if (typeof b === 'string') return compareStrings(a, b);
      break;
    case 'boolean':
      if (typeof b === 'boolean' && !ordering) return a === b ? EQ : LT;
      break;
    case 'object':
      if (a instanceof DateTime) return cmpDateTime(a, b, op);
      {
        const e = containerLeft(a, op);
        if (e) throw e;
      }
      break;
  }
  throw invalidOp(a, op, b);
}

function isNull(v: Value): boolean {
  return v === null || v === undefined;
}

export function eq(a: Value, b: Value): boolean {
  if (a === b && typeof a !== 'object' && typeof a !== 'number') return a !== undefined;
  if (isNull(a) || isNull(b)) return nullCompare(a, '=');
  return compare(a, b, '=', false) === EQ;
}

export function neq(a: Value, b: Value): boolean {
  if (isNull(a) || isNull(b)) return nullCompare(a, '!=');
  const c = compare(a, b, '!=', false);
  return c === c && c !== EQ;
}

export function lt(a: Value, b: Value): boolean {
  if (isNull(a) || isNull(b)) return nullCompare(a, '<');
  return compare(a, b, '<', true) < 0;
}

export function le(a: Value, b: Value): boolean {
  if (isNull(a) || isNull(b)) return nullCompare(a, '<=');
  return compare(a, b, '<=', true) <= 0;
}

export function gt(a: Value, b: Value): boolean {
  if (isNull(a) || isNull(b)) return nullCompare(a, '>');
  return compare(a, b, '>', true) > 0;
}

export function ge(a: Value, b: Value): boolean {
  if (isNull(a) || isNull(b)) return nullCompare(a, '>=');
  return compare(a, b, '>=', true) >= 0;
}

/** A comparison with a null operand is false — unless the left operand is an array/object (always an error). */
function nullCompare(a: Value, op: string): false {
  const e = containerLeft(a, op);
  if (e) throw e;
  return false;
}

/**
 * Ordering used by ORDER BY and sorting helpers: numbers numerically, strings byte-wise, datetimes
 * chronologically, bools tie; null is not handled here. Throws `incompatible types for comparison: …` on a mix.
 */
export function compareForSort(a: Value, b: Value): number {
  if (typeof a === 'bigint' || typeof a === 'number') {
    if (typeof b === 'bigint' || typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  } else if (typeof a === 'string') {
    if (typeof b === 'string') return compareStrings(a, b);
  } else if (typeof a === 'boolean') {
    if (typeof b === 'boolean') return 0;
  } else if (a instanceof DateTime && b instanceof DateTime) {
    return a.ms !== b.ms ? a.ms - b.ms : a.nanos - b.nanos;
  }
  throw new EvalError(`incompatible types for comparison: ${typedText(a)} and ${typedText(b)}`);
}
