/**
 * Public surface of the SQL front end: lexer + parsers for eKuiper 1.14's dialect, the immutable AST, and the
 * expression printer. No I/O.
 */
export * from './ast.js';
export { SqlSyntaxError, NotDdlStatementError } from './errors.js';
export { parseDdl } from './ddl.js';
