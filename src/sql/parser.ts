/**
 * Expression and SELECT parser for eKuiper 1.14's dialect (docs/sql.md §2, §4.1, §5.1), with the reference's error
 * texts (`found "-", expected expression.`, `limit should be integer`, …).
 *
 * Precedence (higher binds tighter, all left-associative): 5 `* / % &` and the postfix `[…]`, `->`, `.`;
 * 4 `+ - | ^`; 3 comparisons, [NOT] IN/BETWEEN/LIKE; 2 AND; 1 OR. Hence `2 * arr[0]` is `(2 * arr)[0]`.
 * BETWEEN bounds and the LIKE pattern are single operands; `IN operand` extends its operand with tighter
 * operators (`a IN b->c` is `a IN (b->c)`), `IN (…)` is always the list form.
 *
 * EXTENSIONS (accepted by Eddy, rejected by eKuiper; none changes the meaning of a query eKuiper accepts):
 * - a subscript whose index starts with an integer literal may continue with an expression (`arr[1 + i]`,
 *   `arr[0:n - 1]`); the reference only accepts a lone literal there;
 * - a searched CASE accepts a parenthesised bool condition (`WHEN (a > 1) THEN …`).
 * Everything else eKuiper rejects is rejected (`<>`, `IS NULL`, prefix `NOT`, unary minus on non-literals, a bare
 * `JOIN`, `OUTER`). Known differences, in queries the reference cannot run either:
 * - a subscript in operand position (`SELECT [0] FROM s`) is a syntax error;
 * - an operator of higher precedence right after `x BETWEEN lo AND hi`, `x IN (list)` or `x LIKE p` (e.g.
 *   `a BETWEEN 1 AND 5 + 1`) is a syntax error instead of an ill-formed tree;
 * - expressions nested deeper than MAX_DEPTH levels are rejected, so no later recursive pass can overflow.
 */
import {
  isBoolShaped,
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
} from './ast.js';
import { WINDOW_TYPES, windowFunctionType } from './windows.js';
import { childExprs } from './visit.js';
import { Cursor, tokenName } from './cursor.js';
import { quoteLit, SqlSyntaxError } from './errors.js';
import type { Token } from './lexer.js';
import { exprToString } from './print.js';
import { MAX_CASE_BRANCHES, MAX_EXPR_DEPTH, MAX_EXPR_NODES, MAX_SQL_LENGTH } from '../core/limits.js';

/** Deepest expression tree accepted; deeper input is an error rather than a stack overflow later on. */
export const MAX_DEPTH = MAX_EXPR_DEPTH;

const LEVEL_BY_OP: Readonly<Record<string, number>> = {
  '*': 5,
  '/': 5,
  '%': 5,
  '&': 5,
  '[': 5,
  '->': 5,
  '.': 5,
  '+': 4,
  '-': 4,
  '|': 4,
  '^': 4,
  '=': 3,
  '!=': 3,
  '<': 3,
  '<=': 3,
  '>': 3,
  '>=': 3,
};
const LEVEL_BY_KEYWORD: Readonly<Record<string, number>> = { IN: 3, BETWEEN: 3, LIKE: 3, NOT: 3, AND: 2, OR: 1 };

const JOIN_TYPES: Readonly<Record<string, JoinType>> = {
  INNER: 'inner',
  LEFT: 'left',
  RIGHT: 'right',
  FULL: 'full',
  CROSS: 'cross',
};

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

function posOf(t: Token): SourcePos {
  return { line: t.line, column: t.column };
}

function isIdent(t: Token): boolean {
  return t.kind === 'ident' || t.kind === 'qident';
}

function isOpTok(t: Token, op: string): boolean {
  return t.kind === 'op' && t.value === op;
}

/** Re-throws a syntax error from `f` with `prefix` in front of its message (eKuiper's wrapped errors). */
function wrapped<T>(prefix: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof SqlSyntaxError) throw new SqlSyntaxError(prefix + e.message, e.line, e.column);
    throw e;
  }
}

export class SelectParser {
  private readonly c: Cursor;
  private nesting = 0;
  /** expression nodes of the statement so far (core/limits.ts MAX_EXPR_NODES) */
  private exprNodes = 0;
  /** numbers the unnamed select fields (`kuiper_field_N`), shared with REPLACE items as in the reference */
  private unnamed = 0;
  /** window calls seen so far, by the call node that stands for them in the expression tree */
  private readonly windows = new Map<CallExpr, WindowExpr>();

  constructor(sql: string) {
    // refused before any token is read: the cost of everything after parsing grows with the text
    if (sql.length > MAX_SQL_LENGTH)
      throw new SqlSyntaxError(
        `statement is ${sql.length} characters long; SQL is limited to ${MAX_SQL_LENGTH} characters.`,
        1,
        1,
      );
    this.c = new Cursor(sql);
  }

  /** Parses a whole SELECT statement; text after a terminating `;` is ignored, as by the reference. */
  parseSelect(): SelectStatement {
    const c = this.c;
    const first = c.next();
    if (first.kind !== 'keyword' || first.value !== 'SELECT') {
      c.failAt(first, `Found ${quoteLit(first.lit)}, Expected SELECT.`);
    }
    const fields = this.parseFields();
    const fromTok = c.next();
    if (fromTok.kind !== 'keyword' || fromTok.value !== 'FROM') c.fail(fromTok, 'expected FROM.');
    const from = this.parseSource();
    const joins = this.parseJoins();
    const where = c.acceptKeyword('WHERE') ? this.parseCondition() : null;
    let dimensions: Dimension[] = [];
    if (c.acceptKeyword('GROUP')) {
      const by = c.next();
      if (by.kind !== 'keyword' || by.value !== 'BY') c.fail(by, 'expected BY statement.');
      dimensions = this.parseDimensions();
    }
    const having = c.acceptKeyword('HAVING') ? this.parseCondition() : null;
    let sorts: SortField[] = [];
    if (c.acceptKeyword('ORDER')) {
      const by = c.next();
      if (by.kind !== 'keyword' || by.value !== 'BY') c.fail(by, 'expected BY keyword.');
      sorts = this.parseSorts();
    }
    let limit: number | null = null;
    if (c.isKeyword('LIMIT')) {
      const kw = c.next();
      const e = this.parseCondition();
      if (e.kind !== 'integer') throw new SqlSyntaxError('limit should be integer', kw.line, kw.column);
      limit = Number(e.value);
    }
    const end = c.peek();
    if (!isOpTok(end, ';') && end.kind !== 'eof') c.fail(end, 'expected EOF.');
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
    do {
      const { expr, alias, name } = this.parseNamedExpr();
      fields.push({ expr, alias, name });
    } while (this.c.acceptOp(','));
    return fields;
  }

  /** `expr [AS alias]` with its output name (docs/sql.md §4.3), for select fields and REPLACE items. */
  private parseNamedExpr(): SelectField {
    const c = this.c;
    const expr = this.parseCondition();
    let alias: string | null = null;
    const asTok = c.peek();
    if (c.acceptKeyword('AS')) {
      const a = c.next();
      if (!isIdent(a)) c.fail(a, 'expected as alias.');
      if (expr.kind === 'wildcard') c.failAt(asTok, 'alias is not supported for *');
      alias = a.value;
    }
    let name: string;
    if (alias !== null) name = alias;
    else if (expr.kind === 'wildcard') name = '*';
    else if (expr.kind === 'field') name = expr.name;
    else if (expr.kind === 'call') name = expr.name.toLowerCase();
    else if (expr.kind === 'meta') name = expr.func;
    else name = `kuiper_field_${this.unnamed++}`;
    return { expr, alias, name };
  }

  /** `name_part { name_part } [AS alias]`, a name part being an identifier or one of `/ # +`. */
  private parseSource(): SourceRef {
    const c = this.c;
    const first = c.peek();
    let name = '';
    let alias: string | null = null;
    for (;;) {
      const t = c.peek();
      if (!(isIdent(t) || (t.kind === 'op' && (t.value === '/' || t.value === '#' || t.value === '+')))) break;
      c.next();
      name += t.value;
      if (c.acceptKeyword('AS')) {
        const a = c.next();
        if (!isIdent(a)) c.failAt(a, `found ${quoteLit(t.lit)}, expected JOIN key word.`);
        alias = a.value;
      }
    }
    return { name, alias, pos: posOf(first) };
  }

  private parseJoins(): JoinClause[] {
    const c = this.c;
    const joins: JoinClause[] = [];
    for (;;) {
      const t = c.peek();
      const type = t.kind === 'keyword' ? JOIN_TYPES[t.value] : undefined;
      if (!type) return joins;
      c.next();
      const j = c.next();
      if (j.kind !== 'keyword' || j.value !== 'JOIN') c.failAt(j, `found ${quoteLit(t.lit)}, expected JOIN key word.`);
      const source = this.parseSource();
      let on: Expr | null = null;
      const onTok = c.peek();
      if (c.acceptKeyword('ON')) {
        if (type === 'cross') c.failAt(onTok, 'On expression is not required for cross join type.');
        on = this.parseCondition();
      }
      joins.push({ type, source, on });
    }
  }

  private parseDimensions(): Dimension[] {
    const dims: Dimension[] = [];
    do {
      const e = this.parseCondition();
      const w = e.kind === 'call' ? this.windows.get(e) : undefined;
      dims.push(w ?? e);
    } while (this.c.acceptOp(','));
    return dims;
  }

  /** ORDER BY items: each starts with an identifier; commas between them are optional, as in the reference. */
  private parseSorts(): SortField[] {
    const c = this.c;
    const sorts: SortField[] = [];
    for (;;) {
      const t = c.peek();
      if (isOpTok(t, ',')) {
        c.next();
        continue;
      }
      if (!isIdent(t)) return sorts;
      const expr = this.parseCondition();
      let ascending = true;
      if (c.acceptKeyword('DESC')) ascending = false;
      else c.acceptKeyword('ASC');
      sorts.push({ expr, ascending });
    }
  }

  // -------------------------------------------------------------------------------------------- expressions

  /** A full expression, its tree depth checked. */
  private parseCondition(): Expr {
    const e = this.parseExpr(1);
    this.exprNodes += checkDepth(e);
    if (this.exprNodes > MAX_EXPR_NODES) {
      const p = e.pos ?? { line: 1, column: 1 };
      throw new SqlSyntaxError(
        `statement has more than ${MAX_EXPR_NODES} expression nodes; split it into several rules.`,
        p.line,
        p.column,
      );
    }
    return e;
  }

  private enter(): void {
    if (++this.nesting > MAX_DEPTH) {
      this.c.failAt(this.c.peek(), `expression nested too deeply (more than ${MAX_DEPTH} levels).`);
    }
  }

  private parseExpr(minLevel: number): Expr {
    this.enter();
    const e = this.continueExpr(this.parseOperand(), minLevel);
    this.nesting--;
    return e;
  }

  private parseSingleOperand(): Expr {
    this.enter();
    const e = this.parseOperand();
    this.nesting--;
    return e;
  }

  /** Precedence climbing from an already parsed operand: operators of level ≥ minLevel fold left. */
  private continueExpr(first: Expr, minLevel: number): Expr {
    const c = this.c;
    let left = first;
    for (;;) {
      const t = c.peek();
      const level =
        t.kind === 'op' ? LEVEL_BY_OP[t.value] : t.kind === 'keyword' ? LEVEL_BY_KEYWORD[t.value] : undefined;
      if (level === undefined || level < minLevel) return left;
      c.next();
      const pos = posOf(t);
      if (isOpTok(t, '[')) {
        left = this.parseSubscript(left, pos);
      } else if (isOpTok(t, '->') || isOpTok(t, '.')) {
        const m = c.next();
        if (!isIdent(m)) c.fail(m, 'expected expression.');
        left = { kind: 'navigate', object: left, member: m.value, dot: t.value === '.', pos };
      } else if (
        t.kind === 'keyword' &&
        (t.value === 'NOT' || t.value === 'IN' || t.value === 'BETWEEN' || t.value === 'LIKE')
      ) {
        let word = t.value;
        const negated = word === 'NOT';
        if (negated) {
          const w = c.next();
          if (w.kind !== 'keyword' || (w.value !== 'IN' && w.value !== 'BETWEEN' && w.value !== 'LIKE')) {
            c.fail(w, 'expected expression');
          }
          word = w.value;
        }
        if (word === 'LIKE') {
          left = { kind: 'like', negated, value: left, pattern: this.parseSingleOperand(), pos };
          this.rejectTighterOperator('LIKE');
        } else if (word === 'BETWEEN') {
          const low = this.parseSingleOperand();
          const and = c.next();
          if (and.kind !== 'keyword' || and.value !== 'AND') {
            c.failAt(and, `expect AND expression after between but found ${tokenName(and)}`);
          }
          const high = this.parseSingleOperand();
          left = { kind: 'between', negated, value: left, low, high, pos };
          this.rejectTighterOperator('BETWEEN');
        } else {
          left = this.parseInRhs(left, negated, pos);
        }
      } else {
        const right = this.parseExpr(level + 1);
        left = { kind: 'binary', op: t.value as BinaryOp, left, right, pos };
      }
    }
  }

  /** After `IN` / `NOT IN`: a parenthesised list, or an operand extended by tighter operators. */
  private parseInRhs(value: Expr, negated: boolean, pos: SourcePos): Expr {
    const c = this.c;
    if (c.acceptOp('(')) {
      const list: Expr[] = [];
      for (;;) {
        list.push(wrapped('expect elements for IN expression, but ', () => this.parseExpr(1)));
        if (!c.acceptOp(',')) break;
      }
      const close = c.next();
      if (!isOpTok(close, ')')) c.failAt(close, `expect ) for IN expression, but got ${quoteLit(close.lit)}`);
      this.rejectTighterOperator('IN');
      return { kind: 'in', negated, value, list, array: null, pos };
    }
    const operand = wrapped('expect expression after IN, but got error ', () => this.parseSingleOperand());
    this.enter();
    const array = this.continueExpr(operand, 4);
    this.nesting--;
    return { kind: 'in', negated, value, list: null, array, pos };
  }

  /** After `x BETWEEN lo AND hi`, `x IN (…)` or `x LIKE p` nothing of higher precedence may follow. */
  private rejectTighterOperator(after: string): void {
    const t = this.c.peek();
    const level = t.kind === 'op' ? LEVEL_BY_OP[t.value] : undefined;
    if (level !== undefined && level > 3) this.c.fail(t, `operator not allowed after ${after} expression.`);
  }

  /** After `[`: index, slice with optional bounds, or `[]`. */
  private parseSubscript(array: Expr, pos: SourcePos): Expr {
    const c = this.c;
    const first = c.peek();
    // the reference names a negative literal by its full text
    const firstLit =
      isOpTok(first, '-') && (c.peek(1).kind === 'integer' || c.peek(1).kind === 'float')
        ? '-' + c.peek(1).lit
        : first.lit;
    if (c.acceptOp(']')) return { kind: 'slice', array, start: null, end: null, colon: false, pos };
    let start: Expr | null = null;
    if (!isOpTok(first, ':')) {
      start = this.bracketPart(`The start index ${firstLit} is invalid in bracket expression.`);
      if (c.acceptOp(']')) return { kind: 'index', array, index: start, pos };
      if (!isOpTok(c.peek(), ':'))
        c.failAt(c.peek(), `Unexpected token ${quoteLit(firstLit)}. when parsing bracket expressions.`);
    }
    c.next(); // ':'
    const endTok = c.peek();
    if (c.acceptOp(']')) return { kind: 'slice', array, start, end: null, colon: true, pos };
    const end = this.bracketPart(`The end index ${endTok.lit} is invalid in bracket expression.`);
    const close = c.next();
    if (!isOpTok(close, ']')) c.failAt(close, `Found ${quoteLit(close.lit)}, expected right bracket.`);
    return { kind: 'slice', array, start, end, colon: true, pos };
  }

  /** An index or bound; a syntax error inside is reported as the reference does, with `message`. */
  private bracketPart(message: string): Expr {
    try {
      return this.parseExpr(1);
    } catch (e) {
      if (e instanceof SqlSyntaxError && !e.message.startsWith('expression nested too deeply')) {
        throw new SqlSyntaxError(message, e.line, e.column);
      }
      throw e;
    }
  }

  private parseOperand(): Expr {
    const c = this.c;
    const t = c.next();
    const pos = posOf(t);
    switch (t.kind) {
      case 'integer':
        return { kind: 'integer', value: toInt64(t.value), pos };
      case 'float':
        return { kind: 'float', value: toFloat(t), pos };
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
          const close = c.next();
          if (!isOpTok(close, ')')) c.fail(close, 'expected right paren.');
          return { kind: 'paren', expr: inner, pos };
        }
        if (t.value === '*') return this.parseWildcard(pos);
        if (t.value === '-') {
          // a negative number literal: only a number may follow
          const n = c.peek();
          if (n.kind === 'integer') {
            c.next();
            return { kind: 'integer', value: toInt64('-' + n.value), pos };
          }
          if (n.kind === 'float') {
            c.next();
            return { kind: 'float', value: -toFloat(n), pos };
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
    if (c.acceptOp('(')) return this.parseCall(t, pos);
    if (c.isOp('.')) {
      const n = c.peek(1);
      if (isOpTok(n, '*')) {
        c.next();
        c.next();
        return { kind: 'wildcard', stream: t.value, except: [], replace: [], pos };
      }
      if (isIdent(n)) {
        c.next();
        c.next();
        return { kind: 'field', stream: t.value, name: n.value, pos };
      }
    }
    return { kind: 'field', stream: null, name: t.value, pos };
  }

  /** After `*`: EXCEPT (names) and REPLACE (expr AS name, …) in any order; a repeated one replaces the earlier. */
  private parseWildcard(pos: SourcePos): Expr {
    const c = this.c;
    let except: string[] = [];
    let replace: ReplaceItem[] = [];
    for (;;) {
      if (c.acceptKeyword('EXCEPT')) {
        const lp = c.next();
        if (!isOpTok(lp, '(')) c.failAt(lp, `Found ${quoteLit(lp.lit)} after EXCEPT, expect left parentheses.`);
        except = [];
        for (;;) {
          const t = c.next();
          if (isIdent(t)) except.push(t.value);
          else if (isOpTok(t, ',')) continue;
          else if (isOpTok(t, ')')) break;
          else c.failAt(t, `Found ${quoteLit(t.lit)} in EXCEPT`);
        }
      } else if (c.acceptKeyword('REPLACE')) {
        const lp = c.next();
        if (!isOpTok(lp, '(')) c.failAt(lp, `Found ${quoteLit(lp.lit)} after REPLACE, expect left parentheses.`);
        replace = [];
        for (;;) {
          const f = this.parseNamedExpr();
          replace.push({ expr: f.expr, name: f.name });
          const t = c.next();
          if (isOpTok(t, ')')) break;
          if (!isOpTok(t, ',')) c.failAt(t, `Found ${quoteLit(t.lit)} in REPLACE`);
        }
      } else {
        return { kind: 'wildcard', stream: null, except, replace, pos };
      }
    }
  }

  /** After `name (`: arguments (a trailing comma is accepted), `)`, then OVER, or FILTER/OVER for windows. */
  private parseCall(nameTok: Token, pos: SourcePos): Expr {
    const c = this.c;
    const name = nameTok.value;
    const lower = name.toLowerCase();
    if (lower === 'meta' || lower === 'mqtt') return this.parseMeta(nameTok, pos);
    const args: Expr[] = [];
    for (;;) {
      if (c.acceptOp(')')) break;
      args.push(this.parseExpr(1));
      const t = c.next();
      if (isOpTok(t, ',')) continue;
      if (isOpTok(t, ')')) break;
      c.failAt(t, `found function call ${quoteLit(lower)}, expected ), but with ${quoteLit(t.lit)}.`);
    }
    const windowType = windowFunctionType(lower);
    if (windowType) {
      const call: CallExpr = { kind: 'call', name, args, over: null, pos };
      this.windows.set(call, this.finishWindow(call, windowType, lower, nameTok));
      return call;
    }
    const over = c.isKeyword('OVER') ? this.parseOver() : null;
    return { kind: 'call', name, args, over, pos };
  }

  /** Checks a window call's arguments (messages of the reference) and reads `FILTER (WHERE …)`, `OVER (WHEN …)`. */
  private finishWindow(call: CallExpr, type: WindowType, lname: string, start: Token): WindowExpr {
    const c = this.c;
    const fail = (msg: string): never => c.failAt(start, msg);
    const args = call.args;
    let unit: TimeUnit | null = null;
    let lengths: number[];
    if (!WINDOW_TYPES[type].timed) {
      const ints = args.map((a) => (a.kind === 'integer' ? Number(a.value) : null));
      if (args.length === 1) {
        if (ints[0] === null || ints[0] <= 0) fail(`Invalid parameter value ${exprToString(args[0])}.`);
      } else if (args.length === 2) {
        if (ints[0] === null || ints[1] === null) {
          fail(`Invalid parameter value ${exprToString(args[0])}, ${exprToString(args[1])}.`);
        } else if (ints[0] < ints[1]) {
          fail(`The second parameter value ${ints[1]} should be less than the first parameter ${ints[0]}.`);
        }
      } else {
        fail('Invalid parameter count.');
      }
      lengths = ints as number[];
    } else {
      const { arities } = WINDOW_TYPES[type];
      if (!arities.includes(args.length)) fail(`The arguments for ${lname} should be ${arities.join(' or ')}.`);
      const u = args[0];
      if (u.kind !== 'timeUnit') {
        return fail(
          `The 1st argument for ${lname} is expecting timer literal expression. One value of [dd|hh|mi|ss|ms].`,
        );
      }
      unit = u.unit;
      lengths = args.slice(1).map((a, i) => {
        if (a.kind !== 'integer')
          return fail(`The ${i + 1} argument for ${lname} is expecting interger literal expression.`);
        return Number(a.value);
      });
    }
    let filter: Expr | null = null;
    let trigger: Expr | null = null;
    if (c.acceptKeyword('FILTER')) {
      const lp = c.next();
      if (!isOpTok(lp, '(')) c.failAt(lp, `Found ${quoteLit(lp.lit)} after FILTER, expect parentheses.`);
      const w = c.next();
      if (w.kind !== 'keyword' || w.value !== 'WHERE')
        c.failAt(w, `Found ${quoteLit(w.lit)} after FILTER(, expect WHERE.`);
      filter = this.parseExpr(1);
      const rp = c.next();
      if (!isOpTok(rp, ')')) c.failAt(rp, `Found ${quoteLit(rp.lit)} after FILTER, expect right parentheses.`);
    }
    if (c.acceptKeyword('OVER')) {
      const lp = c.next();
      if (!isOpTok(lp, '(')) c.failAt(lp, `Found ${quoteLit(lp.lit)} after OVER, expect parentheses.`);
      const w = c.next();
      if (w.kind !== 'keyword' || w.value !== 'WHEN') c.failAt(w, `Found ${quoteLit(w.lit)} after OVER(, expect WHEN.`);
      trigger = this.parseExpr(1);
      const rp = c.next();
      if (!isOpTok(rp, ')')) c.failAt(rp, `Found ${quoteLit(rp.lit)} after OVER, expect right parentheses.`);
    }
    return { kind: 'window', type, name: call.name, unit, lengths, filter, trigger, pos: posOf(start) };
  }

  /** `OVER ( [PARTITION BY …] [ORDER BY …] [WHEN …] )`, not empty. */
  private parseOver(): OverClause {
    const c = this.c;
    c.next(); // OVER
    const lp = c.next();
    if (!isOpTok(lp, '(')) c.failAt(lp, `Found ${quoteLit(tokenName(lp))} after OVER, expect parentheses.`);
    const partitionBy: Expr[] = [];
    let orderBy: SortField[] = [];
    let when: Expr | null = null;
    if (c.acceptKeyword('PARTITION')) {
      const by = c.next();
      if (by.kind !== 'keyword' || by.value !== 'BY') c.fail(by, 'expected by after partition.');
      do partitionBy.push(this.parseExpr(1));
      while (c.acceptOp(','));
    }
    if (c.acceptKeyword('ORDER')) {
      const by = c.next();
      if (by.kind !== 'keyword' || by.value !== 'BY') c.fail(by, 'expected BY keyword.');
      orderBy = this.parseSorts();
    }
    if (c.acceptKeyword('WHEN')) when = this.parseExpr(1);
    const close = c.next();
    if (partitionBy.length === 0 && orderBy.length === 0 && when === null) {
      c.failAt(close, `Found ${quoteLit(tokenName(close))} after OVER (, expect partition by or when.`);
    }
    if (!isOpTok(close, ')'))
      c.failAt(close, `Found ${quoteLit(tokenName(close))}, expect right parentheses after OVER`);
    return { partitionBy, orderBy, when };
  }

  /** After `meta(` / `mqtt(`: a key path or `*` for meta, `topic` / `messageid` for mqtt. */
  private parseMeta(nameTok: Token, pos: SourcePos): Expr {
    const c = this.c;
    const func = nameTok.value.toLowerCase() === 'meta' ? 'meta' : 'mqtt';
    const first = c.peek();
    let arg: Expr;
    if (isOpTok(first, '*')) {
      c.next();
      const after = c.peek();
      if (after.kind === 'keyword' && (after.value === 'EXCEPT' || after.value === 'REPLACE')) {
        c.failAt(after, `"${after.value}" is not supported in meta function`);
      }
      if (func === 'mqtt') c.fail(first, 'expected topic or messageid.');
      arg = { kind: 'wildcard', stream: null, except: [], replace: [], pos: posOf(first) };
    } else if (func === 'mqtt') {
      const key = c.next();
      const k = isIdent(key) ? key.value.toLowerCase() : '';
      if (k !== 'topic' && k !== 'messageid') c.fail(key, 'expected topic or messageid.');
      arg = { kind: 'field', stream: null, name: key.value, pos: posOf(key) };
    } else {
      if (!isIdent(first)) c.fail(first, 'expected meta key.');
      arg = this.parseExpr(1);
      if (!isMetaPath(arg)) c.fail(first, 'expected meta key.');
    }
    const t = c.next();
    if (!isOpTok(t, ')'))
      c.failAt(t, `found function call ${quoteLit(func)}, expected ), but with ${quoteLit(t.lit)}.`);
    return { kind: 'meta', func, name: nameTok.value, arg, pos };
  }

  /** After `CASE`: WHEN/ELSE/END clauses with the reference's messages; a later ELSE replaces an earlier one. */
  private parseCase(pos: SourcePos): Expr {
    const c = this.c;
    const value = c.isKeyword('WHEN') ? null : this.parseExpr(1);
    const whens: WhenClause[] = [];
    let elseExpr: Expr | null = null;
    for (;;) {
      const t = c.next();
      if (t.kind === 'keyword' && t.value === 'WHEN') {
        const when = this.parseExpr(1);
        if (value === null && !isBoolShaped(when)) {
          c.failAt(t, 'invalid CASE expression, WHEN expression must be a bool condition');
        }
        const then = c.next();
        if (then.kind !== 'keyword' || then.value !== 'THEN')
          c.failAt(then, 'invalid CASE expression, THEN expected after WHEN');
        whens.push({ when, then: this.parseExpr(1) });
        if (whens.length > MAX_CASE_BRANCHES)
          c.failAt(t, `invalid CASE expression, more than ${MAX_CASE_BRANCHES} WHEN branches.`);
      } else if (t.kind === 'keyword' && t.value === 'ELSE') {
        if (whens.length === 0) c.failAt(t, 'invalid CASE expression, WHEN expected before ELSE');
        elseExpr = this.parseExpr(1);
      } else if (t.kind === 'keyword' && t.value === 'END') {
        if (whens.length === 0) c.failAt(t, 'invalid CASE expression, WHEN expected before END');
        return { kind: 'case', value, whens, elseExpr, pos };
      } else {
        c.failAt(t, 'invalid CASE expression, END expected');
      }
    }
  }
}

function isMetaPath(e: Expr): boolean {
  let cur = e;
  while (cur.kind === 'navigate') cur = cur.object;
  return cur.kind === 'field';
}

/** An integer literal's value; out-of-range literals saturate at the int64 bounds, as Go's Atoi leaves them. */
function toInt64(text: string): bigint {
  const v = BigInt(text);
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return v;
}

function toFloat(t: Token): number {
  // digits with more than one dot (`1.2.3`) are one malformed token
  if (t.value.indexOf('.') !== t.value.lastIndexOf('.')) {
    throw new SqlSyntaxError(`found ${quoteLit(t.lit)}, invalid number value.`, t.line, t.column);
  }
  return Number(t.value);
}

/** Rejects trees deeper than MAX_DEPTH (left-deep operator chains are built iteratively, so check here). */
function checkDepth(root: Expr): number {
  const stack: Array<[Expr, number]> = [[root, 1]];
  let nodes = 0;
  while (stack.length > 0) {
    nodes++;
    const [e, d] = stack.pop()!;
    if (d > MAX_DEPTH) {
      const p = e.pos ?? { line: 1, column: 1 };
      throw new SqlSyntaxError(`expression nested too deeply (more than ${MAX_DEPTH} levels).`, p.line, p.column);
    }
    for (const child of childExprs(e)) stack.push([child, d + 1]);
    // a meta key is no sub-expression (sql/visit.ts) but is written as one: its depth is bounded too
    if (e.kind === 'meta') stack.push([e.arg, d + 1]);
  }
  return nodes;
}

/** How many recently parsed SELECT texts keep their trees. */
const RECENT_SELECTS = 32;
const recentSelects = new Map<string, SelectStatement>();

/**
 * Parses a SELECT statement. Creating a rule reads its SQL in several places (the definition's checks, where it may
 * run, planning), so the trees of the last few texts are kept and handed out again: a tree is never changed after
 * parsing (the planner builds its own structures from it: test/plan/parse-cache.test.ts plans on frozen trees).
 */
export function parseSelect(sql: string): SelectStatement {
  const known = recentSelects.get(sql);
  if (known !== undefined) return known;
  const stmt = new SelectParser(sql).parseSelect();
  if (recentSelects.size >= RECENT_SELECTS) recentSelects.delete(recentSelects.keys().next().value!);
  recentSelects.set(sql, stmt);
  return stmt;
}

/** Parses one expression that spans the whole text, e.g. `a + 1 > b`. */
export function parseExpression(sql: string): Expr {
  return new SelectParser(sql).parseStandaloneExpr();
}
