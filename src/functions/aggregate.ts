/** Aggregate functions (docs/sql.md §7.9). Each receives, per argument, the list of its values over the group. */
import {
  compareStrings,
  EvalError,
  isObject,
  keyText,
  truncToInt,
  typedText,
  type Value,
  type ValueObject,
} from '../values/index.js';
import type { FunctionDef } from './registry.js';
import { aggregate } from './define.js';
import { all, BOOL, BOOL_EXPR, exactly, mustBe, numberArg } from './validate.js';

const numAgg = all(exactly(1), numberArg(0));

function isNull(v: Value): boolean {
  return v === null || v === undefined;
}

type Kind = 'int' | 'float' | 'string';

/** The numeric kind rule: the first non-null value decides; returns the converted non-null values. */
function kindValues(values: Value[], fn: string, allowString: boolean): { kind: Kind; vals: Value[] } | undefined {
  let kind: Kind | undefined;
  const vals: Value[] = [];
  for (const v of values) {
    if (isNull(v)) continue;
    if (kind === undefined) {
      if (typeof v === 'bigint') kind = 'int';
      else if (typeof v === 'number') kind = 'float';
      else if (typeof v === 'string' && allowString) kind = 'string';
      else throw new EvalError(`run ${fn} function error: found invalid arg ${typedText(v)}`);
    }
    if (kind === 'int') {
      if (typeof v === 'bigint') vals.push(v);
      else if (typeof v === 'number') vals.push(truncToInt(v));
      else throw new EvalError(`requires int64 but found ${typedText(v)}`);
    } else if (kind === 'float') {
      if (typeof v !== 'number') throw new EvalError(`requires float64 but found ${typedText(v)}`);
      vals.push(v);
    } else {
      if (typeof v !== 'string') throw new EvalError(`requires string but found ${typedText(v)}`);
      vals.push(v);
    }
  }
  return kind === undefined ? undefined : { kind, vals };
}

function extreme(values: Value[], fn: string, wantMax: boolean): Value {
  const kv = kindValues(values, fn, true);
  if (!kv) return null;
  let best = kv.vals[0];
  for (let i = 1; i < kv.vals.length; i++) {
    const x = kv.vals[i];
    const better =
      kv.kind === 'string'
        ? wantMax
          ? compareStrings(x as string, best as string) > 0
          : compareStrings(x as string, best as string) < 0
        : wantMax
          ? (x as number) > (best as number)
          : (x as number) < (best as number);
    if (better) best = x;
  }
  return best;
}

/** Numbers for the statistical aggregates: ints and floats, nulls skipped; anything else is an error. */
function floats(values: Value[]): number[] {
  const out: number[] = [];
  for (const v of values) {
    if (typeof v === 'number') out.push(v);
    else if (typeof v === 'bigint') out.push(Number(v));
    else if (!isNull(v)) throw new EvalError(`requires float64 slice but found ${typedText(values)}`);
  }
  return out;
}

function variance(values: Value[], sample: boolean): number | null {
  const xs = floats(values);
  const n = xs.length;
  if (n === 0 || (sample && n < 2)) return null;
  let mean = 0;
  for (const x of xs) mean += x;
  mean /= n;
  let ss = 0;
  for (const x of xs) ss += (x - mean) * (x - mean);
  return ss / (sample ? n - 1 : n);
}

function firstNonNull(list: Value[] | undefined): Value {
  if (!list) return null;
  for (const v of list) if (!isNull(v)) return v;
  return null;
}

function percentileArg(list: Value[]): number {
  const p = firstNonNull(list);
  if (typeof p === 'number') return p;
  if (typeof p === 'bigint') return Number(p);
  throw new EvalError(`the second parameter requires float64 but found ${typedText(list)}`);
}

function sortedFloats(values: Value[]): number[] {
  return floats(values).sort((a, b) => a - b);
}

const boolLast = mustBe(1, BOOL, BOOL_EXPR);

export const aggregateFunctions: FunctionDef[] = [
  aggregate('count', 'N', exactly(1), (a) => {
    let n = 0;
    for (const v of a[0]) if (!isNull(v)) n++;
    return BigInt(n);
  }),
  aggregate('sum', 'N', numAgg, (a) => {
    const kv = kindValues(a[0], 'sum', false);
    if (!kv) return null;
    if (kv.kind === 'int') {
      let s = 0n;
      for (const v of kv.vals) s += v as bigint;
      return BigInt.asIntN(64, s);
    }
    let s = 0;
    for (const v of kv.vals) s += v as number;
    return s;
  }),
  aggregate('avg', 'N', numAgg, (a) => {
    const kv = kindValues(a[0], 'avg', false);
    if (!kv) return null;
    if (kv.kind === 'int') {
      let s = 0n;
      for (const v of kv.vals) s += v as bigint;
      return BigInt.asIntN(64, s / BigInt(kv.vals.length));
    }
    let s = 0;
    for (const v of kv.vals) s += v as number;
    return s / kv.vals.length;
  }),
  aggregate('max', 'N', numAgg, (a) => extreme(a[0], 'max', true)),
  aggregate('min', 'N', numAgg, (a) => extreme(a[0], 'min', false)),
  aggregate('collect', 'none', exactly(1), (a) => a[0].map((v) => (v === undefined ? null : v))),
  aggregate('merge_agg', 'N', exactly(1), (a) => {
    let out: ValueObject | null = null;
    for (const v of a[0]) {
      if (!isObject(v)) continue;
      out ??= {};
      Object.assign(out, v);
    }
    return out;
  }),
  {
    name: 'deduplicate',
    kind: 'aggregate',
    nullCheck: 'N',
    validate: all(exactly(2), boolLast),
    appendRows: true,
    aggregate(a) {
      const keys = a[0];
      const all = firstNonNull(a[1]) === true;
      const rows = a[2] ?? keys;
      const seen = new Set<string>();
      if (all) {
        const out: Value[] = [];
        for (let i = 0; i < keys.length; i++) {
          const k = keyText(keys[i]);
          if (!seen.has(k)) {
            seen.add(k);
            out.push(rows[i]);
          }
        }
        return out;
      }
      const last = keys.length - 1;
      const lastKey = keyText(keys[last]);
      for (let i = 0; i < last; i++) if (keyText(keys[i]) === lastKey) return null;
      return rows[last];
    },
  },
  aggregate('stddev', 'N', numAgg, (a) => {
    const v = variance(a[0], false);
    return v === null ? null : Math.sqrt(v);
  }),
  aggregate('stddevs', 'N', numAgg, (a) => {
    const v = variance(a[0], true);
    return v === null ? null : Math.sqrt(v);
  }),
  aggregate('var', 'N', numAgg, (a) => variance(a[0], false)),
  aggregate('vars', 'N', numAgg, (a) => variance(a[0], true)),
  aggregate('percentile_cont', 'N', all(exactly(2), numberArg(0), numberArg(1)), (a) => {
    const c = sortedFloats(a[0]);
    const p = percentileArg(a[1]);
    const n = c.length;
    if (n === 0) return null;
    const outside = 'percentile exec with error: Input is outside of range.';
    if (!(p > 0 && p <= 1)) throw new EvalError(outside);
    if (n === 1) return c[0];
    const idx = p * n;
    if (Number.isInteger(idx)) return c[idx - 1];
    if (idx > 1) {
      const f = Math.floor(idx);
      return (c[f - 1] + c[f]) / 2;
    }
    throw new EvalError(outside);
  }),
  aggregate('percentile_disc', 'N', all(exactly(2), numberArg(0), numberArg(1)), (a) => {
    const c = sortedFloats(a[0]);
    const p = percentileArg(a[1]);
    const n = c.length;
    if (n === 0) return null;
    // (sic) the reference reports this failure under the variance name
    if (!(p >= 0 && p <= 1)) throw new EvalError('PopulationVariance exec with error: Input is outside of range.');
    const rank = Math.ceil(n * p);
    return c[rank <= 0 ? 0 : rank - 1];
  }),
  aggregate('last_value', 'N', all(exactly(2), boolLast), (a) => {
    const vals = a[0];
    if (firstNonNull(a[1]) === true) {
      for (let i = vals.length - 1; i >= 0; i--) if (!isNull(vals[i])) return vals[i];
      return null;
    }
    const v = vals[vals.length - 1];
    return v === undefined ? null : v;
  }),
  aggregate('last_agg_hit_count', 'none', exactly(0), (_a, ctx) => BigInt(ctx.lastAggHitCount)),
  aggregate('last_agg_hit_time', 'none', exactly(0), (_a, ctx) => BigInt(ctx.lastAggHitTime)),
];
