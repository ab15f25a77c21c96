/**
 * Stream and table statements (docs/sql.md §3): CREATE, SHOW, DESCRIBE, EXPLAIN, DROP, with the reference's messages
 * and leniencies (commas between options are optional, text after a terminating `;` is ignored, DESCRIBE /
 * EXPLAIN / DROP do not look past the name). Syntax only; whether a definition makes sense (FORMAT registered,
 * binary-format fields, lookup KEY) is the catalog's business.
 */
import type { StreamOptions } from './options.js';
import type { DdlStatement, StreamKindWord } from './ast.js';
import { Cursor } from './cursor.js';
import { NotDdlStatementError, quoteLit, SqlSyntaxError } from './errors.js';
import type { Token } from './lexer.js';
import type { BasicTypeName, FieldType, StreamField } from './schema.js';

const TYPE_ERROR =
  'expect valid stream field types(BIGINT | FLOAT | STRING | DATETIME | BOOLEAN | BYTEA | ARRAY | STRUCT).';

/** The list eKuiper prints; KIND and DELIMITER are accepted too although it does not name them. */
const OPTION_KEYS_TEXT =
  'unknown option keys(DATASOURCE|FORMAT|KEY|CONF_KEY|SHARED|STRICT_VALIDATION|TYPE|TIMESTAMP|TIMESTAMP_FORMAT|RETAIN_SIZE|SCHEMAID).';

type StringOptionName =
  'DATASOURCE' | 'FORMAT' | 'KEY' | 'CONF_KEY' | 'TYPE' | 'TIMESTAMP' | 'TIMESTAMP_FORMAT' | 'SCHEMAID' | 'DELIMITER';
type OptionName = StringOptionName | 'STRICT_VALIDATION' | 'SHARED' | 'RETAIN_SIZE' | 'KIND';

const OPTION_NAMES: ReadonlySet<string> = new Set<OptionName>([
  'DATASOURCE',
  'FORMAT',
  'KEY',
  'CONF_KEY',
  'TYPE',
  'TIMESTAMP',
  'TIMESTAMP_FORMAT',
  'SCHEMAID',
  'DELIMITER',
  'STRICT_VALIDATION',
  'SHARED',
  'RETAIN_SIZE',
  'KIND',
]);

const BASIC_TYPES: Readonly<Record<string, BasicTypeName>> = {
  BIGINT: 'bigint',
  FLOAT: 'float',
  STRING: 'string',
  DATETIME: 'datetime',
  BOOLEAN: 'boolean',
  BYTEA: 'bytea',
};

const DDL_WORDS = new Set(['CREATE', 'SHOW', 'DESCRIBE', 'EXPLAIN', 'DROP']);

/** Deepest ARRAY/STRUCT nesting accepted, so that hostile input cannot overflow the stack. */
const MAX_TYPE_DEPTH = 200;

/** True when the next token is a stream/table statement word (CREATE, SHOW, DESCRIBE, EXPLAIN, DROP). */
export function startsWithDdlWord(c: Cursor): boolean {
  const t = c.peek();
  return t.kind === 'ident' && DDL_WORDS.has(t.value.toUpperCase());
}

/**
 * Parses one stream/table statement. Throws `NotDdlStatementError` when the text does not start with a
 * statement word (e.g. a SELECT or an empty text), `SqlSyntaxError` for malformed statements.
 */
export function parseDdl(sql: string): DdlStatement {
  const c = new Cursor(sql);
  if (!startsWithDdlWord(c)) throw new NotDdlStatementError(sql);
  const word = c.next().value.toUpperCase();
  switch (word) {
    case 'CREATE':
      return parseCreate(c);
    case 'SHOW': {
      const t = c.next();
      const w = t.lit.toUpperCase();
      if (w !== 'STREAMS' && w !== 'TABLES') c.failAt(t, `found ${quoteLit(w)}, expected keyword streams or tables.`);
      const end = c.peek();
      if (!isOp(end, ';') && end.kind !== 'eof') c.fail(end, 'expected semecolon or EOF.');
      return { kind: 'showStreams', streamKind: w === 'STREAMS' ? 'stream' : 'table' };
    }
    default: {
      const kind = word === 'DESCRIBE' ? 'describeStream' : word === 'EXPLAIN' ? 'explainStream' : 'dropStream';
      const streamKind = kindWord(c);
      const name = c.expectIdent(`expected ${streamKind} name.`).value;
      return { kind, streamKind, name };
    }
  }
}

function isOp(t: Token, op: string): boolean {
  return t.kind === 'op' && t.value === op;
}

function kindWord(c: Cursor): StreamKindWord {
  const t = c.next();
  const w = t.lit.toUpperCase();
  if (w === 'STREAM') return 'stream';
  if (w === 'TABLE') return 'table';
  return c.failAt(t, `found ${quoteLit(w)}, expected keyword stream or table.`);
}

function parseCreate(c: Cursor): DdlStatement {
  const streamKind = kindWord(c);
  const name = c.expectIdent('expected stream name.').value;
  const fields = parseFieldList(c, 0);
  const options = parseOptions(c);
  const end = c.peek();
  if (!isOp(end, ';') && end.kind !== 'eof') c.fail(end, 'expected semicolon or EOF.');
  return { kind: 'createStream', streamKind, name, fields, options };
}

/**
 * `( field {, field} [,] )` — the top-level list (depth 0, followed by WITH, which it consumes) or a STRUCT's
 * member list (followed by `,` or `)`). An empty top-level list is schemaless (null).
 */
function parseFieldList(c: Cursor, depth: number): StreamField[] | null {
  const top = depth === 0;
  c.expectOp('(', 'expected lparen after stream name.');
  const fields: StreamField[] = [];
  for (;;) {
    if (c.acceptOp(')')) {
      // `()` or a trailing comma: only WITH may follow
      const t = c.next();
      if (!(t.kind === 'ident' && t.value.toUpperCase() === 'WITH') || !top) c.fail(t, 'expected is with.');
      return fields.length > 0 ? fields : null;
    }
    fields.push(parseField(c, depth));
    if (c.acceptOp(')')) {
      const t = c.peek();
      if (t.kind === 'ident' && t.value.toUpperCase() === 'WITH') {
        if (!top) c.fail(t, 'expect comma in create stream record statement.');
        c.next();
        return fields;
      }
      // a `,` or `)` is left to the caller: the enclosing list, or the options parser that rejects it
      if (isOp(t, ',') || isOp(t, ')')) return fields;
      c.failAt(t, `found ${quoteLit(t.lit.toUpperCase())}, expected is with.`);
    }
  }
}

/** `name type` followed by `,` (consumed) or `)` (left). */
function parseField(c: Cursor, depth: number): StreamField {
  const name = c.expectIdent('expect stream field name.').value;
  const type = parseFieldType(c, depth);
  const t = c.peek();
  if (isOp(t, ',')) c.next();
  else if (!isOp(t, ')')) c.fail(t, 'expect comma or rparen.');
  return { name, type };
}

function checkDepth(t: Token, depth: number): void {
  if (depth > MAX_TYPE_DEPTH) {
    throw new SqlSyntaxError(`field type nested too deeply (more than ${MAX_TYPE_DEPTH} levels).`, t.line, t.column);
  }
}

function parseFieldType(c: Cursor, depth: number): FieldType {
  const t = c.next();
  checkDepth(t, depth);
  const w = t.lit.toUpperCase();
  const basic = BASIC_TYPES[w];
  if (basic) return { kind: basic };
  if (w === 'ARRAY') return parseArrayType(c, depth);
  if (w === 'STRUCT') return parseStructType(c, depth);
  return c.fail(t, TYPE_ERROR);
}

/** After ARRAY: `( element )` where the element is a simple type, STRUCT(…) or ARRAY(…). */
function parseArrayType(c: Cursor, depth: number): FieldType {
  c.expectOp('(', 'expect stream data types.');
  const t = c.next();
  checkDepth(t, depth + 1);
  const w = t.lit.toUpperCase();
  let element: FieldType;
  let where: string;
  if (BASIC_TYPES[w]) {
    element = { kind: BASIC_TYPES[w] };
    where = 'array type definition';
  } else if (w === 'STRUCT') {
    element = parseStructType(c, depth + 1);
    where = 'struct of array type definition';
  } else if (w === 'ARRAY') {
    element = parseArrayType(c, depth + 1);
    where = 'array of array type definition';
  } else {
    return c.fail(t, 'expect stream data types.');
  }
  c.expectOp(')', `expect rparen in ${where}.`);
  return { kind: 'array', element };
}

/** After STRUCT: a member list, which must be followed by `,` or `)`. */
function parseStructType(c: Cursor, depth: number): FieldType {
  const fields = parseFieldList(c, depth + 1) ?? [];
  const t = c.peek();
  if (!isOp(t, ',') && !isOp(t, ')')) c.fail(t, 'expect comma in create stream record statement.');
  return { kind: 'struct', fields };
}

/** `( name = "value" … )`; commas are optional separators; the last of a repeated option wins. */
function parseOptions(c: Cursor): StreamOptions {
  const options: StreamOptions = {};
  const lp = c.next();
  if (!isOp(lp, '(')) c.fail(lp, 'expect stream options.');
  for (;;) {
    const t = c.next();
    if (isOp(t, ',')) continue;
    if (isOp(t, ')')) return options;
    const key = t.lit.toUpperCase();
    if (!(t.kind === 'ident' || t.kind === 'qident') || !OPTION_NAMES.has(key)) {
      c.failAt(t, `found ${quoteLit(key)}, ${OPTION_KEYS_TEXT}`);
    }
    c.expectOp('=', 'expect equals(=) in options.');
    const v = c.next();
    if (v.kind !== 'string' || v.quote !== '"') c.fail(v, 'expect string value in option.');
    setOption(c, options, key as OptionName, v);
  }
}

function setOption(c: Cursor, options: StreamOptions, key: OptionName, t: Token): void {
  const v = t.value;
  switch (key) {
    case 'STRICT_VALIDATION':
    case 'SHARED': {
      const upper = v.toUpperCase();
      if (upper !== 'TRUE' && upper !== 'FALSE') c.fail(t, `expect TRUE/FALSE value in ${key} option.`);
      options[key] = upper === 'TRUE';
      return;
    }
    case 'RETAIN_SIZE': {
      const n = /^[+-]?[0-9]+$/.test(v) ? BigInt(v) : null;
      if (n === null || n > (1n << 63n) - 1n || n < -(1n << 63n)) c.fail(t, `expect number value in ${key} option.`);
      options.RETAIN_SIZE = Number(n);
      return;
    }
    case 'KIND': {
      // eKuiper stores any value lower-cased; Eddy's catalog knows only these two
      const lower = v.toLowerCase();
      if (lower !== 'scan' && lower !== 'lookup') c.fail(t, 'expect scan or lookup value in KIND option.');
      options.KIND = lower;
      return;
    }
    default:
      options[key] = v;
  }
}
