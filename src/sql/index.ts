/**
 * Public surface of the SQL front end: lexer + parsers for eKuiper 1.14's dialect, the immutable AST, and the
 * expression printer. No I/O.
 *
 * README (SQL section) — what the parser reproduces from eKuiper 1.14:
 * - Lexical: `--` and `/* *\/` comments; `a - -1` is `a` plus a line comment and `a / *b` opens a block comment
 *   (whitespace is skipped after `-` and `/`); `! =`, `< =`, `> =`, `- >` with inner whitespace are operators; a
 *   lone `!` is `=`; `<>` is a syntax error; `1e3` is `1` followed by `e3`; `1.2.3` is "invalid number value";
 *   `5.` and `.5` are floats; Go string escapes in both quote styles, any other backslash sequence is
 *   "invalid string"; backquoted identifiers never are keywords; `NULL`, `IS`, `OUTER`, `DISTINCT` are plain
 *   identifiers; `DD HH MI SS MS`, `END`, `FILTER`, `LIMIT`, `REPLACE`, `EXCEPT`, `LEFT`, `RIGHT` are reserved.
 * - Expressions: five left-associative levels with `[]`, `->` and `.` at the multiplicative level, so
 *   `2 * arr[0]` is `(2 * arr)[0]`; `&` multiplicative, `|` and `^` additive; comparisons chain; negative numbers
 *   only where an operand is expected (`-a` is `found "-", expected expression.`); no prefix NOT, no IS NULL;
 *   BETWEEN bounds are single operands; LIKE and `IN operand` take an additive-level right side.
 * - Statements: mandatory `AS` for aliases; MQTT-like source names (`FROM a/+/b/#`); join kinds INNER, LEFT,
 *   RIGHT, FULL, CROSS only (no bare JOIN, no OUTER, no ON for CROSS); ORDER BY items start with an identifier;
 *   LIMIT takes an integer literal; window calls checked as eKuiper does (arity, time unit, integer literals,
 *   COUNTWINDOW sizes); DDL with nested ARRAY/STRUCT types, trailing comma, schemaless `()`, mandatory (possibly
 *   empty) WITH, double-quoted option values, unknown option keys rejected, last repeated option wins.
 * Extensions: none — whatever eKuiper rejects, Eddy rejects. Differences, all in texts eKuiper cannot run either:
 * a subscript in operand position (`SELECT [0] …`) and a tighter operator right after `BETWEEN … AND hi` or
 * `IN (…)` are syntax errors; expressions nested more than 1000 levels (or types 200 levels) are rejected.
 */
import type { Statement } from './ast.js';
import { Cursor } from './cursor.js';
import { parseDdl } from './ddl.js';
import { parseSelect } from './parser.js';

export * from './ast.js';
export { SqlSyntaxError, NotDdlStatementError } from './errors.js';
export { parseDdl } from './ddl.js';
export { parseSelect, parseExpression, MAX_DEPTH } from './parser.js';
export { exprToString, selectToString, windowToString, identToString } from './print.js';

/**
 * Parses a SELECT or a stream/table statement, chosen by the first word. Text starting with anything else is
 * parsed as a SELECT, so the error names what was expected (`found "X", expected SELECT.`).
 */
export function parseStatement(sql: string): Statement {
  const first = new Cursor(sql).peek();
  if (first.kind === 'keyword' && first.value === 'SELECT') return parseSelect(sql);
  if (first.kind === 'ident' && ['CREATE', 'SHOW', 'DESCRIBE', 'EXPLAIN', 'DROP'].includes(first.value.toUpperCase())) {
    return parseDdl(sql);
  }
  return parseSelect(sql);
}
