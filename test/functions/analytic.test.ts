import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bindScalar } from '../../src/functions/index.js';
import { analyticSeq, ctx, lit, multiColSeq, registry, validate } from './helpers.js';

test('changed_col returns a value only when it differs from the last recorded one', () => {
  const r = analyticSeq('changed_col', [
    [[true, 'bar']],
    [[true, 'bar']],
    [[true, 'baz']],
    [[false, null]],
    [[false, 'baz']],
    [[true, 'foo']],
  ]);
  assert.deepEqual(r, ['bar', null, 'baz', null, 'baz', 'foo']);
  assert.deepEqual(analyticSeq('changed_col', [[[true, 1n]], [[true, 1.0]]]), [1n, 1.0], 'int 1 and float 1.0 differ');
  assert.deepEqual(analyticSeq('changed_col', [[[true, 'a']], [[true, 'b'], false]]), ['a', null]);
});

test('had_changed is true when any argument changed', () => {
  const r = analyticSeq('had_changed', [
    [[true, 'bar', 20n]],
    [[true, 'baz', 44n]],
    [[true, 'baz', 44n]],
    [[true, 'foo', 44n]],
    [[true, 'foo', null]],
    [[true, 'foo', 44n]],
  ]);
  assert.deepEqual(r, [true, true, false, true, false, false]);
  assert.deepEqual(analyticSeq('had_changed', [[[true, { a: 1n }]], [[true, { a: 1n }]], [[true, { a: 2n }]]]), [
    true,
    false,
    true,
  ]);
});

test('lag: default only in the 3-argument form, ignoreNull, invalid events not recorded', () => {
  assert.deepEqual(
    analyticSeq('lag', [
      [['foo', 1n, 'default', true]],
      [[null, 1n, 'default', true]],
      [['bar', 1n, 'default', true]],
      [['foo', 1n, 'default', true]],
      [['foo', 1n, 'default', true]],
    ]),
    [null, 'foo', 'foo', 'bar', 'foo'],
  );
  assert.deepEqual(analyticSeq('lag', [[['a', 1n, 'dflt']], [['b', 1n, 'dflt']]]), ['dflt', 'a']);
  assert.deepEqual(
    analyticSeq('lag', [
      [['foo'], true],
      [['bar'], false],
      [['bar'], true],
      [['foo'], false],
      [['foo'], true],
    ]),
    [null, 'foo', 'foo', 'bar', 'bar'],
  );
  assert.deepEqual(analyticSeq('lag', [[[1n, 2n]], [[2n, 2n]], [[3n, 2n]], [[4n, 2n]]]), [null, null, 1n, 2n]);
  assert.equal(
    validate('lag', lit.field(), lit.field()),
    'validate function lag error: Expect int type for parameter 2',
  );
  assert.match(validate('lag', lit.field(), lit.int(-1n))!, /^validate function lag error: /);
  assert.equal(
    validate('lag', lit.field(), lit.int(1n), lit.str('d'), lit.str('x')),
    'validate function lag error: Expect bool type for parameter 4',
  );
});

test('latest keeps the last non-null valid value', () => {
  assert.deepEqual(analyticSeq('latest', [[[null, 'd']], [['a', 'd']], [[null, 'd']], [['b', 'd'], false]]), [
    'd',
    'a',
    'a',
    'a',
  ]);
});

test('acc_* over valid events (WHEN color = "red" on sizes 3,6,2,4,1)', () => {
  const events: [unknown[], boolean][] = [
    [[3n], true],
    [[6n], false],
    [[2n], false],
    [[4n], false],
    [[1n], true],
  ];
  const seq = (name: string) => analyticSeq(name, events as never);
  assert.deepEqual(seq('acc_sum'), [3, 3, 3, 3, 4]);
  assert.deepEqual(seq('acc_min'), [3, 3, 3, 3, 1]);
  assert.deepEqual(seq('acc_max'), [3, 3, 3, 3, 3]);
  assert.deepEqual(seq('acc_count'), [1n, 1n, 1n, 1n, 2n]);
  assert.deepEqual(seq('acc_avg'), [3, 3, 3, 3, 2]);
  assert.deepEqual(
    analyticSeq('acc_min', [
      [[5n], false],
      [[7n], true],
    ]),
    [0, 7],
  );
  assert.throws(() => analyticSeq('acc_sum', [[[null]]]), /call func acc_sum error: the value should be number/);
  assert.throws(() => analyticSeq('acc_avg', [[['x']]]), /the value should be number/);
  assert.deepEqual(analyticSeq('acc_avg', [[[null]], [[2n]]]), [0, 2]);
});

test('changed_cols emits prefixed columns that changed', () => {
  const r = multiColSeq(
    'changed_cols',
    ['color', 'size'],
    [
      ['tt_', true, 'red', 3n],
      ['tt_', true, 'blue', 2n],
      ['tt_', true, 'blue', 4n],
      ['tt_', true, null, 4n],
    ],
  );
  assert.deepEqual(r, [{ tt_color: 'red', tt_size: 3n }, { tt_color: 'blue', tt_size: 2n }, { tt_size: 4n }, {}]);
  assert.equal(
    validate('changed_cols', lit.str('p'), lit.bool(true)),
    'validate function changed_cols error: At least has 3 argument but found 2.',
  );
  assert.equal(
    validate('changed_cols', lit.int(1n), lit.bool(true), lit.field()),
    'validate function changed_cols error: Expect string type for parameter 1',
  );
});

test('unnest returns the elements; null/[]/non-arrays are errors without the call prefix', () => {
  const def = registry.get('unnest')!;
  assert.equal(def.kind, 'srf');
  const f = bindScalar(def);
  assert.deepEqual(f([[1n, 2n, 3n]], ctx), [1n, 2n, 3n]);
  assert.throws(
    () => f([null], ctx),
    (e: Error) => e.message === "can't find the result from the unnest function",
  );
  assert.throws(
    () => f([[]], ctx),
    (e: Error) => e.message === "can't find the result from the unnest function",
  );
  assert.throws(
    () => f([1n], ctx),
    (e: Error) => e.message === 'the argument for the unnest function should be array',
  );
});

test('kinds the planner asks for', () => {
  assert.equal(registry.kindOf('LAG'), 'analytic');
  assert.equal(registry.kindOf('count'), 'aggregate');
  assert.equal(registry.kindOf('unnest'), 'srf');
  assert.equal(registry.kindOf('changed_cols'), 'multicol');
  assert.equal(registry.kindOf('row_number'), 'window');
  assert.equal(registry.kindOf('abs'), 'scalar');
  assert.equal(registry.kindOf('tumblingwindow'), undefined);
});
