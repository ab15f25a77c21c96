/**
 * Analytic functions (docs/sql.md §7.10), the multi-column function `changed_cols` (docs/sql.md §7.12), the set-returning
 * `unnest` (docs/sql.md §7.11) and the window function `row_number` (docs/sql.md §7.13). Analytic state lives per call site and
 * partition; the compiler creates it with `createState()` and passes `valid = false` when OVER (WHEN …) fails.
 */
import { EvalError, type Value, type ValueObject } from '../values/index.js';
import type { FunctionDef } from './registry.js';
import { analytic, multiCol, scalar } from './define.js';
import { deepEqual } from './equality.js';
import {
  all,
  atLeast,
  between,
  BOOL,
  boolArg,
  exactly,
  expect,
  INT,
  rejects,
  stringArg,
  type Validator,
} from './validate.js';

function isNull(v: Value): boolean {
  return v === null || v === undefined;
}

const lagValidate: Validator = all(
  (a) => (a.length >= 1 && a.length <= 4 ? undefined : `expect one two or three args but got ${a.length}`),
  (a) => {
    if (a.length >= 2) {
      const k = a[1];
      if (
        k.kind === 'field' ||
        k.kind === 'float' ||
        k.kind === 'string' ||
        k.kind === 'bool' ||
        k.kind === 'boolExpr'
      ) {
        return expect(INT, 1);
      }
      if (k.kind === 'int' && (k.literal as bigint) < 0n) return 'the index should not be a nagtive integer';
    }
    return undefined;
  },
  rejects(3, BOOL, ['int', 'float', 'string', 'unit']),
);

interface LagState {
  buf: Value[];
}

interface Latest {
  has: boolean;
  v: Value;
}

interface Changed {
  has: boolean;
  v: Value;
}

interface Acc {
  sum: number;
  count: number;
  min: number;
  max: number;
  seen: boolean;
}

function accNumber(v: Value): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  throw new EvalError('the value should be number');
}

function newAcc(): Acc {
  return { sum: 0, count: 0, min: 0, max: 0, seen: false };
}

export const analyticFunctions: FunctionDef[] = [
  analytic<LagState>(
    'lag',
    lagValidate,
    () => ({ buf: [] }),
    (s, a, _ctx, valid) => {
      let k = 1;
      if (a.length >= 2 && !isNull(a[1])) {
        const kv = a[1];
        if (typeof kv === 'bigint') k = Number(kv);
        else if (typeof kv === 'number' && Number.isInteger(kv)) k = kv;
        else throw new EvalError('the second parameter should be int');
      }
      const x = a[0] === undefined ? null : a[0];
      const dflt = a.length === 3 ? (a[2] === undefined ? null : a[2]) : null;
      const ignoreNull = a.length === 4 && a[3] === true;
      let result: Value;
      if (k <= 0) result = x;
      else result = s.buf.length >= k ? s.buf[s.buf.length - k] : dflt;
      if (valid && !(ignoreNull && x === null) && k > 0) {
        s.buf.push(x);
        if (s.buf.length > k) s.buf.shift();
      }
      return result;
    },
  ),
  analytic<Latest>(
    'latest',
    between(1, 2),
    () => ({ has: false, v: null }),
    (s, a, _ctx, valid) => {
      const x = a[0];
      if (valid && !isNull(x)) {
        s.has = true;
        s.v = x;
        return x;
      }
      if (s.has) return s.v;
      return a.length > 1 && a[1] !== undefined ? a[1] : null;
    },
  ),
  analytic<Changed>(
    'changed_col',
    all(exactly(2), boolArg(0)),
    () => ({ has: false, v: null }),
    (s, a, _ctx, valid) => {
      if (!valid) return null;
      const x = a[1] === undefined ? null : a[1];
      if (x === null && a[0] === true) return null;
      if (s.has && deepEqual(s.v, x)) return null;
      s.has = true;
      s.v = x;
      return x;
    },
  ),
  analytic<{ has: boolean[]; v: Value[] }>(
    'had_changed',
    all(atLeast(2), boolArg(0)),
    () => ({ has: [], v: [] }),
    (s, a, _ctx, valid) => {
      if (!valid) return false;
      const ignoreNull = a[0] === true;
      let changed = false;
      for (let i = 1; i < a.length; i++) {
        const x = a[i] === undefined ? null : a[i];
        if (x === null && ignoreNull) continue;
        if (!s.has[i] || !deepEqual(s.v[i], x)) {
          s.has[i] = true;
          s.v[i] = x;
          changed = true;
        }
      }
      return changed;
    },
  ),
  analytic<Acc>('acc_sum', exactly(1), newAcc, (s, a, _ctx, valid) => {
    if (!valid) return s.sum;
    s.sum += accNumber(a[0]);
    return s.sum;
  }),
  analytic<Acc>('acc_min', exactly(1), newAcc, (s, a, _ctx, valid) => {
    if (!valid) return s.min;
    const x = accNumber(a[0]);
    if (!s.seen || x < s.min) s.min = x;
    s.seen = true;
    return s.min;
  }),
  analytic<Acc>('acc_max', exactly(1), newAcc, (s, a, _ctx, valid) => {
    if (!valid) return s.max;
    const x = accNumber(a[0]);
    if (!s.seen || x > s.max) s.max = x;
    s.seen = true;
    return s.max;
  }),
  analytic<Acc>('acc_avg', undefined, newAcc, (s, a, _ctx, valid) => {
    const x = a[0];
    if (valid && !isNull(x)) {
      s.sum += accNumber(x);
      s.count++;
    }
    return s.count ? s.sum / s.count : 0;
  }),
  analytic<Acc>('acc_count', exactly(1), newAcc, (s, a, _ctx, valid) => {
    if (valid && !isNull(a[0])) s.count++;
    return BigInt(s.count);
  }),
  multiCol<Map<string, Value>>(
    'changed_cols',
    all(atLeast(3), stringArg(0), rejects(1, BOOL, ['int', 'float', 'string', 'unit'])),
    () => new Map(),
    (last, a, names) => {
      const prefix = typeof a[0] === 'string' ? a[0] : '';
      const ignoreNull = a[1] === true;
      const out: ValueObject = {};
      for (let i = 2; i < a.length; i++) {
        const name = names[i - 2];
        const x = a[i] === undefined ? null : a[i];
        if (x === null && ignoreNull) continue;
        if (last.has(name) && deepEqual(last.get(name) as Value, x)) continue;
        last.set(name, x);
        out[prefix + name] = x;
      }
      return out;
    },
  ),
  scalar(
    'unnest',
    'none',
    exactly(1),
    (a) => {
      const v = a[0];
      if (v === null || v === undefined || (Array.isArray(v) && v.length === 0)) {
        throw new EvalError("can't find the result from the unnest function");
      }
      if (!Array.isArray(v)) throw new EvalError('the argument for the unnest function should be array');
      return v;
    },
    { kind: 'srf', rawErrors: true },
  ),
  { name: 'row_number', kind: 'window', nullCheck: 'none', validate: exactly(0) },
];
