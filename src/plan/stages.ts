/**
 * Builders of the plan's stages from compiled expressions: conditions with their stage prefixes (docs/sql.md §6.7),
 * grouping into units, HAVING, row_number(), ORDER BY, the projection (generated once as straight-line JS per
 * rule) and the unnest expansion.
 */
import type { CallExpr, SortField } from '../sql/ast.js';
import { unparen } from '../sql/ast.js';
import { exprToString } from '../sql/print.js';
import type { Value, ValueObject } from '../values/value.js';
import { isObject } from '../values/value.js';
import { keyText } from '../values/text.js';
import { compareForSort } from '../values/ops.js';
import { bindMultiCol, bindScalar, type FunctionRegistry } from '../functions/registry.js';
import { Tuple, type Row } from '../contracts/index.js';
import {
  EMPTY_ROW,
  EvalUnit,
  StageError,
  type EvalContext,
  type HavingStage,
  type HitTracker,
  type OrderStage,
  type ProjectSetStage,
  type RowFn,
  type RowPredicate,
  type WindowFuncStage,
} from './plan.js';
import { rowObject, site, type ExprCompiler } from './compile.js';
import { outputNameOf } from './calls.js';
import type { BoundField } from './analyze.js';

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** `<nil>` for null, else the value's text (what eKuiper prints for a non-bool condition). */
function condText(v: Value): string {
  return keyText(v);
}

/**
 * A condition of stage `stage` (`Where`, `Having`, `Join`…): true keeps; for WHERE null/false drop; otherwise
 * non-bool values are errors.
 */
export function condition(
  fn: RowFn,
  prefix: string,
  nullIsFalse: boolean,
  what = 'invalid condition that returns non-bool value',
): RowPredicate {
  const fail = (e: unknown): StageError => new StageError(prefix + messageOf(e));
  const nonBool = (v: Value): StageError => new StageError(`${prefix}${what} ${condText(v)}`);
  const nullTest = nullIsFalse ? 'if (v === null || v === undefined) return false;' : '';
  return site<RowPredicate>(
    { fn, fail, nonBool },
    `(r, c) => { let v; try { v = fn(r, c); } catch (e) { throw fail(e); }
      if (v === true) return true; if (v === false) return false; ${nullTest} throw nonBool(v); }`,
  );
}

export const wherePredicate = (fn: RowFn): RowPredicate => condition(fn, 'run Where error: ', true);
export const joinPredicate = (fn: RowFn): RowPredicate =>
  condition(fn, 'run Join error: ', false, 'invalid join condition that returns non-bool value');

/** Group key of GROUP BY dimensions: texts joined with `,` (docs/sql.md §4.7). */
export function groupKey(dims: readonly RowFn[]): RowFn<string> {
  return (row, ctx) => {
    let key = '';
    try {
      for (let i = 0; i < dims.length; i++) key += (i ? ',' : '') + keyText(dims[i](row, ctx));
    } catch (e) {
      throw new StageError('run Group By error: ' + messageOf(e));
    }
    return key;
  };
}

/** Rows → units (see QueryPlan.toUnits). */
export function unitBuilder(
  isAggregate: boolean,
  key: RowFn<string> | null,
): (rows: Row[], ctx: EvalContext) => EvalUnit[] {
  if (!isAggregate) return (rows) => rows.map((r) => new EvalUnit(r, null));
  if (key === null) return (rows) => [new EvalUnit(rows.length ? rows[0] : EMPTY_ROW, rows)];
  return (rows, ctx) => {
    ctx.bindRow();
    const groups = new Map<string, Row[]>();
    for (const r of rows) {
      const k = key(r, ctx);
      const g = groups.get(k);
      if (g) g.push(r);
      else groups.set(k, [r]);
    }
    const out: EvalUnit[] = [];
    for (const g of groups.values()) out.push(new EvalUnit(g[0], g));
    return out;
  };
}

export function havingStage(fn: RowFn, isAggregate: boolean, singleEvent: boolean): HavingStage {
  const cond = condition(fn, 'run Having error: ', false);
  return {
    apply(units, ctx) {
      if (singleEvent) {
        const u = units[0];
        const what =
          u && u.row instanceof Tuple
            ? JSON.stringify(u.row.message, (_k, v) => (typeof v === 'bigint' ? Number(v) : v))
            : '';
        throw new StageError(`run Having error: invalid input ${what}`);
      }
      if (isAggregate) {
        return units.filter((u) => {
          ctx.bindUnit(u);
          return cond(u.row, ctx);
        });
      }
      const whole = new EvalUnit(
        units.length ? units[0].row : EMPTY_ROW,
        units.map((u) => u.row),
      );
      ctx.bindUnit(whole);
      return cond(whole.row, ctx) ? units : [];
    },
  };
}

/** ORDER BY comparison of two keys: nulls last in both directions (docs/sql.md §4.9). */
function compareKeys(a: Value, b: Value, ascending: boolean): number {
  const an = a === null || a === undefined;
  const bn = b === null || b === undefined;
  if (an || bn) return an === bn ? 0 : an ? 1 : -1;
  const c = compareForSort(a, b);
  return ascending ? c : -c;
}

/** Sorts units in place by the values of `keys` evaluated once per unit. */
function sortUnits(
  units: EvalUnit[],
  ctx: EvalContext,
  keys: readonly RowFn[],
  asc: readonly boolean[],
  prefix: string,
): void {
  if (units.length < 2) return;
  const vals: Value[][] = [];
  try {
    for (const u of units) {
      ctx.bindUnit(u);
      vals.push(keys.map((k) => k(u.row, ctx)));
    }
  } catch (e) {
    throw new StageError(prefix + messageOf(e));
  }
  const idx = units.map((_, i) => i);
  try {
    idx.sort((x, y) => {
      for (let j = 0; j < keys.length; j++) {
        const c = compareKeys(vals[x][j], vals[y][j], asc[j]);
        if (c !== 0) return c;
      }
      return 0;
    });
  } catch (e) {
    throw new StageError(prefix + messageOf(e));
  }
  const copy = units.slice();
  for (let i = 0; i < idx.length; i++) units[i] = copy[idx[i]];
}

export function orderStage(sorts: readonly SortField[], c: ExprCompiler): OrderStage {
  const keys = sorts.map((s) => c.compile(s.expr));
  const asc = sorts.map((s) => s.ascending);
  return {
    sort(units, ctx) {
      sortUnits(units, ctx, keys, asc, 'run Order By error: ');
    },
  };
}

/**
 * row_number() (docs/sql.md §4.12), one step per call in select-list order, each working on the order the previous
 * step left (as eKuiper chains one operator per call): `OVER (PARTITION BY …)` splits the units by the key text
 * (every value followed by `,`), sorts each partition by the OVER's ORDER BY and numbers it, then concatenates the
 * partitions in ascending key order; `OVER (ORDER BY …)` alone sorts the whole emission then numbers it; no OVER
 * numbers the units in their current order. Call `k` stores its numbers in `unit.rowNumbers[k]`.
 */
export function windowFuncStage(calls: readonly CallExpr[], c: ExprCompiler): WindowFuncStage {
  const steps = calls.map((call) => ({
    parts: (call.over?.partitionBy ?? []).map((p) => c.compile(p)),
    keys: (call.over?.orderBy ?? []).map((s) => c.compile(s.expr)),
    asc: (call.over?.orderBy ?? []).map((s) => s.ascending),
  }));
  const n = steps.length;
  return {
    apply(input, ctx) {
      let units = input;
      for (const u of units)
        if (u.rowNumbers === null || u.rowNumbers.length !== n) u.rowNumbers = new Array<number>(n).fill(1);
      for (let k = 0; k < n; k++) {
        const { parts, keys, asc } = steps[k];
        let groups: EvalUnit[][];
        if (parts.length === 0) {
          if (keys.length) sortUnits(units, ctx, keys, asc, 'run Order By error: ');
          groups = [units];
        } else {
          const m = new Map<string, EvalUnit[]>();
          try {
            for (const u of units) {
              ctx.bindUnit(u);
              let key = '';
              for (let i = 0; i < parts.length; i++) key += keyText(parts[i](u.row, ctx)) + ',';
              const g = m.get(key);
              if (g) g.push(u);
              else m.set(key, [u]);
            }
          } catch (e) {
            throw new StageError('run partition By error: ' + messageOf(e));
          }
          groups = [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1]);
          for (const g of groups) if (keys.length) sortUnits(g, ctx, keys, asc, 'run Order By error: ');
        }
        const out: EvalUnit[] = [];
        for (const g of groups) {
          for (let i = 0; i < g.length; i++) {
            (g[i].rowNumbers as number[])[k] = i + 1;
            out.push(g[i]);
          }
        }
        units = out;
      }
      return units;
    },
  };
}

// ------------------------------------------------------------------------------------------------ projection

type Step =
  | { kind: 'computed' | 'column'; key: string; fn: RowFn }
  | { kind: 'merge'; fn: (out: ValueObject, row: Row, ctx: EvalContext) => void }
  | { kind: 'srf'; key: string; fn: RowFn };

export interface Projection {
  project: RowFn<ValueObject>;
  /** the output key of the unnest field, or null */
  srfKey: string | null;
}

function selectError(f: BoundField, e: unknown): StageError {
  if (e instanceof StageError) return e;
  const alias = f.field.alias !== null ? `alias: ${f.field.alias} ` : '';
  return new StageError(
    `run Select error: ${alias}expr: ${exprToString(f.field.expr)} meet error, err:${messageOf(e)}`,
  );
}

/** A plain column reference (copied as is, explicit nulls kept) rather than a computed value. */
function isColumnRef(f: BoundField, c: ExprCompiler): boolean {
  if (f.field.alias !== null) return false;
  const e = f.field.expr;
  return e.kind === 'field' && (e.stream === null || c.streamOf(e.stream) !== undefined);
}

/**
 * `*` of a one-stream select: every column of the row. One function for every rule, so the projections of `SELECT *`
 * rules share their generated code (see `site` in compile.ts).
 */
function mergeAll(out: ValueObject, row: Row): void {
  const o = rowObject(row);
  for (const k in o) out[k] = o[k];
}

/**
 * The select list as one function (docs/sql.md §4.3). The body is generated once per rule as straight-line code with
 * constant keys, so V8 sees monomorphic property stores.
 */
export function compileProjection(
  fields: readonly BoundField[],
  c: ExprCompiler,
  registry: FunctionRegistry,
  sendMeta: boolean,
): Projection {
  const steps: Step[] = [];
  let srfKey: string | null = null;
  for (const f of fields) {
    const e = unparen(f.expr);
    if (f.field.expr.kind === 'wildcard' && e.kind === 'wildcard') {
      const value = c.wildcardValue(e);
      const plain = e.stream === null && e.except.length === 0 && e.replace.length === 0;
      steps.push({
        kind: 'merge',
        fn: plain
          ? mergeAll
          : (out, row, ctx) => {
              let o: Value;
              try {
                o = value(row, ctx);
              } catch (err) {
                throw selectError(f, err);
              }
              if (isObject(o)) for (const k in o) out[k] = o[k];
            },
      });
      continue;
    }
    if (e.kind === 'call') {
      const def = registry.get(e.name);
      if (def?.kind === 'srf') {
        const call = bindScalar(def);
        const args = e.args.map((a) => (a.kind === 'wildcard' ? c.wildcardValue(a) : c.compile(a)));
        srfKey = f.field.name;
        steps.push({
          kind: 'srf',
          key: f.field.name,
          fn: (row, ctx) => {
            const vs: Value[] = args.map((a) => a(row, ctx));
            let v: Value;
            try {
              v = call(vs, ctx);
            } catch (err) {
              throw new StageError(messageOf(err));
            }
            if (v === null || v === undefined || (Array.isArray(v) && v.length === 0)) {
              throw new StageError(`can't find the result from the ${def.name} function`);
            }
            if (!Array.isArray(v)) throw new StageError(`the argument for the ${def.name} function should be array`);
            return v;
          },
        });
        continue;
      }
      if (def?.kind === 'multicol') {
        steps.push({ kind: 'merge', fn: multiColStep(f, e, c, registry) });
        continue;
      }
    }
    const fn = c.compile(f.expr);
    steps.push({ kind: isColumnRef(f, c) ? 'column' : 'computed', key: f.field.name, fn });
  }

  const F: unknown[] = [];
  const E: Array<(e: unknown) => StageError> = [];
  let body = 'const out = {};\nlet v;\n';
  steps.forEach((s, i) => {
    F.push(s.fn);
    E.push((err) => selectError(fields[i], err));
    if (s.kind === 'merge') {
      body += `F[${i}](out, r, c);\n`;
      return;
    }
    const inline = c.inline.get(s.fn);
    const value = inline !== undefined ? `(${inline})` : `F[${i}](r, c)`;
    const store =
      s.key === '__proto__'
        ? `Object.defineProperty(out, "__proto__", { value: v, enumerable: true, writable: true, configurable: true });`
        : `out[${JSON.stringify(s.key)}] = v;`;
    if (s.kind === 'srf') {
      body += `v = ${value};\n${store}\n`;
      return;
    }
    body += inline !== undefined ? `v = ${value};\n` : `try { v = ${value}; } catch (e) { throw E[${i}](e); }\n`;
    body += s.kind === 'column' ? `if (v !== undefined) ${store}\n` : `if (v !== null && v !== undefined) ${store}\n`;
  });
  if (sendMeta) body += 'out.__meta = r.meta !== undefined ? r.meta : (r.tuples[0] ? r.tuples[0].meta : {});\n';
  body += 'return out;\n';
  return { project: site<RowFn<ValueObject>>({ F, E }, `function project(r, c) {\n${body}}`), srfKey };
}

/** changed_cols(prefix, ignoreNull, e1, …): `*` arguments expand to the row's columns at run time. */
function multiColStep(
  f: BoundField,
  e: CallExpr,
  c: ExprCompiler,
  registry: FunctionRegistry,
): (out: ValueObject, row: Row, ctx: EvalContext) => void {
  const def = registry.get(e.name)!;
  const call = bindMultiCol(def);
  const state = def.createState ? def.createState() : undefined;
  const args = e.args.map((a, i) =>
    a.kind === 'wildcard'
      ? { wildcard: c.wildcardValue(a), fn: null, name: '' }
      : { wildcard: null, fn: c.compile(a), name: outputNameOf(a, i) },
  );
  return (out, row, ctx) => {
    try {
      const vs: Value[] = [];
      const names: string[] = [];
      for (let i = 0; i < args.length; i++) {
        const a = args[i];
        if (i < 2) {
          // prefix and ignoreNull: values only (the def's names list covers the column arguments)
          vs.push(a.wildcard ? a.wildcard(row, ctx) : (a.fn as RowFn)(row, ctx));
          continue;
        }
        if (a.wildcard) {
          const o = a.wildcard(row, ctx);
          if (isObject(o)) {
            for (const k of Object.keys(o)) {
              vs.push(o[k]);
              names.push(k);
            }
          }
        } else {
          vs.push((a.fn as RowFn)(row, ctx));
          names.push(a.name);
        }
      }
      const cols = call(state, vs, names, ctx);
      for (const k in cols) out[k] = cols[k];
    } catch (err) {
      throw selectError(f, err);
    }
  };
}

/** unnest expansion (docs/sql.md §4.13). */
export function projectSetStage(key: string): ProjectSetStage {
  return {
    expand(projected) {
      const arr = projected[key];
      if (!Array.isArray(arr)) return [projected];
      const out: ValueObject[] = [];
      for (const el of arr) {
        const o: ValueObject = {};
        for (const k in projected) if (k !== key) o[k] = projected[k];
        if (isObject(el)) for (const k in el) o[k] = el[k];
        else o[key] = el === undefined ? null : el;
        out.push(o);
      }
      return out;
    },
  };
}

export const hitTracker: HitTracker = {
  hit(ctx, timestamp) {
    ctx.lastHitCount++;
    ctx.lastHitTime = timestamp;
  },
  aggHit(ctx, windowEnd) {
    ctx.lastAggHitCount++;
    ctx.lastAggHitTime = windowEnd;
  },
};
