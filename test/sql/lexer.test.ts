import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Lexer, type Token } from '../../src/sql/lexer.js';

function tokens(sql: string): Token[] {
  const lx = new Lexer(sql);
  const out: Token[] = [];
  for (;;) {
    const t = lx.next();
    out.push(t);
    if (t.kind === 'eof') return out;
  }
}

const brief = (sql: string): string[] => tokens(sql).map((t) => `${t.kind}:${t.value}`);

describe('lexer', () => {
  test('token kinds: keywords upper-cased, identifiers as written, quoted identifiers never keywords', () => {
    assert.deepEqual(brief('select Sel `from` x1_y'), [
      'keyword:SELECT',
      'ident:Sel',
      'qident:from',
      'ident:x1_y',
      'eof:',
    ]);
    assert.deepEqual(
      tokens('from Frm').map((t) => t.lit),
      ['FROM', 'Frm', 'EOF'],
    );
    assert.deepEqual(brief('Dd hH mi Ss MS'), [
      'keyword:DD',
      'keyword:HH',
      'keyword:MI',
      'keyword:SS',
      'keyword:MS',
      'eof:',
    ]);
    assert.deepEqual(brief('null is outer distinct'), [
      'ident:null',
      'ident:is',
      'ident:outer',
      'ident:distinct',
      'eof:',
    ]);
  });

  test('numbers: digits and dots form one token; minus-dot-digits is one negative number', () => {
    assert.deepEqual(brief('12 1.5 5. .5 1e3'), [
      'integer:12',
      'float:1.5',
      'float:5.',
      'float:.5',
      'integer:1',
      'ident:e3',
      'eof:',
    ]);
    assert.deepEqual(brief('1.2.3 - .5 -1'), ['float:1.2.3', 'float:-.5', 'op:-', 'integer:1', 'eof:']);
  });

  test('operators, including the whitespace-tolerant and quirky ones', () => {
    assert.deepEqual(brief('+ - * / % & | ^ = != ! = ! < <= < = > >= > = <> -> - > . [ ] : ( ) , ; #'), [
      'op:+',
      'op:-',
      'op:*',
      'op:/',
      'op:%',
      'op:&',
      'op:|',
      'op:^',
      'op:=',
      'op:!=',
      'op:!=',
      'op:=',
      'op:<',
      'op:<=',
      'op:<=',
      'op:>',
      'op:>=',
      'op:>=',
      'op:<',
      'op:>',
      'op:->',
      'op:->',
      'op:.',
      'op:[',
      'op:]',
      'op::',
      'op:(',
      'op:)',
      'op:,',
      'op:;',
      'op:#',
      'eof:',
    ]);
  });

  test('comments, including "- -" and "/ *" with inner whitespace', () => {
    assert.deepEqual(brief('a -- x\nb /* y */ c - -d\ne / * f */ g'), [
      'ident:a',
      'ident:b',
      'ident:c',
      'ident:e',
      'ident:g',
      'eof:',
    ]);
  });

  test('illegal characters become single tokens with an empty literal', () => {
    assert.deepEqual(brief('_a $ @ 温'), ['illegal:_', 'ident:a', 'illegal:$', 'illegal:@', 'illegal:温', 'eof:']);
    assert.deepEqual(
      tokens('$').map((t) => t.lit),
      ['', 'EOF'],
    );
    assert.deepEqual(brief('a /* never closed'), ['ident:a', 'illegal:/*', 'eof:']);
  });

  test('strings: valid ones carry their value, malformed ones become badString tokens', () => {
    const [ok, bad, open] = tokens(`'it\\'s "x"' "\\q" "abc`);
    assert.deepEqual([ok.kind, ok.value], ['string', 'it\'s "x"']);
    assert.deepEqual([bad.kind, bad.lit], ['badString', 'invalid string: "\\q"']);
    assert.deepEqual([open.kind, open.lit], ['badString', '"abc']);
  });

  test('positions are 1-based line and column', () => {
    const ts = tokens('SELECT a,\n  "x" FROM\r\n\ts');
    assert.deepEqual(
      ts.map((t) => [t.lit, t.line, t.column]),
      [
        ['SELECT', 1, 1],
        ['a', 1, 8],
        [',', 1, 9],
        ['x', 2, 3],
        ['FROM', 2, 7],
        ['s', 3, 2],
        ['EOF', 3, 3],
      ],
    );
  });

  test('string tokens remember their quote', () => {
    const [d, s] = tokens(`"a" 'b'`);
    assert.deepEqual([d.quote, d.value, s.quote, s.value], ['"', 'a', "'", 'b']);
  });
});
