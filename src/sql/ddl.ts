/**
 * Stream and table statements (sql.md §3): CREATE, SHOW, DESCRIBE, EXPLAIN, DROP. Syntax only; whether a
 * definition makes sense (FORMAT registered, binary-format fields, lookup KEY) is the catalog's business.
 */
import type { StreamOptions } from '../catalog/types.js';
import type { DdlStatement, StreamKindWord } from './ast.js';
import { Cursor } from './cursor.js';
import { NotDdlStatementError, SqlSyntaxError } from './errors.js';
import type { Token } from './lexer.js';
import type { BasicTypeName, FieldType, StreamField } from './schema.js';

const TYPE_ERROR =
  'expect valid stream field types(BIGINT | FLOAT | STRING | DATETIME | BOOLEAN | BYTEA | ARRAY | STRUCT).';

/** The list eKuiper prints; KIND and DELIMITER are accepted too although it does not name them. */
const OPTION_KEYS_TEXT =
  'unknown option keys(DATASOURCE|FORMAT|KEY|CONF_KEY|SHARED|STRICT_VALIDATION|TYPE|TIMESTAMP|TIMESTAMP_FORMAT|RETAIN_SIZE|SCHEMAID).';

const STRING_OPTIONS = new Set([
  'DATASOURCE', 'FORMAT', 'KEY', 'CONF_KEY', 'TYPE', 'TIMESTAMP', 'TIMESTAMP_FORMAT', 'SCHEMAID', 'DELIMITER',
] as const);
type StringOptionName = 'DATASOURCE' | 'FORMAT' | 'KEY' | 'CONF_KEY' | 'TYPE' | 'TIMESTAMP' | 'TIMESTAMP_FORMAT' | 'SCHEMAID' | 'DELIMITER';

const BASIC_TYPES: Readonly<Record<string, BasicTypeName>> = {
  BIGINT: 'bigint',
  FLOAT: 'float',
  STRING: 'string',
  DATETIME: 'datetime',
  BOOLEAN: 'boolean',
  BYTEA: 'bytea',
};

const DDL_WORDS = new Set(['CREATE', 'SHOW', 'DESCRIBE', 'EXPLAIN', 'DROP']);

/** True when the text starts with a stream/table statement word (CREATE, SHOW, DESCRIBE, EXPLAIN, DROP). */
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
  const stmt = parseDdlStatement(c);
  c.expectEnd();
  return stmt;
}

function parseDdlStatement(c: Cursor): DdlStatement {
  const word = c.next().value.toUpperCase();
  switch (word) {
    case 'CREATE': {
      const streamKind = kindWord(c);
      const name = c.expectIdent(`expected ${streamKind} name.`).value;
      c.expectOp('(', `expected lparen after ${streamKind} name.`);
      const fields = parseFieldList(c);
      const withTok = c.next();
      if (!(withTok.kind === 'ident' && withTok.value.toUpperCase() === 'WITH')) c.fail(withTok, 'expected WITH.');
      c.expectOp('(', 'expected lparen after WITH.');
      const options = parseOptions(c);
      return { kind: 'createStream', streamKind, name, fields, options };
    }
    case 'SHOW': {
      const t = c.next();
      const w = t.kind === 'ident' ? t.value.toUpperCase() : '';
      if (w === 'STREAMS') return { kind: 'showStreams', streamKind: 'stream' };
      if (w === 'TABLES') return { kind: 'showStreams', streamKind: 'table' };
      return c.fail(t, 'expected keyword streams or tables.');
    }
    default: {
      const kind = word === 'DESCRIBE' ? 'describeStream' : word === 'EXPLAIN' ? 'explainStream' : 'dropStream';
      const streamKind = kindWord(c);
      const name = c.expectIdent(`expected ${streamKind} name.`).value;
      return { kind, streamKind, name };
    }
  }
}

function kindWord(c: Cursor): StreamKindWord {
  const t = c.next();
  const w = t.kind === 'ident' ? t.value.toUpperCase() : '';
  if (w === 'STREAM') return 'stream';
  if (w === 'TABLE') return 'table';
  return c.fail(t, 'expected keyword stream or table.');
}

/** After the `(` of the field list: `)` alone means schemaless (null); a trailing comma is accepted. */
function parseFieldList(c: Cursor): StreamField[] | null {
  if (c.acceptOp(')')) return null;
  const fields: StreamField[] = [];
  for (;;) {
    fields.push(parseField(c));
    const t = c.next();
    if (t.kind === 'op' && t.value === ')') return fields;
    if (t.kind !== 'op' || t.value !== ',') c.fail(t, 'expected comma or rparen.');
    if (c.acceptOp(')')) return fields;
  }
}

/** Deepest ARRAY/STRUCT nesting accepted, so that hostile input cannot overflow the stack. */
const MAX_TYPE_DEPTH = 200;

function parseField(c: Cursor, depth = 0): StreamField {
  const name = c.expectIdent('expect stream field name.').value;
  return { name, type: parseType(c, depth) };
}

function parseType(c: Cursor, depth: number): FieldType {
  const t = c.next();
  if (depth > MAX_TYPE_DEPTH) {
    throw new SqlSyntaxError(`field type nested too deeply (more than ${MAX_TYPE_DEPTH} levels).`, t.line, t.column);
  }
  const w = t.kind === 'ident' ? t.value.toUpperCase() : '';
  const basic = BASIC_TYPES[w];
  if (basic) return { kind: basic };
  if (w === 'ARRAY') {
    c.expectOp('(', 'expected lparen after ARRAY.');
    const element = parseType(c, depth + 1);
    c.expectOp(')', 'expected rparen after ARRAY element type.');
    return { kind: 'array', element };
  }
  if (w === 'STRUCT') {
    c.expectOp('(', 'expected lparen after STRUCT.');
    const fields: StreamField[] = [parseField(c, depth + 1)];
    for (;;) {
      const s = c.next();
      if (s.kind === 'op' && s.value === ')') return { kind: 'struct', fields };
      if (s.kind !== 'op' || s.value !== ',') c.fail(s, 'expected comma or rparen.');
      fields.push(parseField(c, depth + 1));
    }
  }
  return c.fail(t, TYPE_ERROR);
}

/** After the `(` of WITH: `name = "value"` pairs; the last of a repeated option wins. */
function parseOptions(c: Cursor): StreamOptions {
  const options: StreamOptions = {};
  if (c.acceptOp(')')) return options;
  for (;;) {
    const nameTok = c.next();
    const key = nameTok.kind === 'ident' || nameTok.kind === 'qident' ? nameTok.value.toUpperCase() : '';
    if (!isOptionName(key)) c.fail(nameTok, OPTION_KEYS_TEXT);
    c.expectOp('=', 'expected equal token.');
    const valueTok = c.next();
    if (!isDoubleQuotedString(valueTok)) c.fail(valueTok, `expect string value in option ${key}.`);
    setOption(c, options, key, valueTok);
    const t = c.next();
    if (t.kind === 'op' && t.value === ')') return options;
    if (t.kind !== 'op' || t.value !== ',') c.fail(t, 'expected comma or rparen.');
  }
}

type OptionName = StringOptionName | 'STRICT_VALIDATION' | 'SHARED' | 'RETAIN_SIZE' | 'KIND';

function isOptionName(key: string): key is OptionName {
  return (
    (STRING_OPTIONS as Set<string>).has(key) ||
    key === 'STRICT_VALIDATION' ||
    key === 'SHARED' ||
    key === 'RETAIN_SIZE' ||
    key === 'KIND'
  );
}

function isDoubleQuotedString(t: Token): boolean {
  return t.kind === 'string' && t.quote === '"';
}

function setOption(c: Cursor, options: StreamOptions, key: OptionName, t: Token): void {
  const v = t.value;
  switch (key) {
    case 'STRICT_VALIDATION':
    case 'SHARED': {
      const lower = v.toLowerCase();
      if (lower !== 'true' && lower !== 'false') c.fail(t, `expect bool value in option ${key}.`);
      options[key] = lower === 'true';
      return;
    }
    case 'RETAIN_SIZE':
      if (!/^[+-]?[0-9]+$/.test(v)) c.fail(t, `expect int value in option ${key}.`);
      options.RETAIN_SIZE = Number(v);
      return;
    case 'KIND': {
      const lower = v.toLowerCase();
      if (lower !== 'scan' && lower !== 'lookup') c.fail(t, 'expect scan or lookup value in option KIND.');
      options.KIND = lower;
      return;
    }
    default:
      options[key] = v;
  }
}
