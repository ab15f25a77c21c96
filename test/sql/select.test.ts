import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSelect, parseStatement, SqlSyntaxError, type Dimension } from '../../src/sql/index.js';
import { sexp } from './sexp.js';

function rejects(sql: string, message: string | RegExp): void {
  assert.throws(
    () => parseSelect(sql),
    (e: unknown) => {
      assert.ok(e instanceof SqlSyntaxError, `expected SqlSyntaxError for ${sql}, got ${String(e)}`);
      if (typeof message === 'string') assert.equal(e.message, message, sql);
      else assert.match(e.message, message, sql);
      return true;
    },
  );
}

function dim(d: Dimension): string {
  if (d.kind !== 'window') return sexp(d);
  let s = `${d.type}(${[d.unit ?? '-', ...d.lengths].join(',')})`;
  if (d.filter) s += ` filter ${sexp(d.filter)}`;
  if (d.trigger) s += ` trigger ${sexp(d.trigger)}`;
  return s;
}

describe('select list', () => {
  test('output names: alias, column, last dotted segment, lower-case function, meta, kuiper_field_N, *', () => {
    const s = parseSelect(
      'SELECT a, s.b, x.y, c AS k, COUNT(*), Avg(a), meta(topic), a + 1, a->b, a[0], ' +
        'CASE WHEN a > 1 THEN 1 END, (a), a.b.c, 1, "s", *, s.* FROM s',
    );
    assert.deepEqual(
      s.fields.map((f) => f.name),
      [
        'a',
        'b',
        'y',
        'k',
        'count',
        'avg',
        'meta',
        'kuiper_field_0',
        'kuiper_field_1',
        'kuiper_field_2',
        'kuiper_field_3',
        'kuiper_field_4',
        'kuiper_field_5',
        'kuiper_field_6',
        'kuiper_field_7',
        '*',
        '*',
      ],
    );
    assert.deepEqual(
      s.fields.map((f) => f.alias),
      [null, null, null, 'k', null, null, null, null, null, null, null, null, null, null, null, null, null],
    );
  });

  test('aliases need AS and an identifier', () => {
    rejects('SELECT a b FROM s', 'found "b", expected FROM.');
    rejects('SELECT a AS FROM s', 'found "FROM", expected as alias.');
    rejects('SELECT a AS 1 FROM s', 'found "1", expected as alias.');
    const s = parseSelect('SELECT a AS `my col` FROM s');
    assert.equal(s.fields[0].name, 'my col');
  });

  test('* cannot take an alias', () => {
    rejects('SELECT * AS x FROM s', 'alias is not supported for *');
    rejects('SELECT s.* AS x FROM s', 'alias is not supported for *');
    rejects('SELECT * EXCEPT(a) AS x FROM s', 'alias is not supported for *');
  });

  test('wildcards with EXCEPT / REPLACE and other fields', () => {
    const s = parseSelect('SELECT * EXCEPT(a) REPLACE(b * 2 AS b), c + 1 AS d FROM s');
    assert.equal(sexp(s.fields[0].expr), '(* except[a] replace[(* b 2) as b])');
    assert.equal(sexp(s.fields[1].expr), '(+ c 1)');
  });

  test('no DISTINCT, no empty list', () => {
    rejects('SELECT DISTINCT a FROM s', 'found "a", expected FROM.');
    rejects('SELECT FROM s', 'found "FROM", expected expression.');
    rejects('SELECT `half FROM tb', 'found "EOF", expected FROM.');
  });
});

describe('FROM and JOIN', () => {
  test('plain, aliased and MQTT-topic-like source names', () => {
    assert.deepEqual(parseSelect('SELECT * FROM demo').from, {
      name: 'demo',
      alias: null,
      pos: { line: 1, column: 15 },
    });
    assert.equal(parseSelect('SELECT * FROM topic/sensor1').from.name, 'topic/sensor1');
    assert.equal(parseSelect('SELECT * FROM a/+/b/# AS t').from.name, 'a/+/b/#');
    assert.equal(parseSelect('SELECT * FROM a/+/b/# AS t').from.alias, 't');
    assert.equal(parseSelect('SELECT * FROM `my stream`').from.name, 'my stream');
  });

  test('every join kind, optional ON, several joins in order', () => {
    const s = parseSelect(
      'SELECT * FROM s1 AS a INNER JOIN s2 ON a.id = s2.id LEFT JOIN s3 AS c ON a.x = c.x ' +
        'RIGHT JOIN s4 FULL JOIN s5 ON true CROSS JOIN t6 GROUP BY TUMBLINGWINDOW(ss, 10)',
    );
    assert.deepEqual(
      s.joins.map((j) => [j.type, j.source.name, j.source.alias, j.on && sexp(j.on)]),
      [
        ['inner', 's2', null, '(= a.id s2.id)'],
        ['left', 's3', 'c', '(= a.x c.x)'],
        ['right', 's4', null, null],
        ['full', 's5', null, 'true'],
        ['cross', 't6', null, null],
      ],
    );
  });

  test('join errors: ON with CROSS, bare JOIN, OUTER, comma joins, bad alias', () => {
    rejects('SELECT * FROM a CROSS JOIN b ON a.x = b.x', 'On expression is not required for cross join type.');
    rejects('SELECT * FROM a JOIN b ON a.x = b.x', 'found "JOIN", expected EOF.');
    rejects('SELECT * FROM a LEFT OUTER JOIN b ON a.x = b.x', 'found "LEFT", expected JOIN key word.');
    rejects('SELECT * FROM a, b', 'found ",", expected EOF.');
    rejects('SELECT * FROM s AS 1', 'found "s", expected JOIN key word.');
  });

  test('a missing source name parses as the empty name, for the planner to reject as an unknown stream', () => {
    assert.equal(parseSelect('SELECT * FROM').from.name, '');
    assert.equal(parseSelect('SELECT * FROM a INNER JOIN ON x = 1').joins[0].source.name, '');
  });
});

describe('WHERE, GROUP BY, HAVING, ORDER BY, LIMIT', () => {
  test('all clauses in order', () => {
    const s = parseSelect(
      'SELECT color, count(*) AS c FROM demo WHERE size > 3 GROUP BY color, TumblingWindow(ss, 10) ' +
        'HAVING count(*) > 1 ORDER BY c DESC, color LIMIT 5;',
    );
    assert.equal(s.where && sexp(s.where), '(> size 3)');
    assert.deepEqual(s.dimensions.map(dim), ['color', 'tumbling(SS,10)']);
    assert.equal(s.window?.name, 'TumblingWindow');
    assert.equal(s.having && sexp(s.having), '(> (count *) 1)');
    assert.deepEqual(
      s.sorts.map((x) => [sexp(x.expr), x.ascending]),
      [
        ['c', false],
        ['color', true],
      ],
    );
    assert.equal(s.limit, 5);
  });

  test('clauses out of order are rejected', () => {
    rejects('SELECT a FROM s GROUP BY a WHERE a > 1', 'found "WHERE", expected EOF.');
    rejects('SELECT a FROM s LIMIT 1 ORDER BY a', 'found "ORDER", expected EOF.');
    rejects('SELECT a FROM s GROUP a', 'found "a", expected BY statement.');
    rejects('SELECT a FROM s ORDER a', 'found "a", expected BY keyword.');
  });

  test('ORDER BY items must start with an identifier; ASC/DESC; commas optional as in the reference', () => {
    const s = parseSelect('SELECT a FROM s ORDER BY abs(a) ASC, `b` DESC, c->d');
    assert.deepEqual(
      s.sorts.map((x) => [sexp(x.expr), x.ascending]),
      [
        ['(abs a)', true],
        ['b', false],
        ['(-> c d)', true],
      ],
    );
    assert.deepEqual(
      parseSelect('SELECT a FROM s ORDER BY a b,, c').sorts.map((x) => sexp(x.expr)),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(parseSelect('SELECT a FROM s ORDER BY').sorts, []);
    rejects('SELECT a FROM s ORDER BY 1', 'found "1", expected EOF.');
    rejects('SELECT a FROM s ORDER BY (a)', 'found "(", expected EOF.');
  });

  test('LIMIT takes only an integer literal', () => {
    assert.equal(parseSelect('SELECT a FROM s LIMIT 0').limit, 0);
    rejects('SELECT a FROM s LIMIT a', 'limit should be integer');
    rejects('SELECT a FROM s LIMIT 1.5', 'limit should be integer');
    rejects('SELECT a FROM s LIMIT (5)', 'limit should be integer');
    rejects('SELECT a FROM s LIMIT', 'found "EOF", expected expression.');
    assert.equal(parseSelect('SELECT a FROM s LIMIT -1').limit, -1);
  });

  test('statement ends at ; (the rest is ignored, as by the reference) or at the end of text', () => {
    assert.equal(parseSelect('SELECT a FROM s;').limit, null);
    assert.equal(parseSelect('SELECT a FROM s; SELECT b FROM t').from.name, 's');
    rejects('SELECT a FROM s WHERE', 'found "EOF", expected expression.');
    rejects('a FROM s', 'Found "a", Expected SELECT.');
    rejects('', 'Found "EOF", Expected SELECT.');
  });
});

describe('windows', () => {
  test('every window type with its parameters as written, names in any case', () => {
    const q = (w: string): string => dim(parseSelect(`SELECT count(*) FROM s GROUP BY ${w}`).dimensions[0]);
    assert.equal(q('tumblingwindow(ss, 10)'), 'tumbling(SS,10)');
    assert.equal(q('HOPPINGWINDOW(mi, 10, 5)'), 'hopping(MI,10,5)');
    assert.equal(q('SlidingWindow(ms, 500)'), 'sliding(MS,500)');
    assert.equal(q('slidingwindow(hh, 1, 2)'), 'sliding(HH,1,2)');
    assert.equal(q('sessionwindow(dd, 2, 1)'), 'session(DD,2,1)');
    assert.equal(q('countwindow(5)'), 'count(-,5)');
    assert.equal(q('countwindow(5, 2)'), 'count(-,5,2)');
  });

  test('FILTER (WHERE …) and OVER (WHEN …)', () => {
    const q = (w: string): string => dim(parseSelect(`SELECT * FROM s GROUP BY ${w}`).dimensions[0]);
    assert.equal(
      q('SLIDINGWINDOW(ss, 5) FILTER (WHERE color = "red") OVER (WHEN size = 1)'),
      'sliding(SS,5) filter (= color "red") trigger (= size 1)',
    );
    assert.equal(q('SLIDINGWINDOW(ss, 5) OVER (WHEN size = 1)'), 'sliding(SS,5) trigger (= size 1)');
    assert.equal(q('countwindow(3) FILTER (WHERE a > 1)'), 'count(-,3) filter (> a 1)');
    rejects(
      'SELECT * FROM s GROUP BY SLIDINGWINDOW(ss, 5) OVER (WHEN a) FILTER (WHERE b)',
      'found "FILTER", expected EOF.',
    );
    rejects('SELECT * FROM s GROUP BY SLIDINGWINDOW(ss, 5) FILTER (a > 1)', 'Found "a" after FILTER(, expect WHERE.');
    rejects(
      'SELECT * FROM s GROUP BY COUNTWINDOW(3,1) FILTER where a > 1',
      'Found "WHERE" after FILTER, expect parentheses.',
    );
    rejects(
      'SELECT * FROM s GROUP BY COUNTWINDOW(3,1) FILTER (where a > 1',
      'Found "EOF" after FILTER, expect right parentheses.',
    );
    rejects(
      'SELECT * FROM s GROUP BY SLIDINGWINDOW(ss, 5) OVER (PARTITION BY a)',
      'Found "PARTITION" after OVER(, expect WHEN.',
    );
    rejects(
      'SELECT * FROM s GROUP BY SLIDINGWINDOW(ss, 5) OVER WHEN a',
      'Found "WHEN" after OVER, expect parentheses.',
    );
    rejects(
      'SELECT * FROM s GROUP BY SLIDINGWINDOW(ss, 5) OVER (WHEN a',
      'Found "EOF" after OVER, expect right parentheses.',
    );
    rejects('SELECT sum(f1) FILTER(WHERE a > 1) FROM s', 'found "FILTER", expected FROM.');
  });

  test('window with other dimensions; the first window counts', () => {
    const s = parseSelect('SELECT * FROM s GROUP BY a, countwindow(2), tumblingwindow(ss, 1), b->c');
    assert.deepEqual(s.dimensions.map(dim), ['a', 'count(-,2)', 'tumbling(SS,1)', '(-> b c)']);
    assert.equal(s.window?.type, 'count');
    assert.equal(parseSelect('SELECT * FROM s GROUP BY a').window, null);
  });

  test('argument checks', () => {
    rejects('SELECT * FROM s GROUP BY tumblingwindow(ss)', 'The arguments for tumblingwindow should be 2.');
    rejects('SELECT * FROM s GROUP BY HoppingWindow(ss, 1)', 'The arguments for hoppingwindow should be 3.');
    rejects('SELECT * FROM s GROUP BY sessionwindow(ss, 1, 2, 3)', 'The arguments for sessionwindow should be 3.');
    rejects('SELECT * FROM s GROUP BY slidingwindow(ss)', 'The arguments for slidingwindow should be 2 or 3.');
    rejects('SELECT * FROM s GROUP BY countwindow()', 'Invalid parameter count.');
    rejects('SELECT tumblingwindow(ss) FROM s', 'The arguments for tumblingwindow should be 2.');
    rejects(
      'SELECT * FROM s GROUP BY slidingwindow("mi", 5)',
      'The 1st argument for slidingwindow is expecting timer literal expression. One value of [dd|hh|mi|ss|ms].',
    );
    rejects(
      'SELECT * FROM s GROUP BY tumblingwindow(ss, a)',
      'The 1 argument for tumblingwindow is expecting interger literal expression.',
    );
    rejects(
      'SELECT * FROM s GROUP BY hoppingwindow(ss, 5, 1.5)',
      'The 2 argument for hoppingwindow is expecting interger literal expression.',
    );
    rejects('SELECT * FROM s GROUP BY countwindow(ss)', 'Invalid parameter value ss.');
    rejects('SELECT * FROM s GROUP BY countwindow(a, 1)', 'Invalid parameter value a, 1.');
    rejects(
      'SELECT * FROM s GROUP BY countwindow(3, 5)',
      'The second parameter value 5 should be less than the first parameter 3.',
    );
    rejects('SELECT * FROM s GROUP BY countwindow(0)', 'Invalid parameter value 0.');
  });

  test('a window call outside GROUP BY is an ordinary call for the planner to reject', () => {
    const s = parseSelect('SELECT tumblingwindow(ss, 1) FROM s');
    assert.equal(sexp(s.fields[0].expr), '(tumblingwindow #SS 1)');
  });
});

describe('parseStatement', () => {
  test('dispatches on the first word', () => {
    assert.equal(parseStatement('select a from s').kind, 'select');
    assert.equal(parseStatement('/* x */ SHOW STREAMS').kind, 'showStreams');
    assert.equal(parseStatement('DROP TABLE t').kind, 'dropStream');
    assert.throws(
      () => parseStatement('UPDATE t'),
      (e: unknown) => e instanceof SqlSyntaxError && e.message === 'Found "UPDATE", Expected SELECT.',
    );
  });
});

describe('multi-line positions', () => {
  test('errors point at the offending token', () => {
    try {
      parseSelect('SELECT a\nFROM s\nWHERE a <> 1');
      assert.fail('should throw');
    } catch (e) {
      assert.ok(e instanceof SqlSyntaxError);
      assert.deepEqual([e.message, e.line, e.column], ['found ">", expected expression.', 3, 10]);
    }
  });
});
