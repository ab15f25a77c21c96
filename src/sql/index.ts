/**
 * Public surface of the SQL front end: lexer + parsers for eKuiper 1.14's dialect, the immutable AST, and the
 * expression printer. No I/O.
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
