/**
 * Compact SQL rendering of the AST, for error messages and EXPLAIN (`Condition:{ a > 3 }`).
 *
 * The output parses back to the same tree (for trees the parser produces): parentheses are added only where the
 * tree needs them, identifiers that are keywords or not plain are backquoted, and `a - (-1)` is kept in parentheses
 * because `a - -1` starts a comment.
 */
import type { Dimension, Expr, OverClause, SelectStatement, SortField, SourceRef, WindowExpr } from './ast.js';
import { KEYWORDS } from './lexer.js';
import { quoteString } from './errors.js';
import { unhandledKind } from './visit.js';

const ATOM = 6;

function levelOf(e: Expr): number {
  switch (e.kind) {
    case 'binary':
      switch (e.op) {
        case 'OR':
          return 1;
        case 'AND':
          return 2;
        case '+':
        case '-':
        case '|':
        case '^':
          return 4;
        case '*':
        case '/':
        case '%':
        case '&':
          return 5;
        default:
          return 3;
      }
    case 'in':
    case 'between':
    case 'like':
      return 3;
    case 'navigate':
    case 'index':
    case 'slice':
      return 5;
    default:
      return ATOM;
  }
}

/** An identifier as it must be written: plain when possible, else backquoted. */
export function identToString(name: string): string {
  if (/^[A-Za-z][A-Za-z0-9_]*$/.test(name) && !KEYWORDS.has(name.toUpperCase())) return name;
  return '`' + name + '`';
}

function stringLit(s: string): string {
  return quoteString(s, (cp) => '\\u' + cp.toString(16).padStart(4, '0'));
}

function floatLit(v: number): string {
  if (Number.isInteger(v) && Math.abs(v) < 1e21) return `${v}.0`;
  return String(v);
}

/** `e` rendered where the grammar needs at least `min` precedence; lower ones get parentheses. */
function sub(e: Expr, min: number): string {
  const s = exprToString(e);
  return levelOf(e) >= min ? s : `(${s})`;
}

/** An operand that must be a single operand (BETWEEN bounds). */
function operand(e: Expr): string {
  return sub(e, ATOM);
}

function sortsToString(sorts: readonly SortField[]): string {
  return sorts.map((s) => `${exprToString(s.expr)}${s.ascending ? '' : ' DESC'}`).join(', ');
}

function overToString(o: OverClause): string {
  const parts: string[] = [];
  if (o.partitionBy.length > 0) parts.push(`PARTITION BY ${o.partitionBy.map(exprToString).join(', ')}`);
  if (o.orderBy.length > 0) parts.push(`ORDER BY ${sortsToString(o.orderBy)}`);
  if (o.when) parts.push(`WHEN ${exprToString(o.when)}`);
  return ` OVER (${parts.join(' ')})`;
}

export function exprToString(e: Expr): string {
  switch (e.kind) {
    case 'field':
      return e.stream === null ? identToString(e.name) : `${identToString(e.stream)}.${identToString(e.name)}`;
    case 'wildcard': {
      let s = e.stream === null ? '*' : `${identToString(e.stream)}.*`;
      if (e.except.length > 0) s += ` EXCEPT(${e.except.map(identToString).join(', ')})`;
      if (e.replace.length > 0) {
        s += ` REPLACE(${e.replace.map((r) => `${exprToString(r.expr)} AS ${identToString(r.name)}`).join(', ')})`;
      }
      return s;
    }
    case 'integer':
      return e.value.toString();
    case 'float':
      return floatLit(e.value);
    case 'string':
      return stringLit(e.value);
    case 'boolean':
      return e.value ? 'true' : 'false';
    case 'timeUnit':
      return e.unit.toLowerCase();
    case 'binary': {
      const lvl = levelOf(e);
      const left = sub(e.left, lvl);
      let right = sub(e.right, lvl + 1);
      // `- -1` would start a line comment and `/ *` a block comment
      if ((e.op === '-' && right.startsWith('-')) || (e.op === '/' && right.startsWith('*'))) right = `(${right})`;
      return `${left} ${e.op} ${right}`;
    }
    case 'navigate': {
      // `1.0.a` would scan as a malformed number
      const numeric = e.object.kind === 'integer' || e.object.kind === 'float';
      const object = e.dot && numeric ? `(${exprToString(e.object)})` : sub(e.object, 5);
      return `${object}${e.dot ? '.' : '->'}${identToString(e.member)}`;
    }
    case 'index':
      return `${sub(e.array, 5)}[${exprToString(e.index)}]`;
    case 'slice': {
      const inner = e.colon ? `${e.start ? exprToString(e.start) : ''}:${e.end ? exprToString(e.end) : ''}` : '';
      return `${sub(e.array, 5)}[${inner}]`;
    }
    case 'in': {
      const rhs = e.list ? `(${e.list.map(exprToString).join(', ')})` : sub(e.array as Expr, 4);
      return `${sub(e.value, 3)} ${e.negated ? 'NOT IN' : 'IN'} ${rhs}`;
    }
    case 'between':
      return `${sub(e.value, 3)} ${e.negated ? 'NOT BETWEEN' : 'BETWEEN'} ${operand(e.low)} AND ${operand(e.high)}`;
    case 'like':
      return `${sub(e.value, 3)} ${e.negated ? 'NOT LIKE' : 'LIKE'} ${operand(e.pattern)}`;
    case 'case': {
      let s = 'CASE';
      if (e.value) s += ` ${exprToString(e.value)}`;
      for (const w of e.whens) s += ` WHEN ${exprToString(w.when)} THEN ${exprToString(w.then)}`;
      if (e.elseExpr) s += ` ELSE ${exprToString(e.elseExpr)}`;
      return s + ' END';
    }
    case 'call':
      return `${identToString(e.name)}(${e.args.map(exprToString).join(', ')})${e.over ? overToString(e.over) : ''}`;
    case 'meta':
      return `${e.name}(${exprToString(e.arg)})`;
    case 'paren':
      return `(${exprToString(e.expr)})`;
    default:
      return unhandledKind(e);
  }
}

export function windowToString(w: WindowExpr): string {
  const args: string[] = [];
  if (w.unit) args.push(w.unit.toLowerCase());
  for (const n of w.lengths) args.push(String(n));
  let s = `${w.name}(${args.join(', ')})`;
  if (w.filter) s += ` FILTER (WHERE ${exprToString(w.filter)})`;
  if (w.trigger) s += ` OVER (WHEN ${exprToString(w.trigger)})`;
  return s;
}

function dimensionToString(d: Dimension): string {
  return d.kind === 'window' ? windowToString(d) : exprToString(d);
}

function sourceToString(s: SourceRef): string {
  // stream names made of `/ # +` parts are written as they were; plain names are quoted when needed
  const name =
    /^[A-Za-z0-9_/#+]+$/.test(s.name) && /^[A-Za-z/#+]/.test(s.name) && !KEYWORDS.has(s.name.toUpperCase())
      ? s.name
      : '`' + s.name + '`';
  return s.alias === null ? name : `${name} AS ${identToString(s.alias)}`;
}

/** The whole statement as one line of SQL. */
export function selectToString(stmt: SelectStatement): string {
  let s = `SELECT ${stmt.fields
    .map((f) => (f.alias === null ? exprToString(f.expr) : `${exprToString(f.expr)} AS ${identToString(f.alias)}`))
    .join(', ')} FROM ${sourceToString(stmt.from)}`;
  for (const j of stmt.joins) {
    s += ` ${j.type.toUpperCase()} JOIN ${sourceToString(j.source)}`;
    if (j.on) s += ` ON ${exprToString(j.on)}`;
  }
  if (stmt.where) s += ` WHERE ${exprToString(stmt.where)}`;
  if (stmt.dimensions.length > 0) s += ` GROUP BY ${stmt.dimensions.map(dimensionToString).join(', ')}`;
  if (stmt.having) s += ` HAVING ${exprToString(stmt.having)}`;
  if (stmt.sorts.length > 0) s += ` ORDER BY ${sortsToString(stmt.sorts)}`;
  if (stmt.limit !== null) s += ` LIMIT ${stmt.limit}`;
  return s;
}
