import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { NotDdlStatementError, parseDdl, SqlSyntaxError } from '../../src/sql/index.js';
import { typeText } from '../../src/sql/schema.js';

function rejects(sql: string, message: string | RegExp): void {
  assert.throws(
    () => parseDdl(sql),
    (e: unknown) => {
      assert.ok(e instanceof SqlSyntaxError, `expected SqlSyntaxError for ${sql}, got ${String(e)}`);
      if (typeof message === 'string') assert.equal(e.message, message, sql);
      else assert.match(e.message, message, sql);
      return true;
    },
  );
}

function fieldsText(sql: string): string[] | null {
  const s = parseDdl(sql);
  assert.equal(s.kind, 'createStream');
  if (s.kind !== 'createStream') return null;
  return s.fields === null ? null : s.fields.map((f) => `${f.name} ${typeText(f.type)}`);
}

describe('CREATE STREAM / TABLE', () => {
  test('every field type, nested arrays and structs', () => {
    assert.deepEqual(
      fieldsText(
        'CREATE STREAM demo (a BIGINT, b float, c String, d DATETIME, e boolean, f BYTEA, ' +
          'g ARRAY(STRING), h array(array(bigint)), i STRUCT(x FLOAT, y ARRAY(STRUCT(z BOOLEAN))), ' +
          'j ARRAY(STRUCT(k BYTEA, l STRUCT(m DATETIME)))) WITH (DATASOURCE="demo")',
      ),
      [
        'a bigint',
        'b float',
        'c string',
        'd datetime',
        'e boolean',
        'f bytea',
        'g array(string)',
        'h array(array(bigint))',
        'i struct(x float, y array(struct(z boolean)))',
        'j array(struct(k bytea, l struct(m datetime)))',
      ],
    );
  });

  test('the whole statement: kind, name, fields, options', () => {
    assert.deepEqual(parseDdl('create table Tab1 (id bigint) WITH (TYPE="memory", KIND="lookup", KEY="id");'), {
      kind: 'createStream',
      streamKind: 'table',
      name: 'Tab1',
      fields: [{ name: 'id', type: { kind: 'bigint' } }],
      options: { TYPE: 'memory', KIND: 'lookup', KEY: 'id' },
    });
  });

  test('() is schemaless (fields null), WITH () is empty options', () => {
    const s = parseDdl('CREATE STREAM s () WITH ()');
    assert.deepEqual(s, { kind: 'createStream', streamKind: 'stream', name: 's', fields: null, options: {} });
  });

  test('trailing comma after the last field', () => {
    assert.deepEqual(fieldsText('CREATE STREAM s (a BIGINT, b STRING,) WITH ()'), ['a bigint', 'b string']);
    assert.deepEqual(fieldsText('CREATE STREAM s (a STRUCT(x BIGINT,), b STRING) WITH ()'), [
      'a struct(x bigint)',
      'b string',
    ]);
  });

  test('backquoted stream and field names, keywords allowed when quoted', () => {
    const s = parseDdl('CREATE STREAM `my stream` (`地址` STRUCT(`ss` BIGINT), `select` STRING) WITH ()');
    assert.equal(s.kind === 'createStream' && s.name, 'my stream');
    assert.deepEqual(fieldsText('CREATE STREAM `my stream` (`地址` STRUCT(`ss` BIGINT), `select` STRING) WITH ()'), [
      '地址 struct(ss bigint)',
      'select string',
    ]);
  });

  test('every option, names case-insensitive, typed values converted', () => {
    const s = parseDdl(
      'CREATE TABLE t () WITH (datasource="topic/#", Format="JSON", key="id", CONF_KEY="c1", TYPE="mqtt", ' +
        'STRICT_VALIDATION="TRUE", TIMESTAMP="ts", TIMESTAMP_FORMAT="YYYY-MM-dd", RETAIN_SIZE="3", SHARED="false", ' +
        'SCHEMAID="file.Msg", KIND="Scan", DELIMITER=";")',
    );
    assert.equal(s.kind, 'createStream');
    assert.deepEqual(s.kind === 'createStream' && s.options, {
      DATASOURCE: 'topic/#',
      FORMAT: 'JSON',
      KEY: 'id',
      CONF_KEY: 'c1',
      TYPE: 'mqtt',
      STRICT_VALIDATION: true,
      TIMESTAMP: 'ts',
      TIMESTAMP_FORMAT: 'YYYY-MM-dd',
      RETAIN_SIZE: 3,
      SHARED: false,
      SCHEMAID: 'file.Msg',
      KIND: 'scan',
      DELIMITER: ';',
    });
  });

  test('a repeated option: the last one wins; escapes in option values', () => {
    const s = parseDdl('CREATE STREAM s () WITH (FORMAT="json", FORMAT="binary", DATASOURCE="a\\"b")');
    assert.deepEqual(s.kind === 'createStream' && s.options, { FORMAT: 'binary', DATASOURCE: 'a"b' });
  });

  test('comments and line breaks are whitespace', () => {
    const s = parseDdl('/* c */ CREATE STREAM s (\n  a BIGINT -- first\n) WITH ()');
    assert.equal(s.kind === 'createStream' && s.fields?.length, 1);
  });

  test('unknown type names', () => {
    const msg = (t: string): string =>
      `found "${t}", expect valid stream field types(BIGINT | FLOAT | STRING | DATETIME | BOOLEAN | BYTEA | ARRAY | STRUCT).`;
    rejects('CREATE STREAM s (a INT) WITH ()', msg('INT'));
    rejects('CREATE STREAM s (a integer) WITH ()', msg('integer'));
    rejects('CREATE STREAM s (a DOUBLE) WITH ()', msg('DOUBLE'));
    rejects('CREATE STREAM s (a TEXT) WITH ()', msg('TEXT'));
    rejects('CREATE STREAM s (a TIMESTAMP) WITH ()', msg('TIMESTAMP'));
    rejects('CREATE STREAM s (a ARRAY(INT)) WITH ()', 'found "INT", expect stream data types.');
    rejects('CREATE STREAM s (a ss) WITH ()', msg('SS'));
    rejects('CREATE STREAM s (a) WITH ()', msg(')'));
  });

  test('option values must be double-quoted strings', () => {
    rejects("CREATE STREAM s () WITH (DATASOURCE='x')", 'found "x", expect string value in option.');
    rejects('CREATE STREAM s () WITH (RETAIN_SIZE=3)', 'found "3", expect string value in option.');
    rejects('CREATE STREAM s () WITH (SHARED=true)', 'found "TRUE", expect string value in option.');
  });

  test('unknown option keys, named upper-case', () => {
    const keys =
      'unknown option keys(DATASOURCE|FORMAT|KEY|CONF_KEY|SHARED|STRICT_VALIDATION|TYPE|TIMESTAMP|TIMESTAMP_FORMAT|RETAIN_SIZE|SCHEMAID).';
    rejects('CREATE STREAM s (a BIGINT) WITH (DATASOURCE="t", NOSUCHOPTION="1")', `found "NOSUCHOPTION", ${keys}`);
    rejects('CREATE STREAM s (a BIGINT) WITH (sources="users")', `found "SOURCES", ${keys}`);
  });

  test('commas between options are optional and may repeat, as in the reference', () => {
    const s = parseDdl('CREATE STREAM s () WITH (, FORMAT="json" TYPE="mqtt",, DATASOURCE="t",)');
    assert.deepEqual(s.kind === 'createStream' && s.options, { FORMAT: 'json', TYPE: 'mqtt', DATASOURCE: 't' });
  });

  test('text after a terminating ; is ignored', () => {
    assert.equal(parseDdl('CREATE STREAM s () WITH (TYPE="mqtt"); whatever ( ').kind, 'createStream');
    assert.equal(parseDdl('SHOW STREAMS; x').kind, 'showStreams');
  });

  test('typed option values are checked', () => {
    rejects('CREATE STREAM s () WITH (SHARED="yes")', 'found "yes", expect TRUE/FALSE value in SHARED option.');
    rejects(
      'CREATE STREAM demo (NAME string) WITH (STRICT_VALIDATION="true1")',
      'found "true1", expect TRUE/FALSE value in STRICT_VALIDATION option.',
    );
    rejects('CREATE TABLE t () WITH (RETAIN_SIZE="3.5")', 'found "3.5", expect number value in RETAIN_SIZE option.');
    rejects('CREATE TABLE t () WITH (KIND="cache")', 'found "cache", expect scan or lookup value in KIND option.');
    const s = parseDdl('CREATE TABLE t () WITH (RETAIN_SIZE="-2", SHARED="FaLsE")');
    assert.deepEqual(s.kind === 'createStream' && s.options, { RETAIN_SIZE: -2, SHARED: false });
  });

  test('structural errors name the offending token', () => {
    rejects('CREATE s', 'found "S", expected keyword stream or table.');
    rejects('CREATE STREAM', 'found "EOF", expected stream name.');
    rejects('CREATE TABLE ss () WITH ()', 'found "SS", expected stream name.');
    rejects('CREATE STREAM s WITH ()', 'found "WITH", expected lparen after stream name.');
    rejects('CREATE STREAM s (a BIGINT b STRING) WITH ()', 'found "b", expect comma or rparen.');
    rejects('CREATE STREAM s (a BIGINT)', 'found "EOF", expected is with.');
    rejects('CREATE STREAM s ()', 'found "EOF", expected is with.');
    rejects('CREATE STREAM demo (NAME string) WITHs (DATASOURCE="users")', 'found "WITHS", expected is with.');
    rejects('CREATE STREAM demo (NAME string)) WITH (DATASOURCE="users")', 'found ")", expect stream options.');
    rejects('CREATE STREAM s (a BIGINT) WITH', 'found "EOF", expect stream options.');
    rejects(
      'CREATE STREAM demo (USERID BIGINT,) WITH DATASOURCE="users")',
      'found "DATASOURCE", expect stream options.',
    );
    rejects('CREATE STREAM s (a BIGINT) WITH (FORMAT "json")', 'found "json", expect equals(=) in options.');
    rejects('CREATE STREAM s (a BIGINT) WITH () extra', 'found "extra", expected semicolon or EOF.');
    rejects('CREATE STREAM demo (USERID BIGINT,) WITH ());', 'found ")", expected semicolon or EOF.');
    rejects('CREATE STREAM s (ss BIGINT) WITH ()', 'found "SS", expect stream field name.');
    rejects('CREATE STREAM demo ((NAME string) WITH ()', 'found "(", expect stream field name.');
    rejects('CREATE STREAM s (a STRUCT()) WITH ()', 'found ")", expected is with.');
    rejects('CREATE STREAM s (a ARRAY(BIGINT) WITH ()', 'found "WITH", expect comma or rparen.');
    rejects('CREATE STREAM s (a ARRAY(BIGINT x)) WITH ()', 'found "x", expect rparen in array type definition.');
    rejects('CREATE STREAM s (a ARRAY(STRUCT(x BIGINT) y)) WITH ()', 'found "Y", expected is with.');
  });

  test('hostile nesting is an error, not a stack overflow', () => {
    rejects(`CREATE STREAM s (a ${'ARRAY('.repeat(10000)}BIGINT${')'.repeat(10000)}) WITH ()`, /nested too deeply/);
  });
});

describe('SHOW / DESCRIBE / EXPLAIN / DROP', () => {
  test('each statement for streams and tables, any case, optional ;', () => {
    assert.deepEqual(parseDdl('SHOW STREAMS'), { kind: 'showStreams', streamKind: 'stream' });
    assert.deepEqual(parseDdl('show tables;'), { kind: 'showStreams', streamKind: 'table' });
    assert.deepEqual(parseDdl('DESCRIBE STREAM s1'), { kind: 'describeStream', streamKind: 'stream', name: 's1' });
    assert.deepEqual(parseDdl('explain table t1;'), { kind: 'explainStream', streamKind: 'table', name: 't1' });
    assert.deepEqual(parseDdl('Drop Stream `a b`'), { kind: 'dropStream', streamKind: 'stream', name: 'a b' });
  });

  test('errors', () => {
    rejects('SHOW STREAM', 'found "STREAM", expected keyword streams or tables.');
    rejects('SHOW STREAMS x', 'found "x", expected semecolon or EOF.');
    rejects('DESCRIBE s1', 'found "S1", expected keyword stream or table.');
    rejects('DROP TABLE', 'found "EOF", expected table name.');
    rejects('EXPLAIN STREAM 1', 'found "1", expected stream name.');
  });

  test('DESCRIBE, EXPLAIN and DROP do not look past the name, as in the reference', () => {
    assert.deepEqual(parseDdl('DROP STREAM a b'), { kind: 'dropStream', streamKind: 'stream', name: 'a' });
  });

  test("anything that is not a stream statement is NotDdlStatementError with eKuiper's text", () => {
    for (const sql of ['SELECT * FROM s1', '', '   ', 'UPDATE x', '-- only a comment']) {
      assert.throws(
        () => parseDdl(sql),
        (e: unknown) => e instanceof NotDdlStatementError && e.message === `Invalid stream statement: ${sql}`,
      );
    }
  });
});
