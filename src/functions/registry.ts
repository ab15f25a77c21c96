/**
 * The function registry: every SQL function — built-in, plugin or script — is a {@link FunctionDef} registered
 * here under a case-insensitive name. The planner asks it for a function's kind and validates calls when a rule
 * is created; the expression compiler turns a def into a per-call closure ({@link bindScalar} etc.) once, and
 * the runtime calls that closure per record.
 *
 * Shape of a definition, per kind:
 * - `scalar`   — `exec(args, ctx)`: one value per call. The null pre-check (`nullCheck`) runs before `exec`.
 * - `srf`      — `exec(args, ctx)`: returns the array of values that become one row each (`unnest`).
 * - `aggregate`— `aggregate(args, ctx)`: `args[i]` is the list of values of argument i over the group's rows
 *                (for `*` the row objects). The null pre-check sees those lists: an empty group is "null".
 * - `analytic` — `createState()` once per call site and partition, then `execAnalytic(state, args, ctx, valid)`
 *                per event; `valid` is false when the OVER (WHEN …) condition is not true.
 * - `multicol` — `createState()` once per call site, then `execMultiCol(state, args, names, ctx)` per event;
 *                `names[i]` is the output name of argument i (for `*` expanded by the compiler, one per column).
 * - `window`   — `row_number()`: numbered by the runtime; the def only validates.
 * A scalar with `async` set (external services, portable-plugin functions, `delay`) has `execAsync` instead of
 * `exec`: the planner evaluates it ahead of the stage that reads it, in an asynchronous runtime node, so that no
 * call ever blocks the thread (docs/runtime.md §6.3).
 * Runtime failures are thrown as `EvalError`; the bound closures prefix them with `call func <f> error: `.
 */
import { EvalError, isObject, type Value, type ValueObject } from '../values/index.js';

export type FuncKind = 'scalar' | 'aggregate' | 'analytic' | 'srf' | 'multicol' | 'window';

/**
 * How an argument is *written* in the SQL (docs/sql.md §7.0), for creation-time checks:
 * `int`/`float`/`string`/`bool` literals (with `literal` set; a negative number literal is an int/float literal),
 * `boolExpr` an expression whose top operator is a comparison, AND, OR, IN, BETWEEN or LIKE, `unit` a time-unit
 * keyword (DD HH MI SS MS), `field` a column reference (`name` set to its text, e.g. `a` or `s.a`),
 * `wildcard` `*`, `other` anything else (calls, arithmetic, navigation such as `a->b`).
 */
export type ArgKind = 'int' | 'float' | 'string' | 'bool' | 'boolExpr' | 'unit' | 'field' | 'wildcard' | 'other';

export interface ArgInfo {
  readonly kind: ArgKind;
  readonly literal?: Value;
  readonly name?: string;
}

/** Null pre-check (docs/sql.md §7.0): N → null, F → false, Z → 0 when any argument is null, `[]` or `{}`. */
export type NullCheck = 'N' | 'F' | 'Z' | 'none';

/** Reads the external keyed-state store (`get_keyed_state`); undefined when the key is absent. */
export type KeyedStateReader = (key: string) => Value | undefined;

/**
 * Runtime data some functions read. The runtime owns one context object per rule (or per operator) and updates
 * its fields in place before evaluating a row; functions never keep it.
 */
export interface FuncContext {
  /** id of the running rule (`rule_id()`). */
  ruleId: string;
  /** epoch ms at which the rule started (`rule_start()`). */
  ruleStart: number;
  /** bounds of the window being emitted, epoch ms; undefined outside windows (functions then return null). */
  windowStart: number | undefined;
  windowEnd: number | undefined;
  /** the current row's timestamp, or the window end for an aggregate row (`event_time()`). */
  eventTime: number | undefined;
  /** `last_hit_count()` / `last_hit_time()`: previous hits of this rule (see docs/sql.md §7.14). */
  lastHitCount: number;
  lastHitTime: number;
  /** `last_agg_hit_count()` / `last_agg_hit_time()`: previous successful aggregate emissions. */
  lastAggHitCount: number;
  lastAggHitTime: number;
  /** the external keyed-state store; when absent every key reads as not stored (`get_keyed_state` → default). */
  keyedState?: KeyedStateReader;
}

export function createFuncContext(init: Partial<FuncContext> = {}): FuncContext {
  return {
    ruleId: '',
    ruleStart: 0,
    windowStart: undefined,
    windowEnd: undefined,
    eventTime: undefined,
    lastHitCount: 0,
    lastHitTime: 0,
    lastAggHitCount: 0,
    lastAggHitTime: 0,
    ...init,
  };
}

/** How the runtime runs the calls of an asynchronous function. */
export interface AsyncCallOptions {
  /** time limit of one call; a call still pending then fails with `timed out after <n> ms` */
  readonly timeoutMs: number;
  /** calls of one call site in flight at once (results are still emitted in arrival order); default 32 */
  readonly maxInFlight?: number;
}

export interface FunctionDef {
  /** canonical lower-case name; used in `call func <name> error:` and `validate function <name> error:`. */
  readonly name: string;
  readonly kind: FuncKind;
  readonly nullCheck: NullCheck;
  /** Creation-time check of how the arguments are written; returns the text after `validate function <f> error: `. */
  validate?(args: readonly ArgInfo[]): string | undefined;
  /** scalar and srf */
  exec?(args: Value[], ctx: FuncContext): Value;
  /**
   * Set for asynchronous scalars, which have {@link execAsync} and no `exec`. They can be called where the planner
   * can compute them ahead of the stage that reads them (SELECT, WHERE, HAVING, ORDER BY).
   */
  readonly async?: AsyncCallOptions;
  /**
   * Asynchronous scalar: starts one call. It must read `args` and `ctx` before it first awaits (both are reused
   * for the next call) and settle within `async.timeoutMs`; a rejection is the function's error.
   */
  execAsync?(args: Value[], ctx: FuncContext): Promise<Value>;
  /** aggregate: `args[i]` = values of argument i over the group's rows */
  aggregate?(args: Value[][], ctx: FuncContext): Value;
  /** analytic and multicol: fresh state for one call site (and partition) */
  createState?(): unknown;
  /** analytic */
  execAnalytic?(state: unknown, args: Value[], ctx: FuncContext, valid: boolean): Value;
  /** multicol: returns the columns to add to the output row */
  execMultiCol?(state: unknown, args: Value[], names: readonly string[], ctx: FuncContext): ValueObject;
  /**
   * `metaRef`: the argument is a metadata reference (meta(), mqtt()): the compiler passes the *metadata* value it
   * names (`meta(k)` → the row's metadata key k, `meta(*)` → the whole metadata object) instead of a column.
   */
  readonly argMode?: 'metaRef';
  /**
   * aggregate only: the compiler appends one more argument list, the group's row objects (what `*` gives), after
   * the written arguments (`deduplicate` returns whole rows).
   */
  readonly appendRows?: boolean;
  /** errors are reported without the `call func <f> error: ` prefix (unnest). */
  readonly rawErrors?: boolean;
  /**
   * Stateful functions (JavaScript functions: one engine per call site): a fresh definition for one call site,
   * asked for once when a rule is compiled; that call site then runs the returned definition. May throw (the rule
   * then fails to plan with the message).
   */
  instantiate?(): FunctionDef;
  /**
   * The function is defined on every rule worker too (JavaScript functions and native plugin functions, loaded on
   * each thread), so a rule calling it may run on a worker (docs/runtime.md §1.10); other non-built-in functions run
   * on the main thread, reached from a worker when they are asynchronous (workers/main-functions.ts), else keeping
   * their rules on the main thread.
   */
  readonly worker?: true;
}

/** True for null, undefined, `[]` and `{}`: what the null pre-check treats as null. */
export function isNullish(v: Value): boolean {
  if (v === null || v === undefined) return true;
  if (typeof v !== 'object') return false;
  if (Array.isArray(v)) return v.length === 0;
  if (isObject(v)) {
    for (const _ in v) return false;
    return true;
  }
  return false;
}

function preCheck(nc: NullCheck): Value {
  return nc === 'F' ? false : nc === 'Z' ? 0n : null;
}

/** Wraps any failure as `call func <f> error: <message>` (a plain bug becomes an error record, never a crash). */
function wrap(def: FunctionDef, e: unknown): EvalError {
  const msg = e instanceof Error ? e.message : String(e);
  return new EvalError(def.rawErrors ? msg : `call func ${def.name} error: ${msg}`);
}

export type ScalarCall = (args: Value[], ctx: FuncContext) => Value;

/** The per-call closure of a scalar or srf function: null pre-check, then exec, errors prefixed. */
export function bindScalar(def: FunctionDef): ScalarCall {
  const exec = def.exec;
  if (!exec) throw new Error(`function ${def.name} is not a scalar function`);
  const nc = def.nullCheck;
  if (nc === 'none') {
    return (args, ctx) => {
      try {
        return exec(args, ctx);
      } catch (e) {
        throw wrap(def, e);
      }
    };
  }
  const onNull = preCheck(nc);
  return (args, ctx) => {
    for (let i = 0; i < args.length; i++) if (isNullish(args[i])) return onNull;
    try {
      return exec(args, ctx);
    } catch (e) {
      throw wrap(def, e);
    }
  };
}

export type AggregateCall = (args: Value[][], ctx: FuncContext) => Value;

/** The closure of an aggregate: pre-check on the per-argument lists (an empty group is null), errors prefixed. */
export function bindAggregate(def: FunctionDef): AggregateCall {
  const agg = def.aggregate;
  if (!agg) throw new Error(`function ${def.name} is not an aggregate function`);
  const onNull = preCheck(def.nullCheck);
  const check = def.nullCheck !== 'none';
  return (args, ctx) => {
    if (check) for (let i = 0; i < args.length; i++) if (isNullish(args[i])) return onNull;
    try {
      return agg(args, ctx);
    } catch (e) {
      throw wrap(def, e);
    }
  };
}

export type AnalyticCall = (state: unknown, args: Value[], ctx: FuncContext, valid: boolean) => Value;

export function bindAnalytic(def: FunctionDef): AnalyticCall {
  const fn = def.execAnalytic;
  if (!fn) throw new Error(`function ${def.name} is not an analytic function`);
  return (state, args, ctx, valid) => {
    try {
      return fn(state, args, ctx, valid);
    } catch (e) {
      throw wrap(def, e);
    }
  };
}

export type MultiColCall = (state: unknown, args: Value[], names: readonly string[], ctx: FuncContext) => ValueObject;

export function bindMultiCol(def: FunctionDef): MultiColCall {
  const fn = def.execMultiCol;
  if (!fn) throw new Error(`function ${def.name} is not a multi-column function`);
  return (state, args, names, ctx) => {
    try {
      return fn(state, args, names, ctx);
    } catch (e) {
      throw wrap(def, e);
    }
  };
}

export class FunctionRegistry {
  private readonly defs = new Map<string, FunctionDef>();
  private changes = 0;

  /** Changes whenever a function is registered or unregistered (what is derived from the list may be kept till then). */
  get revision(): number {
    return this.changes;
  }

  /** Registers (or replaces) a function under its case-insensitive name. */
  register(def: FunctionDef): void {
    this.defs.set(def.name.toLowerCase(), def);
    this.changes++;
  }

  unregister(name: string): boolean {
    this.changes++;
    return this.defs.delete(name.toLowerCase());
  }

  get(name: string): FunctionDef | undefined {
    return this.defs.get(name.toLowerCase());
  }

  has(name: string): boolean {
    return this.defs.has(name.toLowerCase());
  }

  kindOf(name: string): FuncKind | undefined {
    return this.defs.get(name.toLowerCase())?.kind;
  }

  /** Every registered name (lower case). */
  names(): string[] {
    return [...this.defs.keys()];
  }

  /**
   * Creation-time check of one call: `function X not found` for an unknown name, the def's own validation as
   * `validate function X error: …`, or undefined when the call is acceptable. `X` is the name as written.
   */
  validateCall(name: string, args: readonly ArgInfo[]): string | undefined {
    const def = this.get(name);
    if (!def) return `function ${name} not found`;
    const msg = def.validate?.(args);
    return msg === undefined ? undefined : `validate function ${name} error: ${msg}`;
  }
}
