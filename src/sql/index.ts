/**
 * Public surface of the SQL front end: lexer + parsers for eKuiper 1.14's dialect, the immutable AST, and the
 * expression printer. No I/O. Every parse error is a `SqlSyntaxError` whose message is the reference's text and
 * whose `line`/`column` locate the offending token.
 *
 * README (SQL section) — what the parser reproduces from eKuiper 1.14:
 * - Lexical: `--` and block comments; `a - -1` is `a` plus a line comment and `a / *b` opens a block comment
 *   (whitespace is skipped after `-` and `/`); `-` [ws] `.` [ws] digits is one negative number, so `a - .5` is a
 *   syntax error (write `a - 0.5`); `! =`, `< =`, `> =`, `- >` with inner whitespace are operators; a lone `!` is
 *   `=`; `<>` is a syntax error; `1e3` is `1` followed by `e3`; `1.2.3` is "invalid number value"; integer
 *   literals beyond int64 saturate; `5.` and `.5` are floats; Go string escapes in both quote styles, any other
 *   backslash sequence (or a raw line break) makes an "invalid string"; backquoted identifiers never are keywords;
 *   `NULL`, `IS`, `OUTER`, `DISTINCT` are plain identifiers; `DD HH MI SS MS`, `END`, `FILTER`, `LIMIT`,
 *   `REPLACE`, `EXCEPT`, `LEFT`, `RIGHT` are reserved. Messages quote keywords upper-case and the end of input as
 *   `EOF`, e.g. `found "EOF", expected FROM.`
 * - Expressions: five left-associative levels with `[]`, `->` and `.` at the multiplicative level, so
 *   `2 * arr[0]` is `(2 * arr)[0]`; `&` multiplicative, `|` and `^` additive; comparisons chain; negative numbers
 *   only where an operand is expected (`-a` is `found "-", expected expression.`); no prefix NOT, no IS NULL;
 *   BETWEEN bounds and LIKE patterns are single operands; `IN (…)` is a list, `IN x->y` an array expression;
 *   a searched CASE needs bool conditions; trailing comma in call arguments accepted.
 * - Statements: mandatory `AS` for aliases; MQTT-like source names (`FROM a/+/b/#`); join kinds INNER, LEFT,
 *   RIGHT, FULL, CROSS only (no bare JOIN, no OUTER, no ON for CROSS); ORDER BY items start with an identifier
 *   (commas optional); LIMIT takes an integer literal; window calls checked as eKuiper does (arity, time unit,
 *   integer literals, COUNTWINDOW sizes) with `FILTER (WHERE …)` then `OVER (WHEN …)`; text after a terminating
 *   `;` is ignored. DDL with nested ARRAY/STRUCT types, trailing commas, schemaless `()`, mandatory (possibly
 *   empty) WITH, double-quoted option values, commas between options optional, unknown option keys rejected,
 *   last repeated option wins; DESCRIBE/EXPLAIN/DROP ignore text after the name.
 * Extensions (accepted by Eddy only; they change no query eKuiper accepts): an index or slice bound that starts
 * with an integer literal may continue (`arr[1 + i]`); a parenthesised searched-CASE condition
 * (`WHEN (a > 1)`). Differences, in texts eKuiper cannot run either: a subscript in operand position
 * (`SELECT [0] …`) and a tighter operator right after `BETWEEN … AND hi`, `IN (…)` or `LIKE p` are syntax errors;
 * expressions nested more than 1000 levels (or types 200 levels) are rejected; `KIND` must be scan or lookup.
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
