/**
 * The JSONPath dialect of `json_path_query` and friends (docs/sql.md §7.5): `$`, `.key`, `['key']`, `[n]` (negative
 * from the end), `[*]`/`.*`, `[a,b]` unions, `[s:e:step]` slices, `..` recursive descent and filters
 * `[?(expr)]` / `[? expr]` whose expressions use `@`/`$` paths, literals, `== != < <= > >= =~ && || ! + - * / %`
 * and `in`. A path made only of keys and indexes is *definite*: it yields one value, and a missing key or index is
 * an error; any other path yields an array of the matches. Paths are compiled once and cached.
 */
import { DateTime, EvalError, isObject, textOf, type Value } from '../values/index.js';
import { compileRegex } from './regex.js';

type Step =
  | { t: 'key'; name: string }
  | { t: 'index'; i: number }
  | { t: 'wild' }
  | { t: 'union'; items: (string | number)[] }
  | { t: 'slice'; start?: number; end?: number; step?: number }
  | { t: 'filter'; expr: Expr }
  | { t: 'recursive' };

type Expr =
  | { e: 'lit'; v: Value }
  | { e: 'path'; root: '@' | '$'; steps: Step[] }
  | { e: 'not'; x: Expr }
  | { e: 'neg'; x: Expr }
  | { e: 'bin'; op: string; l: Expr; r: Expr };

export interface CompiledPath {
  readonly steps: Step[];
  readonly definite: boolean;
}

const cache = new Map<string, CompiledPath>();

/** Compiles a path; throws an EvalError describing the syntax problem. */
export function compilePath(path: string): CompiledPath {
  let c = cache.get(path);
  if (c) return c;
  const p = new PathParser(path);
  const steps = p.parseRoot();
  c = { steps, definite: steps.every((s) => s.t === 'key' || s.t === 'index') };
  if (cache.size > 1000) cache.clear();
  cache.set(path, c);
  return c;
}

class PathParser {
  private i = 0;
  constructor(private readonly s: string) {}

  private fail(msg: string): never {
    throw new EvalError(`parsing error: ${this.s} :${this.i + 1} - ${msg}`);
  }

  private ws(): void {
    while (this.s[this.i] === ' ' || this.s[this.i] === '\t' || this.s[this.i] === '\n') this.i++;
  }

  parseRoot(): Step[] {
    this.ws();
    if (this.s[this.i] !== '$') this.fail("unexpected token, expected '$'");
    this.i++;
    const steps = this.parseSteps(false);
    this.ws();
    if (this.i < this.s.length) this.fail(`unexpected "${this.s[this.i]}"`);
    return steps;
  }

  /** Steps after a root; inside filters parsing stops at the first character that cannot continue a path. */
  parseSteps(inFilter: boolean): Step[] {
    const steps: Step[] = [];
    for (;;) {
      const c = this.s[this.i];
      if (c === '.') {
        const recursive = this.s[this.i + 1] === '.';
        this.i += recursive ? 2 : 1;
        if (recursive) {
          steps.push({ t: 'recursive' });
          if (this.s[this.i] === '[') continue;
        }
        if (this.s[this.i] === '*') {
          this.i++;
          steps.push({ t: 'wild' });
        } else steps.push({ t: 'key', name: this.ident() });
        continue;
      }
      if (c === '[') {
        this.i++;
        this.ws();
        steps.push(this.bracket());
        continue;
      }
      void inFilter;
      return steps;
    }
  }

  private ident(): string {
    const start = this.i;
    while (this.i < this.s.length && /[\w$-]/u.test(this.s[this.i])) this.i++;
    if (this.i === start) this.fail('expected a key name');
    return this.s.slice(start, this.i);
  }

  private str(): string {
    const q = this.s[this.i];
    let out = '';
    this.i++;
    while (this.i < this.s.length && this.s[this.i] !== q) {
      if (this.s[this.i] === '\\' && this.i + 1 < this.s.length) {
        const n = this.s[this.i + 1];
        out += n === 'n' ? '\n' : n === 't' ? '\t' : n;
        this.i += 2;
        continue;
      }
      out += this.s[this.i++];
    }
    if (this.s[this.i] !== q) this.fail('unterminated string');
    this.i++;
    return out;
  }

  private int(): number | undefined {
    const m = /^-?\d+/.exec(this.s.slice(this.i));
    if (!m) return undefined;
    this.i += m[0].length;
    return Number(m[0]);
  }

  private expectChar(c: string): void {
    this.ws();
    if (this.s[this.i] !== c) this.fail(`expected "${c}"`);
    this.i++;
  }

  private bracket(): Step {
    const c = this.s[this.i];
    if (c === '*') {
      this.i++;
      this.expectChar(']');
      return { t: 'wild' };
    }
    if (c === '?') {
      this.i++;
      this.ws();
      const expr = this.expr();
      this.expectChar(']');
      return { t: 'filter', expr };
    }
    const items: (string | number)[] = [];
    let slice = false;
    const parts: (number | undefined)[] = [];
    for (;;) {
      this.ws();
      const d = this.s[this.i];
      if (d === '"' || d === "'") items.push(this.str());
      else if (d === ':') {
        slice = true;
        parts.push(undefined);
        this.i++;
        continue;
      } else {
        const n = this.int();
        if (n === undefined) {
          if (slice && this.s[this.i] === ']') {
            parts.push(undefined);
            break;
          }
          this.fail('expected a key, an index or a filter');
        }
        if (this.s[this.i] === ':' || slice) {
          slice = true;
          parts.push(n);
          this.ws();
          if (this.s[this.i] === ':') {
            this.i++;
            this.ws();
            if (this.s[this.i] === ']') {
              parts.push(undefined);
              break;
            }
          }
          continue;
        }
        items.push(n!);
      }
      this.ws();
      if (this.s[this.i] === ',') {
        this.i++;
        continue;
      }
      break;
    }
    this.expectChar(']');
    if (slice) return { t: 'slice', start: parts[0], end: parts[1], step: parts[2] };
    if (items.length === 1)
      return typeof items[0] === 'string' ? { t: 'key', name: items[0] } : { t: 'index', i: items[0] };
    return { t: 'union', items };
  }

  // Filter expressions: precedence || < && < comparison < + - < * / % < unary.
  expr(): Expr {
    return this.or();
  }

  private or(): Expr {
    return this.leftAssociative('||', () => this.and());
  }

  private and(): Expr {
    return this.leftAssociative('&&', () => this.cmp());
  }

  /** `operand (op operand)*`, grouped from the left. */
  private leftAssociative(op: '||' | '&&', operand: () => Expr): Expr {
    let l = operand();
    for (;;) {
      this.ws();
      if (this.s.startsWith(op, this.i)) {
        this.i += 2;
        l = { e: 'bin', op, l, r: operand() };
      } else return l;
    }
  }

  private cmp(): Expr {
    const l = this.add();
    this.ws();
    for (const op of ['==', '!=', '<=', '>=', '=~', '<', '>', 'in ']) {
      if (this.s.startsWith(op, this.i)) {
        this.i += op.length;
        return { e: 'bin', op: op.trim(), l, r: this.add() };
      }
    }
    return l;
  }

  private add(): Expr {
    let l = this.mul();
    for (;;) {
      this.ws();
      const c = this.s[this.i];
      if (c === '+' || c === '-') {
        this.i++;
        l = { e: 'bin', op: c, l, r: this.mul() };
      } else return l;
    }
  }

  private mul(): Expr {
    let l = this.unary();
    for (;;) {
      this.ws();
      const c = this.s[this.i];
      if (c === '*' || c === '/' || c === '%') {
        this.i++;
        l = { e: 'bin', op: c, l, r: this.unary() };
      } else return l;
    }
  }

  private unary(): Expr {
    this.ws();
    const c = this.s[this.i];
    if (c === '!') {
      this.i++;
      return { e: 'not', x: this.unary() };
    }
    if (c === '-' && !/\d/.test(this.s[this.i + 1] ?? '')) {
      this.i++;
      return { e: 'neg', x: this.unary() };
    }
    if (c === '(') {
      this.i++;
      const x = this.expr();
      this.expectChar(')');
      return x;
    }
    if (c === '@' || c === '$') {
      this.i++;
      return { e: 'path', root: c, steps: this.parseSteps(true) };
    }
    if (c === '"' || c === "'") return { e: 'lit', v: this.str() };
    const m = /^-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+)/.exec(this.s.slice(this.i));
    if (m) {
      this.i += m[0].length;
      return { e: 'lit', v: Number(m[0]) };
    }
    for (const [w, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.s.startsWith(w, this.i)) {
        this.i += w.length;
        return { e: 'lit', v };
      }
    }
    return this.fail('unexpected token in filter');
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Evaluation

function describe(v: Value): string {
  return textOf(v);
}

function sortedKeys(o: Record<string, Value>): string[] {
  return Object.keys(o).sort();
}

/** Applies one definite step; missing members are errors. */
function strictStep(v: Value, s: Step): Value {
  if (s.t === 'key') {
    if (isObject(v)) {
      if (!Object.prototype.hasOwnProperty.call(v, s.name)) throw new EvalError(`unknown key ${s.name}`);
      return v[s.name];
    }
    throw new EvalError(`unsupported value type ${describe(v)} for select, expected map[string]interface{}`);
  }
  if (s.t === 'index') {
    if (!Array.isArray(v))
      throw new EvalError(`unsupported value type ${describe(v)} for select, expected []interface{}`);
    const i = s.i < 0 ? v.length + s.i : s.i;
    if (i < 0 || i >= v.length) throw new EvalError(`index ${s.i} out of bounds`);
    return v[i];
  }
  throw new EvalError('unsupported step');
}

function children(v: Value, out: Value[]): void {
  if (Array.isArray(v)) for (const x of v) out.push(x);
  else if (isObject(v)) for (const k of sortedKeys(v)) out.push(v[k]);
}

function descendants(v: Value, out: Value[]): void {
  out.push(v);
  if (Array.isArray(v)) for (const x of v) descendants(x, out);
  else if (isObject(v)) for (const k of sortedKeys(v)) descendants(v[k], out);
}

/** Applies one step leniently to every value of `cur` (missing members are skipped). */
function lenientStep(cur: Value[], s: Step, root: Value): Value[] {
  const out: Value[] = [];
  for (const v of cur) {
    switch (s.t) {
      case 'key':
        if (isObject(v) && Object.prototype.hasOwnProperty.call(v, s.name)) out.push(v[s.name]);
        break;
      case 'index':
        if (Array.isArray(v)) {
          const i = s.i < 0 ? v.length + s.i : s.i;
          if (i >= 0 && i < v.length) out.push(v[i]);
        }
        break;
      case 'wild':
        children(v, out);
        break;
      case 'union':
        for (const it of s.items) {
          if (typeof it === 'string') {
            if (isObject(v) && Object.prototype.hasOwnProperty.call(v, it)) out.push(v[it]);
          } else if (Array.isArray(v)) {
            const i = it < 0 ? v.length + it : it;
            if (i >= 0 && i < v.length) out.push(v[i]);
          }
        }
        break;
      case 'slice':
        if (Array.isArray(v)) {
          const n = v.length;
          const step = s.step ?? 1;
          if (step === 0) break;
          const norm = (x: number) => (x < 0 ? Math.max(0, n + x) : Math.min(n, x));
          if (step > 0) {
            const a = s.start === undefined ? 0 : norm(s.start);
            const b = s.end === undefined ? n : norm(s.end);
            for (let i = a; i < b; i += step) out.push(v[i]);
          } else {
            const a = s.start === undefined ? n - 1 : Math.min(n - 1, s.start < 0 ? n + s.start : s.start);
            const b = s.end === undefined ? -1 : s.end < 0 ? n + s.end : s.end;
            for (let i = a; i > b; i += step) out.push(v[i]);
          }
        }
        break;
      case 'filter': {
        const items: Value[] = [];
        children(v, items);
        for (const x of items) if (truthy(evalExpr(s.expr, x, root))) out.push(x);
        break;
      }
      case 'recursive':
        descendants(v, out);
        break;
    }
  }
  return out;
}

function evalPath(steps: Step[], start: Value, root: Value): Value {
  // Inside filters a path is evaluated leniently: a missing member is undefined (no match).
  let cur: Value[] = [start];
  let definite = true;
  for (const s of steps) {
    if (s.t !== 'key' && s.t !== 'index') definite = false;
    cur = lenientStep(cur, s, root);
  }
  if (definite) return cur.length ? cur[0] : undefined;
  return cur;
}

function truthy(v: Value): boolean {
  if (v === null || v === undefined || v === false) return false;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'bigint') return v !== 0n;
  if (typeof v === 'string') return v !== '';
  return true;
}

function num(v: Value): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  return undefined;
}

function looseEqual(a: Value, b: Value): boolean {
  const x = num(a);
  const y = num(b);
  if (x !== undefined && y !== undefined) return x === y;
  if ((a === null || a === undefined) && (b === null || b === undefined)) return a === b || (a === null && b === null);
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return a === b;
  if (a instanceof DateTime || b instanceof DateTime) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The comparisons, on two numbers or two strings; undefined for any other operator. */
function order<T extends number | string>(op: string, x: T, y: T): boolean | undefined {
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    case '>=':
      return x >= y;
  }
  return undefined;
}

/** Division and remainder by zero give no value. */
function arithmetic(op: string, x: number, y: number): number | undefined {
  switch (op) {
    case '+':
      return x + y;
    case '-':
      return x - y;
    case '*':
      return x * y;
    case '/':
      return y === 0 ? undefined : x / y;
    case '%':
      return y === 0 ? undefined : x % y;
  }
  return undefined;
}

function evalExpr(e: Expr, cur: Value, root: Value): Value {
  switch (e.e) {
    case 'lit':
      return e.v;
    case 'path':
      return evalPath(e.steps, e.root === '@' ? cur : root, root);
    case 'not':
      return !truthy(evalExpr(e.x, cur, root));
    case 'neg': {
      const x = num(evalExpr(e.x, cur, root));
      return x === undefined ? undefined : -x;
    }
    case 'bin': {
      if (e.op === '&&') return truthy(evalExpr(e.l, cur, root)) && truthy(evalExpr(e.r, cur, root));
      if (e.op === '||') return truthy(evalExpr(e.l, cur, root)) || truthy(evalExpr(e.r, cur, root));
      const l = evalExpr(e.l, cur, root);
      const r = evalExpr(e.r, cur, root);
      switch (e.op) {
        case '==':
          return looseEqual(l, r);
        case '!=':
          return !looseEqual(l, r);
        case '=~':
          if (typeof l !== 'string' || typeof r !== 'string') return false;
          {
            return compileRegex(r).test(l);
          }
        case 'in':
          return Array.isArray(r) && r.some((x) => looseEqual(l, x));
      }
      const x = num(l);
      const y = num(r);
      if (x !== undefined && y !== undefined) return order(e.op, x, y) ?? arithmetic(e.op, x, y);
      if (typeof l === 'string' && typeof r === 'string') return e.op === '+' ? l + r : order(e.op, l, r);
      return undefined;
    }
  }
}

/** Evaluates a compiled path against already-decoded data. Definite paths give one value (missing → error). */
export function queryPath(data: Value, path: CompiledPath): Value {
  if (path.definite) {
    let v = data;
    for (const s of path.steps) v = strictStep(v, s);
    return v;
  }
  let cur: Value[] = [data];
  for (const s of path.steps) cur = lenientStep(cur, s, data);
  return cur;
}
