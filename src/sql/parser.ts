/**
 * Expression and SELECT parser for eKuiper 1.14's dialect (sql.md §2, §4.1, §5.1).
 *
 * Extensions over eKuiper: none. Everything eKuiper rejects is rejected (`<>`, `IS NULL`, prefix `NOT`, unary
 * minus on non-literals, a bare `JOIN`, `OUTER`). Known differences from the reference, all in queries that
 * could not run there anyway:
 * - a subscript in operand position (`SELECT [0] FROM s`) is a syntax error;
 * - an operator of higher precedence right after `x BETWEEN lo AND hi` or `x IN (list)` (e.g.
 *   `a BETWEEN 1 AND 5 + 1`) is a syntax error instead of an ill-formed tree;
 * - expressions nested deeper than MAX_DEPTH levels are rejected, so no later recursive pass can overflow.
 *
 * Precedence (higher binds tighter, all left-associative): 5 `* / % &` and the postfix `[…]`, `->`, `.`;
 * 4 `+ - | ^`; 3 comparisons, [NOT] IN/BETWEEN/LIKE; 2 AND; 1 OR. Hence `2 * arr[0]` is `(2 * arr)[0]`.
 */
import {
  type BinaryOp,
  type CallExpr,
  type Dimension,
  type Expr,
  type JoinClause,
  type JoinType,
  type OverClause,
  type ReplaceItem,
  type SelectField,
  type SelectStatement,
  type SortField,
  type SourcePos,
  type SourceRef,
  type TimeUnit,
  type WhenClause,
  type WindowExpr,
  type WindowType,
  childExprs,
} from './ast.js';
import { Cursor } from './cursor.js';
import { quoteLit, SqlSyntaxError } from './errors.js';
import type { Token } from './lexer.js';

/** Deepest expression tree accepted; deeper input is an error rather than a stack overflow later on. */
export const MAX_DEPTH = 1000;

const LEVEL_BY_OP: Readonly<Record<string, number>> = {
  '*': 5, '/': 5, '%': 5, '&': 5, '[': 5, '->': 5, '.': 5,
  '+': 4, '-': 4, '|': 4, '^': 4,
  '=': 3, '!=': 3, '<': 3, '<=': 3, '>': 3, '>=': 3,
};
const LEVEL_BY_KEYWORD: Readonly<Record<string, number>> = { IN: 3, BETWEEN: 3, LIKE: 3, NOT: 3, AND: 2, OR: 1 };

const WINDOW_TYPES: Readonly<Record<string, WindowType>> = {
  TUMBLINGWINDOW: 'tumbling',
  HOPPINGWINDOW: 'hopping',
  SLIDINGWINDOW: 'sliding',
  SESSIONWINDOW: 'session',
  COUNTWINDOW: 'count',
};

const JOIN_TYPES: Readonly<Record<string, JoinType>> = {
  INNER: 'inner',
  LEFT: 'left',
  RIGHT: 'right',
  FULL: 'full',
  CROSS: 'cross',
};

const ORDINALS = ['1st', '2nd', '3rd'];

function posOf(t: Token): SourcePos {
  return { line: t.line, column: t.column };
}

export class SelectParser {
  private readonly c: Cursor;
  private nesting = 0;

  constructor(sql: string) {
    this.c = new Cursor(sql);
  }

  /** Parses a whole SELECT statement up to an optional `;` and the end of the text. */
  parseSelect(): SelectStatement {
    const c = this.c;
    c.expectKeyword('SELECT', 'expected SELECT.');
    const fields = this.parseFields();
    c.expectKeyword('FROM', 'expected FROM.');
    const from = this.parseSource();
    const joins: JoinClause[] = [];
    for (;;) {
      const t = c.peek();
      const type = t.kind === 'keyword' ? JOIN_TYPES[t.value] : undefined;
      if (!type) break;
      c.next();
      c.expectKeyword('JOIN', 'expected JOIN.');
      const source = this.parseSource();
      let on: Expr | null = null;
      const onTok = c.peek();
      if (c.acceptKeyword('ON')) {
        if (type === 'cross') {
          throw new SqlSyntaxError('On expression is not required for cross join type.', onTok.line, onTok.column);
        }
        on = this.parseCondition();
      }
      joins.push({ type, source, on });
    }
    const where = c.acceptKeyword('WHERE') ? this.parseCondition() : null;
    let dimensions: Dimension[] = [];
    if (c.acceptKeyword('GROUP')) {
      c.expectKeyword('BY', 'expected BY.');
      dimensions = this.parseDimensions();
    }
    const having = c.acceptKeyword('HAVING') ? this.parseCondition() : null;
    let sorts: SortField[] = [];
    if (c.acceptKeyword('ORDER')) {
      c.expectKeyword('BY', 'expected BY.');
      sorts = this.parseSorts();
    }
    let limit: number | null = null;
    if (c.acceptKeyword('LIMIT')) {
      const t = c.next();
      if (t.kind !== 'integer') throw new SqlSyntaxError('limit should be integer', t.line, t.column);
      limit = Number(t.value);
    }
    c.expectEnd();
    const window = dimensions.find((d): d is WindowExpr => d.kind === 'window') ?? null;
    return { kind: 'select', fields, from, joins, where, dimensions, window, having, sorts, limit };
  }

  /** Parses a lone expression that must span the whole text (used by tests and tools). */
  parseStandaloneExpr(): Expr {
    const e = this.parseCondition();
    const t = this.c.peek();
    if (t.kind !== 'eof') this.c.fail(t, 'expected EOF.');
    return e;
  }

  // ------------------------------------------------------------------------------------------------ clauses

  private parseFields(): SelectField[] {
    const fields: SelectField[] = [];
    let unnamed = 0;
    do {
      const expr = this.parseCondition();
      let alias: string | null = null;
      const asTok = this.c.peek();
      if (this.c.acceptKeyword('AS')) {
        if (expr.kind === 'wildcard') {
          throw new SqlSyntaxError('alias is not supported for *', asTok.line, asTok.column);
        }
        alias = this.c.expectIdent('expected alias.').value;
      }
      let name: string;
      if (alias !== null) name = alias;
      else if (expr.kind === 'wildcard') name = '*';
      else if (expr.kind === 'field') name = expr.name;
      else if (expr.kind === 'call') name = expr.name.toLowerCase();
      else if (expr.kind === 'meta') name = expr.func;
      else name = `kuiper_field_${unnamed++}`;
      fields.push({ expr, alias, name });
    } while (this.c.acceptOp(','));
    return fields;
  }

  /** `name_part { name_part } [AS alias]` where a name part is an identifier or one of `/ # +`. */
  private parseSource(): SourceRef {
    const c = this.c;
    const first = c.peek();
    let name = '';
    for (;;) {
      const t = c.peek();
      if (t.kind === 'ident' || t.kind === 'qident') name += t.value;
      else if (t.kind === 'op' && (t.value === '/' || t.value === '#' || t.value === '+')) name += t.value;
      else break;
      c.next();
    }
    if (name === '') c.fail(first, 'expected source name.');
    let alias: string | null = null;
    if (c.acceptKeyword('AS')) alias = c.expectIdent('expected alias.').value;
    return { name, alias, pos: posOf(first) };
  }

  private parseDimensions(): Dimension[] {
    const dims: Dimension[] = [];
    do {
      const start = this.c.peek();
      const e = this.parseCondition();
      const type = e.kind === 'call' ? WINDOW_TYPES[e.name.toUpperCase()] : undefined;
      if (e.kind === 'call' && type) dims.push(this.finishWindow(e, type, start));
      else dims.push(e);
    } while (this.c.acceptOp(','));
    return dims;
  }

  /** Checks a window call's arguments and reads its optional `FILTER (WHERE …)` and `OVER (WHEN …)`. */
  private finishWindow(call: CallExpr, type: WindowType, start: Token): WindowExpr {
    const lname = call.name.toLowerCase();
    const fail = (msg: string): never => {
      throw new SqlSyntaxError(msg, start.line, start.column);
    };
    const args = call.args;
    const arity: Record<WindowType, number[]> = {
      tumbling: [2],
      hopping: [3],
      session: [3],
      sliding: [2, 3],
      count: [1, 2],
    };
    const allowed = arity[type];
    if (!allowed.includes(args.length)) fail(`The arguments for ${lname} should be ${allowed.join(' or ')}.`);
    let unit: TimeUnit | null = null;
    let rest = args;
    if (type !== 'count') {
      const u = args[0];
      if (u.kind !== 'timeUnit') {
        fail(`The 1st argument for ${lname} is expecting timer literal expression. One value of [dd|hh|mi|ss|ms].`);
      } else {
        unit = u.unit;
      }
      rest = args.slice(1);
    }
    const lengths = rest.map((a, i) => {
      if (a.kind !== 'integer') {
        const n = i + (type === 'count' ? 0 : 1);
        fail(`The ${ORDINALS[n]} argument for ${lname} is expecting integer literal expression.`);
      }
      return Number((a as { value: bigint }).value);
    });
    if (type === 'count') {
      if (lengths[0] <= 0) fail(`The first parameter value ${lengths[0]} should be greater than 0.`);
      if (lengths.length === 2 && lengths[1] > lengths[0]) {
        fail(`The second parameter value ${lengths[1]} should be less than the first parameter ${lengths[0]}.`);
      }
    }
    let filter: Expr | null = null;
    let trigger: Expr | null = null;
    if (call.over) {
      // `OVER` written directly after the call: only `OVER (WHEN …)` is meaningful for a window
      if (call.over.partitionBy.length > 0 || call.over.orderBy.length > 0 || !call.over.when) {
        fail(`${lname} only supports OVER (WHEN condition).`);
      }
      trigger = call.over.when;
    } else {
      const c = this.c;
      if (c.acceptKeyword('FILTER')) {
        c.expectOp('(', 'expected (.');
        c.expectKeyword('WHERE', 'expected WHERE.');
        filter = this.parseCondition();
        c.expectOp(')', 'expected ).');
      }
      if (c.acceptKeyword('OVER')) {
        c.expectOp('(', 'expected (.');
        c.expectKeyword('WHEN', 'expected WHEN.');
        trigger = this.parseCondition();
        c.expectOp(')', 'expected ).');
      }
    }
    return { kind: 'window', type, name: call.name, unit, lengths, filter, trigger, pos: posOf(start) };
  }

  /** `sort { , sort }`; each sort starts with an identifier (a column, alias or call). */
  private parseSorts(): SortField[] {
    const sorts: SortField[] = [];
    do {
      const t = this.c.peek();
      if (t.kind !== 'ident' && t.kind !== 'qident') this.c.fail(t, 'expected field name.');
      const expr = this.parseCondition();
      let ascending = true;
      if (this.c.acceptKeyword('DESC')) ascending = false;
      else this.c.acceptKeyword('ASC');
      sorts.push({ expr, ascending });
    } while (this.c.acceptOp(','));
    return sorts;
  }

  // -------------------------------------------------------------------------------------------- expressions

  /** A full expression, its tree depth checked. */
  private parseCondition(): Expr {
    const e = this.parseExpr(1);
    checkDepth(e);
    return e;
  }

  /** Precedence climbing: operators of level ≥ minLevel are folded left-associatively. */
  private parseExpr(minLevel: number): Expr {
    const c = this.c;
    if (++this.nesting > MAX_DEPTH) {
      const t = c.peek();
      throw new SqlSyntaxError(`expression nested too deeply (more than ${MAX_DEPTH} levels).`, t.line, t.column);
    }
    let left = this.parseOperand();
    for (;;) {
      const t = c.peek();
      const level =
        t.kind === 'op' ? LEVEL_BY_OP[t.value] : t.kind === 'keyword' ? LEVEL_BY_KEYWORD[t.value] : undefined;
      if (level === undefined || level < minLevel) break;
      c.next();
      const pos = posOf(t);
      if (t.kind === 'op' && t.value === '[') {
        left = this.parseSubscript(left, pos);
      } else if (t.kind === 'op' && (t.value === '->' || t.value === '.')) {
        const m = c.expectIdent('expected field name.');
        left = { kind: 'navigate', object: left, member: m.value, dot: t.value === '.', pos };
      } else if (t.kind === 'keyword' && (t.value === 'NOT' || t.value === 'IN' || t.value === 'BETWEEN' || t.value === 'LIKE')) {
        let word = t.value;
        const negated = word === 'NOT';
        if (negated) {
          const w = c.next();
          if (w.kind !== 'keyword' || (w.value !== 'IN' && w.value !== 'BETWEEN' && w.value !== 'LIKE')) {
            c.fail(w, 'expected IN, BETWEEN or LIKE after NOT.');
          }
          word = w.value;
        }
        if (word === 'LIKE') {
          left = { kind: 'like', negated, value: left, pattern: this.parseExpr(4), pos };
        } else if (word === 'BETWEEN') {
          const low = this.parseOperandWithDepth();
          c.expectKeyword('AND', 'expected AND.');
          const high = this.parseOperandWithDepth();
          left = { kind: 'between', negated, value: left, low, high, pos };
          this.rejectTighterOperator('BETWEEN');
        } else if (c.isOp('(')) {
          c.next();
          const list: Expr[] = [this.parseExpr(1)];
          while (c.acceptOp(',')) list.push(this.parseExpr(1));
          c.expectOp(')', 'expected ).');
          left = { kind: 'in', negated, value: left, list, array: null, pos };
          this.rejectTighterOperator('IN');
        } else {
          left = { kind: 'in', negated, value: left, list: null, array: this.parseExpr(4), pos };
        }
      } else {
        const op = t.value as BinaryOp;
        const right = this.parseExpr(level + 1);
        left = { kind: 'binary', op, left, right, pos };
      }
    }
    this.nesting--;
    return left;
  }

  private parseOperandWithDepth(): Expr {
    if (++this.nesting > MAX_DEPTH) {
      const t = this.c.peek();
      throw new SqlSyntaxError(`expression nested too deeply (more than ${MAX_DEPTH} levels).`, t.line, t.column);
    }
    const e = this.parseOperand();
    this.nesting--;
    return e;
  }

  /** After `x BETWEEN lo AND hi` / `x IN (…)` nothing of higher precedence may follow. */
  private rejectTighterOperator(after: string): void {
    const t = this.c.peek();
    const level = t.kind === 'op' ? LEVEL_BY_OP[t.value] : undefined;
    if (level !== undefined && level > 3) this.c.fail(t, `operator not allowed after ${after} expression.`);
  }

  /** After `[`: index, slice with optional bounds, or `[]`. */
  private parseSubscript(array: Expr, pos: SourcePos): Expr {
    const c = this.c;
    if (c.acceptOp(']')) return { kind: 'slice', array, start: null, end: null, colon: false, pos };
    let start: Expr | null = null;
    if (!c.isOp(':')) {
      start = this.parseExpr(1);
      if (c.acceptOp(']')) return { kind: 'index', array, index: start, pos };
    }
    c.expectOp(':', 'expected ].');
    const end = c.isOp(']') ? null : this.parseExpr(1);
    c.expectOp(']', 'expected ].');
    return { kind: 'slice', array, start, end, colon: true, pos };
  }

  private parseOperand(): Expr {
    const c = this.c;
    const t = c.next();
    const pos = posOf(t);
    switch (t.kind) {
      case 'integer':
        return { kind: 'integer', value: parseInt64(t, false), pos };
      case 'float':
        return { kind: 'float', value: Number(t.value), pos };
      case 'string':
        return { kind: 'string', value: t.value, pos };
      case 'ident':
      case 'qident':
        return this.parseNamed(t);
      case 'keyword':
        switch (t.value) {
          case 'TRUE':
          case 'FALSE':
            return { kind: 'boolean', value: t.value === 'TRUE', pos };
          case 'DD':
          case 'HH':
          case 'MI':
          case 'SS':
          case 'MS':
            return { kind: 'timeUnit', unit: t.value, pos };
          case 'CASE':
            return this.parseCase(pos);
        }
        return c.fail(t, 'expected expression.');
      case 'op':
        if (t.value === '(') {
          const inner = this.parseExpr(1);
          c.expectOp(')', 'expected ).');
          return { kind: 'paren', expr: inner, pos };
        }
        if (t.value === '*') return this.parseWildcard(null, pos, true);
        if (t.value === '-') {
          // a negative number literal: only a number may follow
          const n = c.peek();
          if (n.kind === 'integer') {
            c.next();
            return { kind: 'integer', value: parseInt64(n, true), pos };
          }
          if (n.kind === 'float') {
            c.next();
            return { kind: 'float', value: -Number(n.value), pos };
          }
        }
        return c.fail(t, 'expected expression.');
      default:
        return c.fail(t, 'expected expression.');
    }
  }

  /** An identifier in operand position: column `c`, `s.c`, `s.*`, or a call. */
  private parseNamed(t: Token): Expr {
    const c = this.c;
    const pos = posOf(t);
    if (c.isOp('(')) {
      c.next();
      return this.parseCall(t, pos);
    }
    if (c.isOp('.')) {
      const n = c.peek(1);
      if (n.kind === 'op' && n.value === '*') {
        c.next();
        c.next();
        return { kind: 'wildcard', stream: t.value, except: [], replace: [], pos };
      }
      if (n.kind === 'ident' || n.kind === 'qident') {
        c.next();
        c.next();
        return { kind: 'field', stream: t.value, name: n.value, pos };
      }
    }
    return { kind: 'field', stream: null, name: t.value, pos };
  }

  /** `*` [EXCEPT (names)] [REPLACE (expr AS name, …)], in either order, each at most once. */
  private parseWildcard(stream: string | null, pos: SourcePos, allowModifiers: boolean): Expr {
    const c = this.c;
    let except: string[] = [];
    let replace: ReplaceItem[] = [];
    let seenExcept = false;
    let seenReplace = false;
    while (allowModifiers) {
      if (!seenExcept && c.acceptKeyword('EXCEPT')) {
        seenExcept = true;
        c.expectOp('(', 'expected (.');
        except = [c.expectIdent('expected field name.').value];
        while (c.acceptOp(',')) except.push(c.expectIdent('expected field name.').value);
        c.expectOp(')', 'expected ).');
      } else if (!seenReplace && c.acceptKeyword('REPLACE')) {
        seenReplace = true;
        c.expectOp('(', 'expected (.');
        replace = [];
        do {
          const expr = this.parseExpr(1);
          c.expectKeyword('AS', 'expected AS.');
          replace.push({ expr, name: c.expectIdent('expected field name.').value });
        } while (c.acceptOp(','));
        c.expectOp(')', 'expected ).');
      } else {
        break;
      }
    }
    return { kind: 'wildcard', stream, except, replace, pos };
  }

  /** After `name (`: arguments, `)`, optional OVER clause; meta()/mqtt() get their own node. */
  private parseCall(nameTok: Token, pos: SourcePos): Expr {
    const c = this.c;
    const name = nameTok.value;
    const lower = name.toLowerCase();
    if (nameTok.kind === 'ident' && (lower === 'meta' || lower === 'mqtt')) return this.parseMeta(nameTok, pos);
    const args: Expr[] = [];
    if (!c.acceptOp(')')) {
      args.push(this.parseExpr(1));
      while (c.acceptOp(',')) args.push(this.parseExpr(1));
      c.expectOp(')', 'expected ).');
    }
    let over: OverClause | null = null;
    if (c.isKeyword('OVER')) over = this.parseOver();
    return { kind: 'call', name, args, over, pos };
  }

  /** `OVER ( [PARTITION BY …] [ORDER BY …] [WHEN …] )`, not empty. */
  private parseOver(): OverClause {
    const c = this.c;
    c.next(); // OVER
    c.expectOp('(', 'expected (.');
    const partitionBy: Expr[] = [];
    let orderBy: SortField[] = [];
    let when: Expr | null = null;
    if (c.acceptKeyword('PARTITION')) {
      c.expectKeyword('BY', 'expected BY.');
      partitionBy.push(this.parseExpr(1));
      while (c.acceptOp(',')) partitionBy.push(this.parseExpr(1));
    }
    if (c.acceptKeyword('ORDER')) {
      c.expectKeyword('BY', 'expected BY.');
      orderBy = this.parseSorts();
    }
    if (c.acceptKeyword('WHEN')) when = this.parseExpr(1);
    const close = c.peek();
    if (partitionBy.length === 0 && orderBy.length === 0 && when === null) {
      c.fail(close, 'expected PARTITION BY, ORDER BY or WHEN in OVER clause.');
    }
    c.expectOp(')', 'expected ).');
    return { partitionBy, orderBy, when };
  }

  /** After `meta(` / `mqtt(`: a key path or `*` for meta, `topic` / `messageid` for mqtt. */
  private parseMeta(nameTok: Token, pos: SourcePos): Expr {
    const c = this.c;
    const func = nameTok.value.toLowerCase() === 'meta' ? 'meta' : 'mqtt';
    const first = c.peek();
    let arg: Expr;
    if (func === 'meta' && first.kind === 'op' && first.value === '*') {
      c.next();
      arg = { kind: 'wildcard', stream: null, except: [], replace: [], pos: posOf(first) };
    } else if (func === 'mqtt') {
      const key = c.next();
      const k = key.kind === 'ident' || key.kind === 'qident' ? key.value.toLowerCase() : '';
      if (k !== 'topic' && k !== 'messageid') c.fail(key, 'expected topic or messageid.');
      arg = { kind: 'field', stream: null, name: key.value, pos: posOf(key) };
    } else {
      if (first.kind !== 'ident' && first.kind !== 'qident') c.fail(first, 'expected meta key.');
      arg = this.parseExpr(1);
      if (!isMetaPath(arg)) c.fail(first, 'expected meta key.');
    }
    c.expectOp(')', 'expected ).');
    return { kind: 'meta', func, name: nameTok.value, arg, pos };
  }

  /** After `CASE`. */
  private parseCase(pos: SourcePos): Expr {
    const c = this.c;
    const value = c.isKeyword('WHEN') ? null : this.parseExpr(1);
    const whens: WhenClause[] = [];
    while (c.acceptKeyword('WHEN')) {
      const when = this.parseExpr(1);
      c.expectKeyword('THEN', 'expected THEN.');
      whens.push({ when, then: this.parseExpr(1) });
    }
    if (whens.length === 0) c.fail(c.peek(), 'expected WHEN.');
    const elseExpr = c.acceptKeyword('ELSE') ? this.parseExpr(1) : null;
    c.expectKeyword('END', 'expected END.');
    return { kind: 'case', value, whens, elseExpr, pos };
  }
}

function isMetaPath(e: Expr): boolean {
  let cur = e;
  while (cur.kind === 'navigate') cur = cur.object;
  return cur.kind === 'field';
}

const INT64_MAX = (1n << 63n) - 1n;

function parseInt64(t: Token, negative: boolean): bigint {
  const v = BigInt(t.value);
  if (v > (negative ? INT64_MAX + 1n : INT64_MAX)) {
    throw new SqlSyntaxError(`found ${quoteLit(t.value)}, invalid number value.`, t.line, t.column);
  }
  return negative ? -v : v;
}

/** Rejects trees deeper than MAX_DEPTH (left-deep operator chains are built iteratively, so check here). */
function checkDepth(root: Expr): void {
  const stack: Array<[Expr, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [e, d] = stack.pop()!;
    if (d > MAX_DEPTH) {
      const p = e.pos ?? { line: 1, column: 1 };
      throw new SqlSyntaxError(`expression nested too deeply (more than ${MAX_DEPTH} levels).`, p.line, p.column);
    }
    for (const child of childExprs(e)) stack.push([child, d + 1]);
  }
}

/** Parses a SELECT statement. */
export function parseSelect(sql: string): SelectStatement {
  return new SelectParser(sql).parseSelect();
}

/** Parses one expression that spans the whole text, e.g. `a + 1 > b`. */
export function parseExpression(sql: string): Expr {
  return new SelectParser(sql).parseStandaloneExpr();
}
