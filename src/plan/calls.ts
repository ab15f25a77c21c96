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
import type { AnalyticStage, AsyncConsumer, AsyncSite, AsyncStage, EvalContext, RowFn } from './plan.js';
import { PlanError, site, type CallCompiler, type ExprCompiler } from './compile.js';
import { walk } from '../sql/visit.js';

/** Calls of one asynchronous site in flight at once, unless the function asks for fewer. */
const DEFAULT_MAX_IN_FLIGHT = 32;

/** A failed asynchronous call, kept in its result slot until the stage reading it rethrows the error. */
class FailedCall {
  constructor(readonly err: unknown) {}
}

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
    const tests = vals.map(
      (_v, i) => `v${i} === null || v${i} === undefined || (typeof v${i} === 'object' && ${nullishName}(v${i}))`,
    );
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

function slotsOf(
  results: WeakMap<object, Array<Value | FailedCall | undefined>>,
  key: object,
): Array<Value | FailedCall | undefined> {
  let slots = results.get(key);
  if (slots === undefined) {
    slots = [];
    results.set(key, slots);
  }
  return slots;
}

export class RegistryCalls implements CallCompiler {
  /** analytic call → index into `row.analytic` */
  readonly analyticIndex = new Map<CallExpr, number>();
  /** row_number() call → index into the unit's `rowNumbers` (set by the planner before compiling the fields) */
  readonly windowIndex = new Map<CallExpr, number>();

  constructor(readonly registry: FunctionRegistry) {}

  /** the stage whose expressions are being compiled, when it may read asynchronous calls */
  private asyncConsumer: AsyncConsumer | null = null;
  private readonly asyncSites = new Map<
    AsyncConsumer,
    Array<{ site: AsyncSite; level: number; maxInFlight: number }>
  >();
  private asyncCount = 0;
  /** results of the asynchronous calls of this rule, by row (or group) and site index */
  private readonly asyncResults = new WeakMap<object, Array<Value | FailedCall | undefined>>();

  /** Compiles the expressions of `consumer` with `fn`: the asynchronous calls met are computed ahead of it. */
  inAsyncStage<T>(consumer: AsyncConsumer, fn: () => T): T {
    const prev = this.asyncConsumer;
    this.asyncConsumer = consumer;
    try {
      return fn();
    } finally {
      this.asyncConsumer = prev;
    }
  }

  /** The asynchronous calls collected for `consumer`, or null when it reads none. */
  asyncStage(consumer: AsyncConsumer): AsyncStage | null {
    const sites = this.asyncSites.get(consumer);
    if (!sites || sites.length === 0) return null;
    const levels: AsyncSite[][] = [];
    let maxInFlight = DEFAULT_MAX_IN_FLIGHT;
    for (const s of sites) {
      (levels[s.level] ??= []).push(s.site);
      maxInFlight = Math.min(maxInFlight, s.maxInFlight);
    }
    const results = this.asyncResults;
    return {
      consumer,
      levels: levels.filter((l) => l !== undefined),
      maxInFlight: Math.max(1, maxInFlight),
      put(key, index, result) {
        slotsOf(results, key)[index] = result === undefined ? null : result;
      },
      fail(key, index, err) {
        slotsOf(results, key)[index] = new FailedCall(err);
      },
    };
  }

  /** True when the expression calls an asynchronous function. */
  hasAsyncCall(e: Expr): boolean {
    let found = false;
    walk(e, (x) => {
      if (x.kind === 'call' && this.registry.get(x.name)?.async) found = true;
    });
    return found;
  }

  /** Nesting depth of asynchronous calls inside the arguments of `e` (0: none). */
  private asyncDepth(e: CallExpr): number {
    let depth = 0;
    for (const a of e.args) {
      walk(a, (x) => {
        if (x.kind === 'call' && this.registry.get(x.name)?.async) depth = Math.max(depth, 1 + this.asyncDepth(x));
      });
    }
    return depth;
  }

  /**
   * An asynchronous call: registered as a site of the stage being compiled, and compiled to a read of the result
   * its asynchronous node stored for the row (or group) being evaluated.
   */
  private asyncCall(def: FunctionDef, e: CallExpr, c: ExprCompiler): RowFn {
    const consumer = this.asyncConsumer;
    const execAsync = def.execAsync;
    if (consumer === null || !execAsync || !def.async) {
      throw new PlanError(
        `function ${def.name} calls out asynchronously and can only be used in SELECT, WHERE, HAVING and ORDER BY`,
      );
    }
    const args = e.args.map((a) => this.arg(a, c));
    const index = this.asyncCount++;
    const onNull =
      def.nullCheck === 'none' ? undefined : def.nullCheck === 'F' ? false : def.nullCheck === 'Z' ? 0n : null;
    const asyncSite: AsyncSite = {
      index,
      func: def.name,
      timeoutMs: def.async.timeoutMs,
      start(row, ctx) {
        const vals: Value[] = new Array<Value>(args.length);
        for (let i = 0; i < args.length; i++) {
          const v = args[i](row, ctx);
          if (onNull !== undefined && isNullish(v)) return onNull;
          vals[i] = v;
        }
        try {
          return execAsync.call(def, vals, ctx);
        } catch (err) {
          return Promise.reject(err instanceof Error ? err : new Error(String(err)));
        }
      },
      failure: (err) => funcError(def, err),
    };
    let list = this.asyncSites.get(consumer);
    if (!list) this.asyncSites.set(consumer, (list = []));
    list.push({
      site: asyncSite,
      level: this.asyncDepth(e),
      maxInFlight: def.async.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
    });
    const results = this.asyncResults;
    const name = def.name;
    return (r, ctx) => {
      const key = ctx.group ?? r;
      let v = results.get(key)?.[index];
      if (v === undefined && key !== r) v = results.get(r)?.[index];
      if (v instanceof FailedCall) throw v.err;
      if (v === undefined) throw new EvalError(`call func ${name} error: no result was computed for this row`);
      return v;
    };
  }

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
    if (def.async) return this.asyncCall(def.instantiate?.() ?? def, e, c);
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
