import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, run, catalogOf, tuple, joined } from './helpers.js';
import type { Value, ValueObject } from '../../src/values/value.js';
import { StageError } from '../../src/plan/plan.js';

/** Value of `expr` over one schemaless event (undefined when omitted from the output). */
function val(expr: string, msg: ValueObject = {}, meta: ValueObject = {}): Value {
  const out = run(plan(`SELECT ${expr} AS r FROM s`), msg, meta);
  return out?.r;
}

/** The error message `expr` raises over one event. */
function err(expr: string, msg: ValueObject = {}): string {
  try {
    run(plan(`SELECT ${expr} AS r FROM s`), msg);
  } catch (e) {
    assert.ok(e instanceof StageError, `StageError expected, got ${String(e)}`);
    return e.message;
  }
  assert.fail(`no error for ${expr}`);
}

/** Whether `cond` keeps the event as a WHERE condition. */
function keeps(cond: string, msg: ValueObject = {}): boolean {
  return run(plan(`SELECT * FROM s WHERE ${cond}`), msg) !== null;
}

test('arithmetic keeps ints and floats apart (docs/sql.md §6.3)', () => {
  assert.equal(val('5 / 2'), 2n);
  assert.equal(val('a / 2', { a: 5 }), 2.5);
  assert.equal(val('-7 / 2'), -3n);
  assert.equal(val('-7 % 2'), -1n);
  assert.equal(val('5.5 % 2'), 1.5);
  assert.equal(val('a + b', { a: 1, b: 2.5 }), 3.5);
  assert.equal(val('3 * 4'), 12n);
  assert.equal(val('a - 1', { a: 10 }), 9);
  assert.equal(val('9223372036854775807 + 1'), -9223372036854775808n);
});

test('arithmetic errors carry the select prefix and the operand types', () => {
  assert.equal(
    err('size * 5', { size: 'string' }),
    'run Select error: alias: r expr: size * 5 meet error, err:invalid operation string(string) * int64(5)',
  );
  assert.match(err('a / 0', { a: 1 }), /err:divided by zero$/);
  assert.match(err('1 % 0'), /err:divided by zero$/);
  assert.match(err('"a" + "b"'), /invalid operation string\(a\) \+ string\(b\)/);
});

test('an unaliased field error has no alias part', () => {
  try {
    run(plan('SELECT a * 2 FROM s'), { a: 'x' });
    assert.fail('expected an error');
  } catch (e) {
    assert.match((e as Error).message, /^run Select error: expr: a \* 2 meet error, err:invalid operation/);
  }
});

test('null rules: arithmetic null, comparisons false (docs/sql.md §6.2)', () => {
  assert.equal(val('a + 1'), undefined);
  assert.equal(val('a = 1'), false);
  assert.equal(val('a != 1'), false);
  assert.equal(val('a < 1'), false);
  assert.equal(val('a >= 1'), false);
  assert.equal(val('a = b'), false);
});

test('AND/OR short-circuit only on the left and give false for nulls', () => {
  assert.equal(val('a OR true'), false); // null OR true
  assert.equal(val('true OR a'), true);
  assert.equal(val('false AND a / 0 > 1', { a: 1 }), false);
  assert.equal(val('true AND a'), false);
  assert.equal(val('true AND false'), false);
  assert.equal(val('false OR true'), true);
  assert.equal(keeps('abc * 2 + 3 > 12 OR abc / 0 < 20', { abc: 6 }), true);
  assert.match(err('1 AND true'), /invalid operation int64\(1\) AND bool\(true\)/);
});

test('comparisons: numeric mixing, strings, bools, mismatch errors (docs/sql.md §6.4)', () => {
  assert.equal(val('55.0 = 55'), true);
  assert.equal(val('a > 50', { a: 50.5 }), true);
  assert.equal(val('a > 50', { a: 49.5 }), false);
  assert.equal(val('50 < a', { a: 51 }), true);
  assert.equal(val('50.5 < a', { a: 51 }), true);
  assert.equal(val('a = 5', { a: 5 }), true);
  assert.equal(val('a != 5', { a: 5 }), false);
  assert.equal(val('a <= 5', { a: 5 }), true);
  assert.equal(val('"abc" < "abd"'), true);
  assert.equal(val('true = true'), true);
  assert.match(err('a = "x"', { a: 32 }), /invalid operation float64\(32\) = string\(x\)/);
  assert.match(err('true > false'), /invalid operation bool\(true\) > bool\(false\)/);
});

test('bitwise operators on ints and bools', () => {
  assert.equal(val('6 & 3'), 2n);
  assert.equal(val('6 | 3'), 7n);
  assert.equal(val('6 ^ 3'), 5n);
  assert.equal(val('true & false'), false);
  assert.equal(val('a & 1'), false);
});

test('IN / NOT IN with lists, arrays and nulls', () => {
  assert.equal(val('a IN (1, 2, 3)', { a: 2 }), true);
  assert.equal(val('a NOT IN (1, 2)', { a: 3 }), true);
  assert.equal(val('a IN (1, 2)'), false);
  assert.equal(val('a NOT IN (1, 2)'), false); // null x → false for NOT IN too
  assert.equal(val('a NOT IN (b, c)', { a: 34, b: 35 }), true); // null elements never match
  assert.equal(val('a IN arr', { a: 'x', arr: ['y', 'x'] }), true);
  assert.equal(val('a NOT IN arr', { a: 'x' }), true); // null right side → NOT IN true
  assert.equal(val('a IN arr', { a: 'x' }), false);
  assert.match(err('a IN (1, 2)', { a: 'x' }), /evaluate in expression error: invalid operation/);
});

test('BETWEEN is inclusive; nulls give false for both forms', () => {
  assert.equal(val('a BETWEEN 1 AND 5', { a: 5 }), true);
  assert.equal(val('a BETWEEN 1 AND 5', { a: 6 }), false);
  assert.equal(val('a NOT BETWEEN 1 AND 5', { a: 6 }), true);
  assert.equal(val('a BETWEEN 1 AND 5'), false);
  assert.equal(val('a NOT BETWEEN 1 AND 5'), false);
  assert.match(err('a BETWEEN 1 AND 5', { a: 'x' }), /between operator cannot compare/);
});

test('LIKE: wildcards, anchoring, unescaped metacharacters and errors (docs/sql.md §6.5)', () => {
  assert.equal(val('"string1" LIKE "str%"'), true);
  assert.equal(val('"another" LIKE "an_ther"'), true);
  assert.equal(val('"string1" NOT LIKE "string1"'), false);
  assert.equal(val('a LIKE "v1.0"', { a: 'v100' }), true);
  assert.equal(val('a LIKE "ab"', { a: 'xaby' }), false);
  assert.equal(val('a LIKE p', { a: 'abc', p: 'a%' }), true);
  assert.match(err('a LIKE "x%"'), /LIKE operator left operand expects string, but found <nil>/);
  assert.match(err('a LIKE p', { a: 'x', p: 12 }), /invalid LIKE pattern, must be a string/);
});

test('CASE simple and searched', () => {
  assert.equal(val('CASE a WHEN 1 THEN "one" WHEN 2 THEN "two" ELSE "many" END', { a: 2 }), 'two');
  assert.equal(val('CASE a WHEN 1 THEN "one" END', { a: 5 }), undefined);
  assert.equal(val('CASE WHEN a > 1 THEN "big" ELSE "small" END', { a: 0 }), 'small');
  assert.equal(val('CASE WHEN a > 1 THEN "big" ELSE "small" END'), 'small');
  assert.equal(val('CASE a WHEN 1 THEN "one" ELSE "none" END'), 'none');
});

test('navigation with -> and dots, subscripts and slices (docs/sql.md §2.3, §2.4)', () => {
  assert.equal(val('a->b', { a: { b: 'x' } }), 'x');
  assert.equal(val('a.b', { a: { b: 'x' } }), 'x');
  assert.equal(val('a->c->d', { a: { c: { d: 35 } } }), 35);
  assert.equal(val('a->c->d', { a: { c: { e: 35 } } }), undefined);
  assert.equal(val('a->b', { a: 'commonstring' }), undefined);
  assert.match(err('a->b', { a: 'commonstring', b: 1 }), /invalid operation/);
  assert.match(err('a->b', { a: [1] }), /is not a type of map\[string\]interface\{\}/);
  assert.equal(val('a[0]', { a: [1, 2, 3] }), 1);
  assert.equal(val('a[-1]', { a: [1, 2, 3] }), 3);
  assert.match(err('a[5]', { a: [1, 2, 3] }), /out of index: 5 of 3/);
  assert.equal(val('a[0]'), undefined);
  assert.deepEqual(val('a[2:]', { a: [1, 2, 3, 4] }), [3, 4]);
  assert.deepEqual(val('a[:2]', { a: [1, 2, 3, 4] }), [1, 2]);
  assert.deepEqual(val('a[-2:]', { a: [1, 2, 3, 4] }), [3, 4]);
  assert.deepEqual(val('a[:]', { a: [] }), []);
  assert.deepEqual(val('arr[x:y+1]', { arr: [1, 2, 3, 4, 5], x: 1, y: 2 }), [2, 3]);
  assert.deepEqual(val('a->b[0:1]', { a: { b: [3.14, 3.141] } }), [3.14]);
  assert.match(err('a[1:]', { a: [] }), /out of index/);
  assert.match(err('a[x:1]', { a: [1, 2, 3], x: 2 }), /start index/);
  assert.match(err('a[0]', { a: { k: 1 } }), /invalid operation/);
});

test('meta() reads the metadata, mqtt(topic) the topic', () => {
  const meta = { topic: 'devices/d1', device: 'gw', temperature: { device: 'd2' } };
  assert.equal(val('meta(topic)', { topic: 'fff' }, meta), 'devices/d1');
  assert.equal(val('meta(temperature->device)', {}, meta), 'd2');
  assert.deepEqual(val('meta(*)', {}, meta), meta);
  assert.equal(val('mqtt(topic)', {}, meta), 'devices/d1');
});

test('wildcards as values and in the select list with EXCEPT/REPLACE', () => {
  const p = plan('SELECT * EXCEPT(b) REPLACE(a->b AS a) FROM s');
  assert.deepEqual(run(p, { a: { b: 'test' }, b: 'b', c: 'c' }), { a: 'test', c: 'c' });
  const p2 = plan('SELECT * REPLACE(a->b as a) FROM s');
  assert.deepEqual(run(p2, { a: { b: 'test' }, b: 'b', c: 'c' }), { a: 'test', b: 'b', c: 'c' });
});

test('joined rows read the first side that has a column; qualified refs read their stream', () => {
  const cat = catalogOf(
    'CREATE STREAM s1 () WITH (DATASOURCE="a", TYPE="memory")',
    'CREATE STREAM s2 () WITH (DATASOURCE="b", TYPE="memory")',
  );
  const p = plan(
    'SELECT a, s2.a AS b, c, * FROM s1 INNER JOIN s2 ON s1.id = s2.id GROUP BY TUMBLINGWINDOW(ss, 1)',
    cat,
  );
  const ctx = p.newContext('r', 0);
  const j = joined(tuple({ id: 1, a: 'left' }, 's1'), tuple({ id: 1, a: 'right', c: 'only2' }, 's2'));
  ctx.bindRow();
  assert.equal(p.joins[0].on?.(j, ctx), true);
  assert.deepEqual(p.project.project(j, ctx), { a: 'left', b: 'right', c: 'only2', id: 1 });
});

test('comparisons with numeric literals on ints (typed BIGINT columns) are exact', () => {
  const cat = catalogOf('CREATE STREAM t (a BIGINT) WITH (DATASOURCE="t", TYPE="memory")');
  const v = (expr: string, a: bigint): unknown => run(plan(`SELECT ${expr} AS r FROM t`, cat), { a })?.r;
  assert.equal(v('a > 50', 51n), true);
  assert.equal(v('a > 50.5', 50n), false);
  assert.equal(v('a = 50', 50n), true);
  assert.equal(v('a != 50', 50n), false);
  assert.equal(v('a <= 9007199254740993', 9007199254740993n), true);
  assert.equal(v('a < 9007199254740993', 9007199254740992n), true);
  assert.equal(v('1.5 < a', 2n), true);
});

test('arrays and objects as the left operand of AND/OR are invalid operations', () => {
  assert.match(err('a AND true', { a: [1] }), /AND is an invalid operation for \[\]interface \{\}/);
  assert.match(err('a OR false', { a: { k: 1 } }), /OR is an invalid operation for map\[string\]interface \{\}/);
});
