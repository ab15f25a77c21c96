/**
 * Function calls for the expression compiler, through the function registry: scalar calls with their null
 * pre-check, aggregate calls evaluated over the current group, analytic calls reading the per-row cache filled by
 * the analytic stage, and row_number().
 */
import type { CallExpr, Expr, MetaExpr } from '../sql/ast.js';
import { unparen } from '../sql/ast.js';
import type { Value } from '../values/value.js';
import { keyText } from '../values/text.js';
import {
  bindAggregate,
  bindAnalytic,
  bindScalar,
  isNullish,
  type FunctionDef,
  type FunctionRegistry,
} from '../functions/registry.js';
import { EvalError } from '../values/errors.js';
import { JoinTuple, type Row } from '../contracts/index.js';
import type { AnalyticStage, EvalContext, RowFn } from './plan.js';
import { PlanError, site, type CallCompiler, type ExprCompiler } from './compile.js';

/** The failure of a function as its record error says it (`call func <f> error: …`). */
function funcError(def: FunctionDef, e: unknown): EvalError {
  const msg = e instanceof Error ? e.message : String(e);
  return new EvalError(def.rawErrors ? msg : `call func ${def.name} error: ${msg}`);
}

/**
 * A scalar call as generated code of its own: arguments evaluated inline, the null pre-check (N/F/Z, docs/sql.md §7.0)
 * inlined, then the definition's `exec`.
 */
function scalarSite(def: FunctionDef, args: readonly RowFn[], c: ExprCompiler): RowFn {
  const exec = def.exec;
  if (!exec) throw new PlanError(`function ${def.name} cannot be called here`);
  const d = c.deps();
  const vals = args.map((a) => d.ref(a));
  const execName = d.add(exec);
  const errName = d.add((e: unknown) => funcError(def, e));
  const nullishName = d.add(isNullish);
  let body = '';
  vals.forEach((v, i) => (body += `const v${i} = ${v};\n`));
  if (def.nullCheck !== 'none' && vals.length > 0) {
    const onNull = def.nullCheck === 'F' ? 'false' : def.nullCheck === 'Z' ? '0n' : 'null';
    const tests = vals.map((_v, i) => `v${i} === null || v${i} === undefined || (typeof v${i} === 'object' && ${nullishName}(v${i}))`);
    body += `if (${tests.join(' || ')}) return ${onNull};\n`;
  }
  // One argument array per call site, refilled per call: exec reads its arguments during the call and must not
  // keep or return the array itself (no built-in does).
  const argv = d.add(new Array<Value>(vals.length).fill(null));
  vals.forEach((_v, i) => (body += `${argv}[${i}] = v${i};\n`));
  body += `try { return ${execName}(${argv}, c); } catch (e) { throw ${errName}(e); }`;
  return site(d.map, `(r, c) => {\n${body}\n}`);
}

/** The cached result of analytic call `k` for a row (joined rows: the first side that computed it). */
function analyticOf(row: Row, k: number): Value {
  const a = row.analytic;
  if (a !== undefined) return a[k] ?? null;
  if (row instanceof JoinTuple) {
    for (const t of row.tuples) {
      const v = t.analytic?.[k];
      if (v !== undefined) return v;
    }
  }
  return null;
}

export class RegistryCalls implements CallCompiler {
  /** analytic call → index into `row.analytic` */
  readonly analyticIndex = new Map<CallExpr, number>();
  /** row_number() call → index into the unit's `rowNumbers` (set by the planner before compiling the fields) */
  readonly windowIndex = new Map<CallExpr, number>();

  constructor(readonly registry: FunctionRegistry) {}

  /** Compiles a call argument: `*` is the row object (docs/sql.md §2.7). */
  arg(a: Expr, c: ExprCompiler): RowFn {
    return a.kind === 'wildcard' ? c.wildcardValue(a) : c.compile(a);
  }

  compileCall(e: CallExpr, c: ExprCompiler): RowFn {
    const def = this.registry.get(e.name);
    if (!def) throw new PlanError(`function ${e.name} not found`);
    switch (def.kind) {
      case 'analytic': {
        const k = this.analyticIndex.get(e);
        if (k === undefined) throw new PlanError(`analytic function ${def.name} was not planned`);
        return (r) => analyticOf(r, k);
      }
      case 'window': {
        const k = this.windowIndex.get(e) ?? 0;
        return (_r, ctx) => BigInt(ctx.rowNumbers?.[k] ?? 1);
      }
      case 'aggregate':
        return this.aggregate(e, c);
      case 'multicol':
        throw new PlanError(`function ${def.name} can only be used inside the select clause`);
      case 'scalar':
      case 'srf':
        break;
    }
    const args = e.args.map((a) => this.arg(a, c));
    if (def.name === 'event_time') {
      const call = bindScalar(def);
      return (r, ctx) => {
        ctx.eventTime = ctx.aggregateRow ? ctx.windowEnd : r.timestamp;
        return call([], ctx);
      };
    }
    return scalarSite(def.instantiate?.() ?? def, args, c);
  }

  /** An aggregate over the current group (`ctx.group`), or over the single current row. */
  private aggregate(e: CallExpr, c: ExprCompiler): RowFn {
    const def = this.registry.get(e.name);
    const call = bindAggregate(def!.instantiate?.() ?? def!);
    const args = e.args.map((a) => this.arg(a, c));
    // deduplicate returns whole rows: the def asks for the group's row objects as one more argument
    if (def!.appendRows) args.push(c.wildcardValue({ kind: 'wildcard', stream: null, except: [], replace: [] }));
    const n = args.length;
    return (r, ctx) => {
      const g = ctx.group;
      const rows = g === null ? [r] : g;
      const m = rows.length;
      const lists: Value[][] = new Array(n);
      for (let i = 0; i < n; i++) {
        const f = args[i];
        const l: Value[] = new Array(m);
        for (let j = 0; j < m; j++) {
          const v = f(rows[j], ctx);
          l[j] = v === undefined ? null : v;
        }
        lists[i] = l;
      }
      return call(lists, ctx);
    };
  }

  /**
   * meta()/mqtt() through their registry definitions (argMode `metaRef`): `base` reads the metadata value, the
   * def applies its own rules (null pre-check, mqtt's string requirement). Falls back to `base` alone.
   */
  metaCall(e: MetaExpr, base: RowFn): RowFn | undefined {
    const def = this.registry.get(e.func);
    if (!def || def.kind !== 'scalar') return undefined;
    const call = bindScalar(def);
    return (r, ctx) => call([base(r, ctx)], ctx);
  }

  /**
   * The analytic stage (docs/sql.md §4.11): evaluates every analytic call on each event, inner calls first, with state
   * per call site and partition, and caches the results on the row.
   */
  analyticStage(calls: readonly CallExpr[], c: ExprCompiler): AnalyticStage | null {
    if (calls.length === 0) return null;
    calls.forEach((e, i) => this.analyticIndex.set(e, i));
    const sites = calls.map((e) => {
      const def = this.registry.get(e.name);
      if (!def || def.kind !== 'analytic' || !def.createState) throw new PlanError(`function ${e.name} not found`);
      return {
        call: bindAnalytic(def),
        create: def.createState.bind(def),
        args: e.args.map((a) => this.arg(a, c)),
        partition: (e.over?.partitionBy ?? []).map((p) => c.compile(p)),
        when: e.over?.when ? c.compile(e.over.when) : null,
        states: new Map<string, unknown>(),
      };
    });
    const size = sites.length;
    return {
      size,
      snapshot: () => sites.map((s) => [...s.states.entries()]),
      restore(states) {
        states.forEach((entries, k) => {
          const site = sites[k];
          if (site) site.states = new Map(entries.map(([key, v]) => [key, v]));
        });
      },
      compute(row: Row, ctx: EvalContext): void {
        let out = row.analytic;
        if (out === undefined) {
          out = new Array<Value>(size).fill(null);
          row.analytic = out;
        }
        for (let k = 0; k < size; k++) {
          const s = sites[k];
          const valid = s.when === null || s.when(row, ctx) === true;
          let key = '';
          for (let i = 0; i < s.partition.length; i++) key += keyText(s.partition[i](row, ctx));
          let state = s.states.get(key);
          if (state === undefined) {
            state = s.create();
            s.states.set(key, state);
          }
          const vs: Value[] = new Array(s.args.length);
          for (let i = 0; i < vs.length; i++) vs[i] = s.args[i](row, ctx);
          const v = s.call(state, vs, ctx, valid);
          out[k] = v === undefined ? null : v;
        }
      },
    };
  }
}

/** Output name of a `changed_cols` argument (the name the expression would have in the select list). */
export function outputNameOf(e: Expr, index: number): string {
  const u = unparen(e);
  if (u.kind === 'field') return u.name;
  if (u.kind === 'call') return u.name.toLowerCase();
  if (u.kind === 'meta') return 'meta';
  if (u.kind === 'navigate' && u.dot) return u.member;
  return `kuiper_field_${index}`;
}
