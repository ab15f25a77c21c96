/**
 * The expression compiler: every AST expression becomes a JS closure `(row, ctx) => Value`, built once per rule
 * start and never re-interpreted per record (docs/sql.md §2, §6). Aliases are already expanded by the analyzer, so a
 * field reference here always means an input column.
 *
 * Hot shapes are specialised at compile time: a single-stream field read is a direct property read, a comparison
 * with a numeric literal compares JS numbers directly when the operand is a float, and literal LIKE patterns are
 * compiled once.
 */
import type {
  BetweenExpr,
  BinaryExpr,
  CallExpr,
  CaseExpr,
  Expr,
  InExpr,
  LikeExpr,
  MetaExpr,
  NavigateExpr,
  IndexExpr,
  SliceExpr,
  Wildcard,
} from '../sql/ast.js';
import { unparen } from '../sql/ast.js';
import { unhandledKind } from '../sql/visit.js';
import { isObject, type Value, type ValueObject } from '../values/value.js';
import { EvalError } from '../values/errors.js';
import { goTypeName, typedText } from '../values/text.js';
import { add, bitAnd, bitOr, bitXor, div, eq, ge, gt, le, lt, mod, mul, neq, sub } from '../values/ops.js';
import { like, likeToRegExp } from '../values/like.js';
import { type JoinTuple, Tuple, type Row } from '../contracts/index.js';
import type { EvalContext, RowFn } from './plan.js';

/** A compile-time (rule creation) error: becomes EddyError 2101 (or the planner's own code). */
export class PlanError extends Error {
  override readonly name = 'PlanError';
}

/** A source as the compiler sees it. */
export interface ScopeSource {
  /** stream/table name (= tuple emitter) */
  readonly name: string;
  /** alias, or the name */
  readonly alias: string;
}

/** Compiles function calls (built-ins through the registry, aggregates, analytic reads, context functions). */
export interface CallCompiler {
  compileCall(e: CallExpr, c: ExprCompiler): RowFn;
  /** meta()/mqtt() given the compiled metadata read; undefined → the compiler's own rules */
  metaCall?(e: MetaExpr, base: RowFn): RowFn | undefined;
}

const PROTO_KEYS = new Set(Object.getOwnPropertyNames(Object.prototype));

/** Reads own property `k` of a plain object (undefined when absent), safe for keys such as `constructor`. */
export function ownRead(o: ValueObject, k: string): Value {
  return Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined;
}

/** Column `name` of any row: the first tuple (in join order) that has the key. */
export function readColumn(row: Row, name: string): Value {
  if (row instanceof Tuple) return ownRead(row.message, name);
  const ts = (row as JoinTuple).tuples;
  for (let i = 0; i < ts.length; i++) {
    const m = ts[i].message;
    if (Object.prototype.hasOwnProperty.call(m, name)) return m[name];
  }
  return undefined;
}

/** Column `name` of stream `stream` in a joined row; a single tuple is read whatever its stream (docs/sql.md §5.1). */
export function readStreamColumn(row: Row, stream: string, name: string): Value {
  if (row instanceof Tuple) return ownRead(row.message, name);
  const ts = (row as JoinTuple).tuples;
  for (let i = 0; i < ts.length; i++) if (ts[i].emitter === stream) return ownRead(ts[i].message, name);
  return undefined;
}

/** The row as one object (`*`): a tuple's message, or the join sides merged with the first side winning. */
export function rowObject(row: Row): ValueObject {
  if (row instanceof Tuple) return row.message;
  const ts = (row as JoinTuple).tuples;
  if (ts.length === 1) return ts[0].message;
  const out: ValueObject = {};
  for (let i = ts.length - 1; i >= 0; i--) Object.assign(out, ts[i].message);
  return out;
}

/** The metadata of a row (first tuple's for joined rows). */
function rowMeta(row: Row): ValueObject {
  if (row instanceof Tuple) return row.meta;
  const ts = (row as JoinTuple).tuples;
  return ts.length ? ts[0].meta : {};
}

function metaKey(row: Row, key: string): Value {
  if (row instanceof Tuple) return ownRead(row.meta, key);
  const ts = (row as JoinTuple).tuples;
  for (let i = 0; i < ts.length; i++) {
    const m = ts[i].meta;
    if (Object.prototype.hasOwnProperty.call(m, key)) return m[key];
  }
  return undefined;
}

function streamMetaKey(row: Row, stream: string, key: string): Value {
  if (row instanceof Tuple) return ownRead(row.meta, key);
  const ts = (row as JoinTuple).tuples;
  for (let i = 0; i < ts.length; i++) if (ts[i].emitter === stream) return ownRead(ts[i].meta, key);
  return undefined;
}

function isNullish(v: Value): v is null | undefined {
  return v === null || v === undefined;
}

/** Integer index/bound value of `[]` (floats truncated toward zero). */
function toIndex(v: Value): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && Number.isFinite(v)) return Math.trunc(v);
  throw new EvalError(`invalid index ${typedText(v)}, expect an integer`);
}

function navigate(o: Value, member: string, row: Row): Value {
  if (isNullish(o)) return null;
  if (isObject(o)) {
    const v = ownRead(o, member);
    return v === undefined ? null : v;
  }
  if (Array.isArray(o)) throw new EvalError(`${typedText(o)} is not a type of map[string]interface{}`);
  // ⚠ eKuiper: `->` on a scalar fails only when the member name is also a top-level column of the row.
  if (readColumn(row, member) !== undefined) throw new EvalError(`invalid operation ${typedText(o)} -> ${member}`);
  return null;
}

function indexArray(a: Value, iv: Value): Value {
  if (isNullish(a)) return null;
  if (!Array.isArray(a)) throw new EvalError(`invalid operation ${typedText(a)} [] ${typedText(iv)}`);
  const i = toIndex(iv);
  const k = i < 0 ? a.length + i : i;
  if (k < 0 || k >= a.length) throw new EvalError(`out of index: ${i} of ${a.length}`);
  const v = a[k];
  return v === undefined ? null : v;
}

function sliceArray(a: Value, sv: Value | undefined, ev: Value | undefined): Value {
  if (isNullish(a)) return null;
  if (!Array.isArray(a)) throw new EvalError(`invalid operation ${typedText(a)} [:]`);
  const len = a.length;
  if (sv === undefined && ev === undefined) return a;
  let s = sv === undefined ? 0 : toIndex(sv);
  let e = ev === undefined ? len : toIndex(ev);
  const s0 = s;
  const e0 = e;
  if (s < 0) s += len;
  if (e < 0) e += len;
  if (s < 0 || s >= len) throw new EvalError(`out of index: ${s0} of ${len}`);
  if (e < 0 || e > len) throw new EvalError(`out of index: ${e0} of ${len}`);
  if (s >= e) throw new EvalError(`start index ${s0} must be less than end index ${e0}`);
  return a.slice(s, e);
}

function invalidLogic(a: Value, op: string, b: Value): EvalError {
  // arrays and objects on the left are rejected whatever the right side is (docs/sql.md §6.4)
  if (Array.isArray(a) || isObject(a)) return new EvalError(`${op} is an invalid operation for ${goTypeName(a)}`);
  return new EvalError(`invalid operation ${typedText(a)} ${op} ${typedText(b)}`);
}

/** Numeric value of an int/float literal expression, or undefined. */
function numericLiteral(e: Expr): { n: number; v: Value } | undefined {
  const u = unparen(e);
  if (u.kind === 'integer') return { n: Number(u.value), v: u.value };
  if (u.kind === 'float') return { n: u.value, v: u.value };
  return undefined;
}

type CmpOp = '=' | '!=' | '<' | '<=' | '>' | '>=';
const CMP: Record<CmpOp, (a: Value, b: Value) => boolean> = {
  '=': eq,
  '!=': neq,
  '<': lt,
  '<=': le,
  '>': gt,
  '>=': ge,
};
const MIRROR: Record<CmpOp, CmpOp> = { '=': '=', '!=': '!=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };
const JS_OP: Record<CmpOp, string> = { '=': '===', '!=': '!==', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };

/** Generated factories by shape (parameter names, dependency shapes, body): see {@link site}. */
const factories = new Map<string, { make: (...deps: unknown[]) => unknown; shape: string }>();
/** a bound on the factories kept: beyond it the cache starts over (rules keep the closures they already have) */
const MAX_FACTORIES = 20_000;
/** The shape key of each closure made by {@link site}, and of the other functions used as dependencies (their code). */
const shapeOf = new WeakMap<object, string>();
let nextShapeId = 0;

function functionShape(f: object): string {
  let key = shapeOf.get(f);
  if (key === undefined) {
    // closures of one literal share a shape whatever the rule that made them (the aggregate of every rule, per-rule
    // error helpers): code generated around them is then shared too, and calls them through one call site anyway
    key = `t${Function.prototype.toString.call(f)}`;
    shapeOf.set(f, key);
  }
  return key;
}

/** What a dependency contributes to the shape of generated code: functions by identity of code, arrays by members. */
function depShape(v: unknown): string {
  if (typeof v === 'function') return functionShape(v);
  if (Array.isArray(v)) return `[${v.map(depShape).join(',')}]`;
  return typeof v;
}

/**
 * A closure with code of its own. Closures made from one function literal share their inline caches, so a rule
 * with five different function calls would make every shared call site megamorphic; generating each hot node's
 * code keeps them monomorphic. Code is generated once per shape — the body and the code of the functions it calls
 * — and shared by every site of that shape (the same expression in a thousand rules compiles once, and its call
 * sites see one function each), so that planning stays cheap at thousands of rules. `deps` are the free variables
 * of `body`, an arrow function source taking `(r, c)`.
 */
export function site<F>(deps: Record<string, unknown>, body: string): F {
  const names = Object.keys(deps);
  let key = body;
  for (const n of names) key += `\u0000${n}:${depShape(deps[n])}`;
  let factory = factories.get(key);
  if (factory === undefined) {
    if (factories.size >= MAX_FACTORIES) factories.clear();
    const make = new Function(...names, `"use strict";\nreturn ${body};`) as (...deps: unknown[]) => unknown;
    factory = { make, shape: `s${nextShapeId++}` };
    factories.set(key, factory);
  }
  const fn = factory.make(...names.map((n) => deps[n])) as F & object;
  shapeOf.set(fn, factory.shape);
  return fn;
}

/** JS source of a literal value, when it has one that evaluates to exactly that value. */
function literalSource(v: Value): string | undefined {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number') return Number.isFinite(v) && !Object.is(v, -0) ? String(v) : undefined;
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return undefined;
}

/** Dependency collector for generated code: a child is inlined when it has inline source, else called. */
class Deps {
  readonly map: Record<string, unknown> = {};
  private n = 0;
  constructor(private readonly inline: WeakMap<object, string>) {}
  /** source that evaluates `fn` on `(r, c)` */
  ref(fn: RowFn): string {
    const src = this.inline.get(fn);
    if (src !== undefined) return `(${src})`;
    return `${this.add(fn)}(r, c)`;
  }
  add(v: unknown): string {
    const name = `d${this.n++}`;
    this.map[name] = v;
    return name;
  }
}

/**
 * One value per (row, group, context epoch): an alias referenced elsewhere is evaluated once per row (docs/sql.md §4.3).
 * The epoch changes whenever the runtime rebinds the context, so a value never leaks into another evaluation.
 */
function cachedValue(f: RowFn): RowFn {
  return site(
    { f, slot: { row: null as Row | null, group: null as Row[] | null, epoch: -1, value: null as Value } },
    `(r, c) => {
      if (slot.row === r && slot.epoch === c.epoch && slot.group === c.group) return slot.value;
      const v = f(r, c);
      slot.row = r; slot.group = c.group; slot.epoch = c.epoch; slot.value = v;
      return v;
    }`,
  );
}

export interface CompilerOptions {
  readonly sources: readonly ScopeSource[];
  /** rows may be joined rows (joins, lookup or table joins): field reads search the tuples */
  readonly multi: boolean;
  readonly calls: CallCompiler;
  /** expressions whose value is computed once per row and evaluation context and then reused (aliases) */
  readonly cached?: ReadonlySet<object>;
}

export class ExprCompiler {
  readonly sources: readonly ScopeSource[];
  readonly multi: boolean;
  private readonly calls: CallCompiler;
  /** inline JS source of cheap, pure compiled nodes (single-stream field reads, literals) */
  readonly inline = new WeakMap<object, string>();
  private readonly cached: ReadonlySet<object>;
  private readonly cachedFns = new Map<object, RowFn>();

  constructor(opts: CompilerOptions) {
    this.sources = opts.sources;
    this.multi = opts.multi;
    this.calls = opts.calls;
    this.cached = opts.cached ?? new Set();
  }

  /** The stream name a qualifier (name or alias) designates, or undefined when it is not a source. */
  streamOf(qualifier: string): string | undefined {
    for (const s of this.sources) if (s.alias === qualifier) return s.name;
    for (const s of this.sources) if (s.name === qualifier) return s.name;
    return undefined;
  }

  compile(e: Expr): RowFn {
    if (this.cached.has(e)) {
      let fn = this.cachedFns.get(e);
      if (!fn) {
        fn = cachedValue(this.compileNode(e));
        this.cachedFns.set(e, fn);
      }
      return fn;
    }
    return this.compileNode(e);
  }

  private compileNode(e: Expr): RowFn {
    switch (e.kind) {
      case 'paren':
        return this.compile(e.expr);
      case 'integer':
      case 'float':
      case 'string':
      case 'boolean': {
        const v: Value = e.value;
        const fn: RowFn = () => v;
        const src = literalSource(v);
        if (src !== undefined) this.inline.set(fn, src);
        return fn;
      }
      case 'timeUnit':
        throw new PlanError(`invalid time unit ${e.unit.toLowerCase()} outside a window function`);
      case 'field':
        return this.field(e.stream, e.name);
      case 'wildcard':
        return this.wildcardValue(e);
      case 'binary':
        return this.binary(e);
      case 'navigate':
        return this.navigate(e);
      case 'index':
        return this.index(e);
      case 'slice':
        return this.slice(e);
      case 'in':
        return this.in(e);
      case 'between':
        return this.between(e);
      case 'like':
        return this.like(e);
      case 'case':
        return this.caseExpr(e);
      case 'call':
        return this.calls.compileCall(e, this);
      case 'meta':
        return this.meta(e);
      default:
        return unhandledKind(e);
    }
  }

  /** Column read; `q.c` where `q` is not a source is navigation `q->c` (docs/sql.md §2.3). */
  field(qualifier: string | null, name: string): RowFn {
    if (qualifier !== null) {
      const stream = this.streamOf(qualifier);
      if (stream === undefined) {
        const base = this.field(null, qualifier);
        return (r, c) => navigate(base(r, c), name, r);
      }
      if (this.multi) return (r) => readStreamColumn(r, stream, name);
    }
    if (this.multi) return (r) => readColumn(r, name);
    if (PROTO_KEYS.has(name)) return (r) => ownRead((r as Tuple).message, name);
    const src = `r.message[${JSON.stringify(name)}]`;
    const fn = site<RowFn>({}, `(r) => ${src}`);
    this.inline.set(fn, src);
    return fn;
  }

  /** A new dependency collector for generated code. */
  deps(): Deps {
    return new Deps(this.inline);
  }

  /** `*` (or `s.*`) used as a value: the row object, with EXCEPT/REPLACE applied. */
  wildcardValue(e: Wildcard): RowFn {
    let base: RowFn<ValueObject>;
    if (e.stream !== null) {
      const stream = this.streamOf(e.stream) ?? e.stream;
      base = (r) => {
        if (r instanceof Tuple) return r.message;
        for (const t of (r as JoinTuple).tuples) if (t.emitter === stream) return t.message;
        return {};
      };
    } else base = rowObject;
    if (e.except.length === 0 && e.replace.length === 0) return base;
    const except = e.except;
    const replace = e.replace.map((it) => ({ name: it.name, fn: this.compile(it.expr) }));
    return (r, c) => {
      const out: ValueObject = { ...base(r, c) };
      if (r instanceof Tuple) for (const k of except) delete out[k];
      for (const it of replace) {
        const v = it.fn(r, c);
        if (!isNullish(v)) out[it.name] = v;
      }
      return out;
    };
  }

  private binary(e: BinaryExpr): RowFn {
    const op = e.op;
    if (op === 'AND' || op === 'OR') return this.logic(e);
    if (op === '=' || op === '!=' || op === '<' || op === '<=' || op === '>' || op === '>=') {
      const litR = numericLiteral(e.right);
      if (litR && Number.isSafeInteger(Math.trunc(litR.n)))
        return this.cmpNumber(op, this.compile(e.left), litR.n, litR.v, false);
      const litL = numericLiteral(e.left);
      if (litL && unparen(e.left).kind === 'float')
        return this.cmpNumber(MIRROR[op], this.compile(e.right), litL.n, litL.v, true);
      const d = this.deps();
      const l = d.ref(this.compile(e.left));
      const rt = d.ref(this.compile(e.right));
      const f = d.add(CMP[op]);
      return site(d.map, `(r, c) => ${f}(${l}, ${rt})`);
    }
    const d = this.deps();
    const l = d.ref(this.compile(e.left));
    const rt = d.ref(this.compile(e.right));
    const fast = op === '+' || op === '-' || op === '*';
    const slow = d.add({ '+': add, '-': sub, '*': mul, '/': div, '%': mod, '&': bitAnd, '|': bitOr, '^': bitXor }[op]);
    if (!fast) return site(d.map, `(r, c) => ${slow}(${l}, ${rt})`);
    return site(
      d.map,
      `(r, c) => { const a = ${l}; const b = ${rt}; return typeof a === 'number' && typeof b === 'number' ? a ${op} b : ${slow}(a, b); }`,
    );
  }

  /**
   * `x <op> literal` with a numeric literal: JS numbers compare directly; everything else (ints, nulls, errors)
   * goes through the general operator, so the semantics stay exact. `mirrored`: the literal was on the left.
   */
  private cmpNumber(op: CmpOp, x: RowFn, n: number, lit: Value, mirrored: boolean): RowFn {
    const d = this.deps();
    const v = d.ref(x);
    const litName = d.add(lit);
    const slow = d.add(CMP[mirrored ? MIRROR[op] : op]);
    const slowCall = mirrored ? `${slow}(${litName}, v)` : `${slow}(v, ${litName})`;
    // the number is a dependency, not text of the code: rules that differ only in their thresholds (`a > 1`, `a > 2`,
    // …) share one generated function instead of compiling and optimising one each
    const num = d.add(n);
    const fast = op === '!=' ? `v === v && v !== ${num}` : `v ${JS_OP[op]} ${num}`;
    // JS compares a bigint with a number exactly (loose equality for = and !=)
    const big = op === '=' ? `v == ${num}` : op === '!=' ? `v != ${num}` : `v ${JS_OP[op]} ${num}`;
    return site(
      d.map,
      `(r, c) => { const v = ${v}; return typeof v === 'number' ? ${fast} : typeof v === 'bigint' ? ${big} : ${slowCall}; }`,
    );
  }

  /**
   * AND/OR (docs/sql.md §6.2): only a false left operand short-circuits AND and only a true one short-circuits OR;
   * otherwise both sides are evaluated and a null on either side gives false (`null OR true` is false).
   */
  private logic(e: BinaryExpr): RowFn {
    const d = this.deps();
    const l = d.ref(this.compile(e.left));
    const rt = d.ref(this.compile(e.right));
    const err = d.add(invalidLogic);
    if (e.op === 'AND') {
      return site(
        d.map,
        `(r, c) => { const a = ${l}; if (a === false) return false; const b = ${rt};
          if (a === true && typeof b === 'boolean') return b;
          if (a === null || a === undefined || b === null || b === undefined) return false;
          throw ${err}(a, 'AND', b); }`,
      );
    }
    return site(
      d.map,
      `(r, c) => { const a = ${l}; if (a === true) return true; const b = ${rt};
        if (a === false && typeof b === 'boolean') return b;
        if (a === null || a === undefined || b === null || b === undefined) return false;
        throw ${err}(a, 'OR', b); }`,
    );
  }

  private navigate(e: NavigateExpr): RowFn {
    const d = this.deps();
    const o = d.ref(this.compile(e.object));
    const slow = d.add(navigate);
    const key = JSON.stringify(e.member);
    if (PROTO_KEYS.has(e.member)) return site(d.map, `(r, c) => ${slow}(${o}, ${key}, r)`);
    // plain JSON objects (constructor Object) read directly; everything else takes the general path
    return site(
      d.map,
      `(r, c) => { const o = ${o};
        if (typeof o === 'object' && o !== null && o.constructor === Object) { const v = o[${key}]; return v === undefined ? null : v; }
        return ${slow}(o, ${key}, r); }`,
    );
  }

  private index(e: IndexExpr): RowFn {
    const d = this.deps();
    const a = d.ref(this.compile(e.array));
    const i = d.ref(this.compile(e.index));
    const slow = d.add(indexArray);
    return site(
      d.map,
      `(r, c) => { const a = ${a}; if (a === null || a === undefined) return null; const i = ${i};
        if (Array.isArray(a) && typeof i === 'bigint') {
          const n = Number(i); const k = n < 0 ? a.length + n : n;
          if (k >= 0 && k < a.length) { const v = a[k]; return v === undefined ? null : v; }
        }
        return ${slow}(a, i); }`,
    );
  }

  private slice(e: SliceExpr): RowFn {
    const a = this.compile(e.array);
    const s = e.start ? this.compile(e.start) : null;
    const en = e.end ? this.compile(e.end) : null;
    return (r, c) => {
      const arr = a(r, c);
      if (isNullish(arr)) return null;
      return sliceArray(arr, s ? s(r, c) : undefined, en ? en(r, c) : undefined);
    };
  }

  /** IN / NOT IN with the null rules of docs/sql.md §6.2 and `evaluate in expression error: …` on type mismatches. */
  private in(e: InExpr): RowFn {
    const x = this.compile(e.value);
    const neg = e.negated;
    const member = (v: Value, el: Value): boolean => {
      if (isNullish(el)) return false;
      try {
        return eq(v, el);
      } catch (err) {
        throw new EvalError(`evaluate in expression error: ${(err as Error).message}`);
      }
    };
    if (e.list) {
      const items = e.list.map((it) => this.compile(it));
      return (r, c) => {
        const v = x(r, c);
        if (isNullish(v)) return false;
        for (let i = 0; i < items.length; i++) if (member(v, items[i](r, c))) return !neg;
        return neg;
      };
    }
    const arr = this.compile(e.array as Expr);
    return (r, c) => {
      const a = arr(r, c);
      if (isNullish(a)) return neg;
      const v = x(r, c);
      if (isNullish(v)) return false;
      if (!Array.isArray(a)) throw new EvalError(`evaluate in expression error: ${typedText(a)} is not an array`);
      for (let i = 0; i < a.length; i++) if (member(v, a[i])) return !neg;
      return neg;
    };
  }

  private between(e: BetweenExpr): RowFn {
    const x = this.compile(e.value);
    const lo = this.compile(e.low);
    const hi = this.compile(e.high);
    const neg = e.negated;
    return (r, c) => {
      const v = x(r, c);
      const a = lo(r, c);
      const b = hi(r, c);
      if (isNullish(v) || isNullish(a) || isNullish(b)) return false;
      let inside: boolean;
      try {
        inside = ge(v, a) && le(v, b);
      } catch {
        throw new EvalError(`between operator cannot compare ${typedText(v)} and ${typedText(a)}, ${typedText(b)}`);
      }
      return inside !== neg;
    };
  }

  private like(e: LikeExpr): RowFn {
    const x = this.compile(e.value);
    const neg = e.negated;
    const p = unparen(e.pattern);
    if (p.kind === 'string') {
      let re: ReturnType<typeof likeToRegExp>;
      try {
        re = likeToRegExp(p.value);
      } catch {
        throw new PlanError(`invalid LIKE pattern ${p.value}`);
      }
      const pat = p.value;
      return (r, c) => {
        const s = x(r, c);
        if (typeof s !== 'string') return like(s, pat) !== neg;
        return re.test(s) !== neg;
      };
    }
    const pf = this.compile(e.pattern);
    return (r, c) => like(x(r, c), pf(r, c)) !== neg;
  }

  private caseExpr(e: CaseExpr): RowFn {
    const whens = e.whens.map((w) => ({ when: this.compile(w.when), then: this.compile(w.then) }));
    const elseFn = e.elseExpr ? this.compile(e.elseExpr) : null;
    const n = whens.length;
    if (e.value) {
      const v = this.compile(e.value);
      return (r, c) => {
        const x = v(r, c);
        for (let i = 0; i < n; i++) {
          const w = whens[i].when(r, c);
          if (!isNullish(x) && !isNullish(w) && eq(x, w)) return whens[i].then(r, c);
        }
        return elseFn ? elseFn(r, c) : null;
      };
    }
    return (r, c) => {
      for (let i = 0; i < n; i++) if (whens[i].when(r, c) === true) return whens[i].then(r, c);
      return elseFn ? elseFn(r, c) : null;
    };
  }

  /** meta(k), meta(s.k), meta(k->sub), meta(*), mqtt(topic|messageid) (docs/sql.md §2.9). */
  private meta(e: MetaExpr): RowFn {
    const base = this.metaBase(e.arg);
    const viaRegistry = this.calls.metaCall?.(e, base);
    if (viaRegistry) return viaRegistry;
    if (e.func === 'meta') return base;
    return (r, c) => {
      const v = base(r, c);
      if (isNullish(v) || typeof v === 'string') return v ?? null;
      throw new EvalError(`call func ${e.name.toLowerCase()} error: ${typedText(v)} is not a string`);
    };
  }

  private metaBase(arg: Expr): RowFn {
    const a = unparen(arg);
    switch (a.kind) {
      case 'wildcard':
        return (r) => rowMeta(r);
      case 'field': {
        const key = a.name;
        if (a.stream !== null) {
          const stream = this.streamOf(a.stream);
          if (stream !== undefined) return (r) => streamMetaKey(r, stream, key);
          const q = a.stream;
          return (r) => navigate(metaKey(r, q), key, r);
        }
        return (r) => metaKey(r, key);
      }
      case 'navigate': {
        const o = this.metaBase(a.object);
        const member = a.member;
        return (r, c) => {
          const v = o(r, c);
          return isObject(v) ? (ownRead(v, member) ?? null) : null;
        };
      }
      default:
        throw new PlanError(`invalid argument for meta: ${a.kind}`);
    }
  }
}

export type { EvalContext };
