/** Array functions (docs/sql.md §7.6). Element equality is strict: same runtime type and value. */
import {
  compareStrings,
  DateTime,
  EvalError,
  isObject,
  textOf,
  truncToInt,
  typedText,
  type Value,
  type ValueObject,
} from '../values/index.js';
import { bindScalar, type FunctionDef } from './registry.js';
import { scalar } from './define.js';
import { hashKey, strictEqual } from './equality.js';
import { atLeast, between, exactly } from './validate.js';

function arrayArg(v: Value): Value[] {
  if (!Array.isArray(v)) throw new EvalError('first argument should be array of interface{}');
  return v;
}

function secondArray(v: Value): Value[] {
  if (!Array.isArray(v)) throw new EvalError('second argument should be array of interface{}');
  return v;
}

function isNull(v: Value): boolean {
  return v === null || v === undefined;
}

function indexOf(arr: Value[], v: Value): number {
  for (let i = 0; i < arr.length; i++) if (strictEqual(arr[i], v)) return i;
  return -1;
}

/** A counted argument: an int, or a float without fraction. `which` names it in the error. */
/** array_max/array_min: the first non-null element decides the kind (docs/sql.md §7.6). */
function extreme(arr: Value[], wantMax: boolean): Value {
  let kind: 'int' | 'float' | 'string' | undefined;
  let best: Value = null;
  for (const v of arr) {
    if (isNull(v)) continue;
    if (kind === undefined) {
      if (typeof v === 'bigint') kind = 'int';
      else if (typeof v === 'number') kind = 'float';
      else if (typeof v === 'string') kind = 'string';
      else throw new EvalError(`requires int64, float64 or string but found ${typedText(v)}`);
    }
    let x: Value;
    if (kind === 'int') {
      if (typeof v === 'bigint') x = v;
      else if (typeof v === 'number') x = truncToInt(v);
      else throw new EvalError(`requires int64 but found ${typedText(v)}`);
    } else if (kind === 'float') {
      if (typeof v !== 'number') throw new EvalError(`requires float64 but found ${typedText(v)}`);
      x = v;
    } else {
      if (typeof v !== 'string') throw new EvalError(`requires string but found ${typedText(v)}`);
      x = v;
    }
    if (best === null) best = x;
    else if (kind === 'string') {
      const c = compareStrings(x as string, best as string);
      if (wantMax ? c > 0 : c < 0) best = x;
    } else if (wantMax ? (x as number) > (best as number) : (x as number) < (best as number)) best = x;
  }
  return best;
}

function distinctInto(out: Value[], seen: Set<string>, arr: Value[]): void {
  for (const v of arr) {
    const k = hashKey(v);
    if (!seen.has(k)) {
      seen.add(k);
      out.push(v);
    }
  }
}

function shuffle(arr: Value[]): Value[] {
  const out = arr.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    const t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  return out;
}

/** `lookup` resolves the scalar function named by `array_map`'s first argument (built-ins and plugins alike). */
export function arrayFunctions(lookup: (name: string) => FunctionDef | undefined): FunctionDef[] {
  const mapCache = new Map<string, ReturnType<typeof bindScalar>>();
  return [
    scalar('array_create', 'none', undefined, (a) => {
      const out: Value[] = [];
      for (const v of a) if (!isNull(v)) out.push(v);
      return out.length ? out : null;
    }),
    scalar('array_position', 'none', exactly(2), (a) => (isNull(a[0]) ? -1n : BigInt(indexOf(arrayArg(a[0]), a[1])))),
    scalar('array_last_position', 'none', exactly(2), (a) => {
      if (isNull(a[0])) return -1n;
      const arr = arrayArg(a[0]);
      for (let i = arr.length - 1; i >= 0; i--) if (strictEqual(arr[i], a[1])) return BigInt(i);
      return -1n;
    }),
    scalar('element_at', 'N', exactly(2), (a) => {
      const x = a[0];
      if (Array.isArray(x)) {
        const k = a[1];
        if (typeof k !== 'bigint' && !(typeof k === 'number' && Number.isInteger(k))) {
          throw new EvalError('second argument should be int');
        }
        let i = Number(k);
        if (i < 0) i += x.length;
        if (i < 0 || i >= x.length) throw new EvalError('index out of range');
        return x[i];
      }
      if (isObject(x)) {
        if (typeof a[1] !== 'string') throw new EvalError('second argument should be string');
        const v = x[a[1]];
        return v === undefined ? null : v;
      }
      throw new EvalError('first argument should be []interface{} or map[string]interface{}');
    }),
    scalar('array_contains', 'none', exactly(2), (a) => (isNull(a[0]) ? false : indexOf(arrayArg(a[0]), a[1]) >= 0)),
    scalar('array_contains_any', 'F', exactly(2), (a) => {
      const x = arrayArg(a[0]);
      const y = secondArray(a[1]);
      for (const v of y) if (indexOf(x, v) >= 0) return true;
      return false;
    }),
    scalar('array_remove', 'none', exactly(2), (a) => {
      if (isNull(a[0])) return null;
      const out: Value[] = [];
      for (const v of arrayArg(a[0])) if (!strictEqual(v, a[1])) out.push(v);
      return out;
    }),
    scalar('array_intersect', 'N', exactly(2), (a) => {
      const x = arrayArg(a[0]);
      const y = secondArray(a[1]);
      const inX = new Set<string>();
      for (const v of x) inX.add(hashKey(v));
      const seen = new Set<string>();
      const out: Value[] = [];
      for (const v of y) {
        const k = hashKey(v);
        if (inX.has(k) && !seen.has(k)) {
          seen.add(k);
          out.push(v);
        }
      }
      return out;
    }),
    scalar('array_union', 'none', exactly(2), (a) => {
      const x = isNull(a[0]) ? [] : arrayArg(a[0]);
      const y = isNull(a[1]) ? [] : secondArray(a[1]);
      const out: Value[] = [];
      const seen = new Set<string>();
      distinctInto(out, seen, x);
      distinctInto(out, seen, y);
      return out;
    }),
    scalar('array_except', 'none', exactly(2), (a) => {
      if (isNull(a[0])) return null;
      const x = arrayArg(a[0]);
      const y = isNull(a[1]) ? [] : secondArray(a[1]);
      const seen = new Set<string>();
      for (const v of y) seen.add(hashKey(v));
      const out: Value[] = [];
      distinctInto(out, seen, x);
      return out;
    }),
    scalar('array_max', 'N', exactly(1), (a) => extreme(arrayArg(a[0]), true)),
    scalar('array_min', 'N', exactly(1), (a) => extreme(arrayArg(a[0]), false)),
    scalar('array_cardinality', 'Z', exactly(1), (a) => {
      let n = 0;
      for (const v of arrayArg(a[0])) if (!isNull(v)) n++;
      return BigInt(n);
    }),
    scalar('array_flatten', 'N', exactly(1), (a) => {
      const out: Value[] = [];
      for (const v of arrayArg(a[0])) {
        if (Array.isArray(v)) for (const x of v) out.push(x);
        else out.push(v);
      }
      return out;
    }),
    scalar('array_distinct', 'N', exactly(1), (a) => {
      const out: Value[] = [];
      const seen = new Set<string>();
      for (const v of arrayArg(a[0])) {
        if (v !== null && typeof v === 'object' && !(v instanceof DateTime)) {
          out.push(v); // arrays, objects and bytes are never de-duplicated
          continue;
        }
        const k = hashKey(v);
        if (!seen.has(k)) {
          seen.add(k);
          out.push(v);
        }
      }
      return out;
    }),
    scalar('array_map', 'N', exactly(2), (a, ctx) => {
      if (typeof a[0] !== 'string') throw new EvalError('first argument should be string');
      const name = a[0].toLowerCase();
      let call = mapCache.get(name);
      if (!call) {
        const def = lookup(name);
        if (!def) throw new EvalError(`unknown built-in function: ${a[0]}.`);
        if (def.kind !== 'scalar') throw new EvalError('first argument should be a scalar function.');
        if (def.validate?.([{ kind: 'other' }]) !== undefined) throw new EvalError(`validate ${a[0]} arguments failed`);
        call = bindScalar(def);
        mapCache.set(name, call);
      }
      const arr = arrayArg(a[1]);
      const out: Value[] = new Array(arr.length);
      const one: Value[] = [null];
      for (let i = 0; i < arr.length; i++) {
        one[0] = arr[i];
        out[i] = call(one, ctx);
      }
      return out;
    }),
    scalar('array_join', 'N', between(2, 3), (a) => {
      const arr = arrayArg(a[0]);
      if (typeof a[1] !== 'string') throw new EvalError('second argument should be string');
      const sep = a[1];
      let repl: string | undefined;
      if (a.length > 2) {
        if (typeof a[2] !== 'string') throw new EvalError('third argument should be string');
        if (a[2] !== '') repl = a[2];
      }
      const parts: string[] = [];
      for (const v of arr) {
        if (isNull(v)) {
          if (repl !== undefined) parts.push(repl);
        } else parts.push(textOf(v));
      }
      return parts.join(sep);
    }),
    scalar('array_shuffle', 'N', exactly(1), (a) => shuffle(arrayArg(a[0]))),
    scalar('array_sort', 'N', exactly(1), (a) => {
      const arr = arrayArg(a[0]);
      const keyed = arr.map((v) => ({ v, k: textOf(v) }));
      keyed.sort((x, y) => compareStrings(x.k, y.k));
      return keyed.map((x) => x.v);
    }),
    scalar('array_concat', 'none', atLeast(1), (a) => {
      let out: Value[] | null = null;
      for (const v of a) {
        if (isNull(v)) continue;
        if (!Array.isArray(v)) throw new EvalError('array elements should be array');
        out ??= [];
        for (const x of v) out.push(x);
      }
      return out;
    }),
    // ⚠ eKuiper quirk (docs/sql.md §7.6): repeat and sequence accept only a native machine int, which no SQL value is
    // (integer literals and bigint columns are 64-bit ints, JSON numbers floats), so every call that passes the null
    // pre-check fails with the reference's message: `repeat` checks its count, `sequence` its start first.
    scalar('repeat', 'N', exactly(2), () => {
      throw new EvalError('second argument should be int');
    }),
    scalar(
      'sequence',
      'N',
      (a) => (a.length === 2 || a.length === 3 ? undefined : `Expect two or three arguments but found ${a.length}.`),
      () => {
        throw new EvalError('first argument should be int');
      },
    ),
    scalar('kvpair_array_to_obj', 'N', exactly(1), (a) => {
      const out: ValueObject = {};
      for (const item of arrayArg(a[0])) {
        if (!isObject(item)) throw new EvalError('array item should be key-value pair');
        const keys = Object.keys(item);
        if (keys.length !== 2 || !('key' in item) || !('value' in item) || typeof item.key !== 'string') {
          throw new EvalError('array item should be key-value pair');
        }
        out[item.key] = item.value;
      }
      return out;
    }),
  ];
}
