/**
 * Strict value equality used by array functions (docs/sql.md §7.6: same runtime type and value, int 1 ≠ float 1.0) and the
 * deep, type-sensitive equality of analytic functions (docs/sql.md §7.10).
 */
import { DateTime, EvalError, goTypeName, isObject, type Value } from '../values/index.js';

function uncomparable(v: Value): boolean {
  return v !== null && typeof v === 'object' && !(v instanceof DateTime);
}

/** `==` between two values of any kind: false for different kinds; an error for two arrays/objects/bytes. */
export function strictEqual(a: Value, b: Value): boolean {
  if (a === undefined) a = null;
  if (b === undefined) b = null;
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null) return false;
  if (a instanceof DateTime) return b instanceof DateTime && a.ms === b.ms && a.nanos === b.nanos && a.zone === b.zone;
  if (uncomparable(a) && uncomparable(b) && goTypeName(a) === goTypeName(b)) {
    throw new EvalError(`runtime error: comparing uncomparable type ${goTypeName(a)}`);
  }
  return false;
}

/** A Map key standing for a value under strict equality; arrays/objects/bytes cannot be keys (error). */
export function hashKey(v: Value): string {
  if (v === null || v === undefined) return 'n';
  switch (typeof v) {
    case 'bigint':
      return 'i' + v;
    case 'number':
      return 'f' + v;
    case 'string':
      return 's' + v;
    case 'boolean':
      return v ? 'bt' : 'bf';
  }
  if (v instanceof DateTime) return 'd' + v.ms + ':' + v.nanos + ':' + v.zone;
  throw new EvalError(`runtime error: hash of unhashable type ${goTypeName(v)}`);
}

/** Deep equality, type-sensitive (int 1 ≠ float 1.0); null equals undefined. */
export function deepEqual(a: Value, b: Value): boolean {
  if (a === undefined) a = null;
  if (b === undefined) b = null;
  if (a === b) return true;
  if (a === null || b === null || typeof a !== typeof b) return false;
  if (typeof a === 'number') return a !== a && (b as number) !== (b as number);
  if (typeof a !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (a instanceof DateTime) return b instanceof DateTime && a.ms === b.ms && a.nanos === b.nanos;
  if (a instanceof Uint8Array) {
    if (!(b instanceof Uint8Array) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }
  if (!isObject(a) || !isObject(b)) return false;
  let n = 0;
  for (const k in a) {
    if (a[k] === undefined) continue;
    n++;
    if (!deepEqual(a[k], b[k])) return false;
  }
  for (const k in b) if (b[k] !== undefined) n--;
  return n === 0;
}
