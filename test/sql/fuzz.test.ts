/**
 * Robustness: whatever text arrives over REST, the parsers either return a statement or throw SqlSyntaxError with
 * a position inside the text. Nothing else escapes (no TypeError, no RangeError), and every run terminates.
 * Input size is bounded per run; the runs together take a few seconds.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseDdl, parseExpression, parseSelect, parseStatement, SqlSyntaxError } from '../../src/sql/index.js';
import { DDLS, SELECTS } from './corpus.js';

const PARSERS: ReadonlyArray<(sql: string) => unknown> = [parseSelect, parseDdl, parseStatement, parseExpression];

function onlySyntaxErrors(sql: string): void {
  const lines = sql.split('\n');
  for (const parse of PARSERS) {
    try {
      parse(sql);
    } catch (e) {
      if (!(e instanceof SqlSyntaxError)) throw new Error(`non-syntax error for ${JSON.stringify(sql)}: ${String(e)}`);
      assert.ok(e.line >= 1 && e.line <= lines.length, `line ${e.line} outside the text ${JSON.stringify(sql)}`);
      assert.ok(e.column >= 1 && e.column <= lines[e.line - 1].length + 1, `column ${e.column} outside line ${e.line}`);
      assert.ok(e.message.length > 0);
    }
  }
}

/** Splits SQL into rough tokens (words, numbers, quoted texts, single characters); whitespace dropped. */
function roughTokens(sql: string): string[] {
  return sql.match(/[A-Za-z_][A-Za-z0-9_]*|[0-9.]+|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`|\S/g) ?? [];
}

const VOCAB = [
  'SELECT',
  'FROM',
  'WHERE',
  'GROUP',
  'BY',
  'HAVING',
  'ORDER',
  'LIMIT',
  'AS',
  'AND',
  'OR',
  'NOT',
  'IN',
  'BETWEEN',
  'LIKE',
  'CASE',
  'WHEN',
  'THEN',
  'ELSE',
  'END',
  'OVER',
  'PARTITION',
  'FILTER',
  'EXCEPT',
  'REPLACE',
  'JOIN',
  'INNER',
  'LEFT',
  'CROSS',
  'ON',
  'ss',
  'DD',
  'TRUE',
  'NULL',
  'IS',
  'CREATE',
  'STREAM',
  'TABLE',
  'WITH',
  'SHOW',
  'STREAMS',
  'DROP',
  'ARRAY',
  'STRUCT',
  'BIGINT',
  'DATASOURCE',
  'KIND',
  'tumblingwindow',
  'countwindow',
  'slidingwindow',
  'meta',
  'mqtt',
  'count',
  '(',
  ')',
  '[',
  ']',
  ',',
  ';',
  ':',
  '.',
  '*',
  '-',
  '--',
  '/',
  '/*',
  '*/',
  '+',
  '#',
  '!',
  '<>',
  '<',
  '=',
  '->',
  '"',
  "'",
  '`',
  '\\',
  '"\\d"',
  "'\\''",
  '0',
  '-1',
  '1.5',
  '.5',
  '1.2.3',
  '99999999999999999999',
  '1e3',
  '_x',
  '$',
  '温度',
  '`a b`',
  '"str"',
  '\n',
  '\t',
];

type Mutation =
  | { op: 'delete'; i: number }
  | { op: 'duplicate'; i: number }
  | { op: 'swap'; i: number; j: number }
  | { op: 'insert'; i: number; tok: string }
  | { op: 'replace'; i: number; tok: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('delete' as const), i: fc.nat() }),
  fc.record({ op: fc.constant('duplicate' as const), i: fc.nat() }),
  fc.record({ op: fc.constant('swap' as const), i: fc.nat(), j: fc.nat() }),
  fc.record({ op: fc.constant('insert' as const), i: fc.nat(), tok: fc.constantFrom(...VOCAB) }),
  fc.record({ op: fc.constant('replace' as const), i: fc.nat(), tok: fc.constantFrom(...VOCAB) }),
);

function mutate(sql: string, muts: readonly Mutation[]): string {
  const toks = roughTokens(sql);
  for (const m of muts) {
    if (toks.length === 0) break;
    const i = m.i % toks.length;
    switch (m.op) {
      case 'delete':
        toks.splice(i, 1);
        break;
      case 'duplicate':
        toks.splice(i, 0, toks[i]);
        break;
      case 'swap': {
        const j = m.j % toks.length;
        [toks[i], toks[j]] = [toks[j], toks[i]];
        break;
      }
      case 'insert':
        toks.splice(i, 0, m.tok);
        break;
      case 'replace':
        toks[i] = m.tok;
        break;
    }
  }
  return toks.join(' ');
}

const corpus = [...SELECTS, ...DDLS];

describe('fuzzing the parsers', () => {
  test('the corpus itself parses', () => {
    for (const sql of SELECTS) parseSelect(sql);
    for (const sql of DDLS) parseDdl(sql);
  });

  test('mutated valid statements: only SqlSyntaxError', { timeout: 60_000 }, () => {
    fc.assert(
      fc.property(fc.constantFrom(...corpus), fc.array(mutation, { minLength: 1, maxLength: 6 }), (sql, muts) => {
        onlySyntaxErrors(mutate(sql, muts));
      }),
      { numRuns: 1500 },
    );
  });

  test('mutated statements re-joined without spaces: only SqlSyntaxError', { timeout: 60_000 }, () => {
    fc.assert(
      fc.property(fc.constantFrom(...corpus), fc.array(mutation, { minLength: 1, maxLength: 4 }), (sql, muts) => {
        onlySyntaxErrors(mutate(sql, muts).replace(/ /g, ''));
      }),
      { numRuns: 500 },
    );
  });

  test('random token soup: only SqlSyntaxError', { timeout: 60_000 }, () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...VOCAB), { maxLength: 60 }), (toks) => {
        onlySyntaxErrors(toks.join(' '));
      }),
      { numRuns: 1500 },
    );
  });

  test('random printable and arbitrary unicode strings: only SqlSyntaxError', { timeout: 60_000 }, () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 100 })), (s) => {
        onlySyntaxErrors(s);
        onlySyntaxErrors('SELECT ' + s);
        onlySyntaxErrors('CREATE STREAM s (' + s);
      }),
      { numRuns: 300 },
    );
  });

  test('long hostile inputs terminate with a syntax error', { timeout: 60_000 }, () => {
    const hostile = [
      'SELECT ' + '('.repeat(20000) + 'a',
      'SELECT ' + 'a['.repeat(20000),
      'SELECT ' + 'f('.repeat(20000),
      'SELECT ' + 'CASE '.repeat(20000),
      'SELECT ' + '- '.repeat(20000),
      'SELECT ' + 'a->'.repeat(20000) + 'b FROM s',
      'SELECT ' + Array(20000).fill('a').join(' AND ') + ' FROM s',
      'SELECT * FROM s WHERE a IN (' + Array(20000).fill('1').join(',') + ')',
      'SELECT ' + '"'.repeat(20001),
      'SELECT ' + '/*'.repeat(20000),
      'CREATE STREAM s (' + 'a STRUCT('.repeat(20000),
    ];
    for (const sql of hostile) onlySyntaxErrors(sql);
  });
});
