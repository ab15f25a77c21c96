import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, callError } from './helpers.js';

test('array_create keeps non-null arguments', () => {
  assert.deepEqual(call('array_create', 1n, '2', 3n), [1n, '2', 3n]);
  assert.equal(call('array_create', null), null);
  assert.deepEqual(call('array_create', null, 1n), [1n]);
});

test('positions use strict equality; null array → -1', () => {
  assert.equal(call('array_position', [3n, 2n, 1n], 1n), 2n);
  assert.equal(call('array_position', [3n, 2n, 1n], 4n), -1n);
  assert.equal(call('array_position', [1.0], 1n), -1n);
  assert.equal(call('array_position', null, 1n), -1n);
  assert.equal(
    callError('array_position', 1n, 2n),
    'call func array_position error: first argument should be array of interface{}',
  );
  assert.equal(call('array_last_position', [5n, null, 5n], 5n), 2n);
  assert.equal(call('array_last_position', [5n, null, 7n], 5n), 0n);
  assert.equal(call('array_last_position', [5n, 'hello', null], null), 2n);
  assert.equal(call('array_last_position', [5n, null, 5n], 'hello'), -1n);
  assert.match(callError('array_position', [{ a: 1n }], { a: 1n }), /^call func array_position error: /);
});

test('element_at on arrays and objects', () => {
  assert.equal(call('element_at', [1n, 2n, 3n], 1n), 2n);
  assert.equal(call('element_at', [1n, 2n, 3n], -1n), 3n);
  assert.equal(callError('element_at', [1n, 2n, 3n], 4n), 'call func element_at error: index out of range');
  assert.equal(call('element_at', { a: 1n, b: 2n }, 'a'), 1n);
  assert.equal(call('element_at', { a: 1n }, 'z'), null);
  assert.equal(
    callError('element_at', { a: 1n, b: 2n }, 2n),
    'call func element_at error: second argument should be string',
  );
  assert.equal(
    callError('element_at', 'x', 1n),
    'call func element_at error: first argument should be []interface{} or map[string]interface{}',
  );
});

test('contains and contains_any', () => {
  assert.equal(call('array_contains', [1n, 2n], 2n), true);
  assert.equal(call('array_contains', [1n, 2n], 3n), false);
  assert.equal(call('array_contains', null, 3n), false);
  assert.equal(call('array_contains_any', [1n, 2n, 3n], [0n, 2n, 4n]), true);
  assert.equal(call('array_contains_any', [1n, 2n, 3n], [4n, 'hello', 6n]), false);
  assert.equal(call('array_contains_any', null, [4n]), false);
  assert.equal(call('array_contains_any', [1n, 2n, 3n], []), false);
  assert.equal(
    callError('array_contains_any', [1n], 1n),
    'call func array_contains_any error: second argument should be array of interface{}',
  );
});

test('remove, intersect, union, except', () => {
  assert.deepEqual(call('array_remove', [3n, 1n, 2n], 1n), [3n, 2n]);
  assert.deepEqual(call('array_remove', [1n, 2n, 3n, 4n, 3n], 3n), [1n, 2n, 4n]);
  assert.deepEqual(call('array_remove', [3n, 3n, 3n], 3n), []);
  assert.equal(call('array_remove', null, 3n), null);
  assert.deepEqual(call('array_intersect', [1n, 1n, 2n, 3n], [1n, 3n, 4n]), [1n, 3n]);
  assert.deepEqual(call('array_intersect', ['hello', 'ekuiper', 2n, 3n], ['ekuiper', 3n, 4n]), ['ekuiper', 3n]);
  assert.deepEqual(call('array_intersect', [1n, null, 2n], [1n, null, 3n]), [1n, null]);
  assert.deepEqual(call('array_union', [1n, 1n, 2n, 3n], [1n, 3n, 4n]), [1n, 2n, 3n, 4n]);
  assert.deepEqual(call('array_union', ['hello', 'ekuiper', 2n, 3n], ['ekuiper', 3n, 4n]), [
    'hello',
    'ekuiper',
    2n,
    3n,
    4n,
  ]);
  assert.deepEqual(call('array_union', null, [1n]), [1n]);
  assert.deepEqual(call('array_except', [1n, 2n, 3n], [1n, 3n, 4n]), [2n]);
  assert.deepEqual(call('array_except', [1n, 2n, 1n, 2n, 3n], [1n, 2n, 1n, 1n, 2n, 2n, 4n]), [3n]);
  assert.deepEqual(call('array_except', [1n, 1n, 1n, 1n, 3n], [4n]), [1n, 3n]);
  assert.deepEqual(call('array_except', [1n, 1n], null), [1n]);
  assert.equal(call('array_except', null, [1n]), null);
  assert.match(callError('array_union', [{ a: 1n }], []), /^call func array_union error: .*unhashable/);
});

test('array_max/array_min: the first non-null element decides the kind', () => {
  assert.equal(call('array_max', [1n, null, 3n]), 3n);
  assert.equal(call('array_max', [1n, 3.2, 4.1, 2n]), 4n);
  assert.equal(call('array_max', [1.2, 4.2, 3.0]), 4.2);
  assert.equal(call('array_min', [1n, 3.2, 4.1, 2n]), 1n);
  assert.equal(call('array_min', ['b', 'a']), 'a');
  assert.equal(call('array_max', [null, null]), null);
  assert.equal(callError('array_min', [1n, '0', 3n]), 'call func array_min error: requires int64 but found string(0)');
  assert.equal(callError('array_max', [1.5, 2n]), 'call func array_max error: requires float64 but found int64(2)');
});

test('cardinality, flatten, distinct', () => {
  assert.equal(call('array_cardinality', [1n, 2n, 3n]), 3n);
  assert.equal(call('array_cardinality', [1n, null]), 1n);
  assert.equal(call('array_cardinality', null), 0n);
  assert.deepEqual(
    call('array_flatten', [
      [1n, 2n, 3n],
      [4n, 5n, 6n],
    ]),
    [1n, 2n, 3n, 4n, 5n, 6n],
  );
  assert.deepEqual(call('array_flatten', [[1n, 2n, 3n], 4n]), [1n, 2n, 3n, 4n]);
  assert.deepEqual(call('array_distinct', [1n, 2n, 2n, 1n]), [1n, 2n]);
  const objs = [{ a: 1n }, { a: 1n }, { a: 2n }];
  assert.deepEqual(call('array_distinct', objs), objs);
});

test('array_map applies a one-argument scalar function', () => {
  assert.deepEqual(call('array_map', 'round', [0n, 0.4, 1.2]), [0, 0, 1]);
  assert.deepEqual(call('array_map', 'abs', [0n, -0.4, 1.2]), [0n, 0.4, 1.2]);
  assert.deepEqual(call('array_map', 'ceil', [0n, -1n, 1.2]), [0, -1, 2]);
  assert.deepEqual(call('array_map', 'UPPER', ['a', 'b']), ['A', 'B']);
  assert.equal(callError('array_map', 'pow', [0n]), 'call func array_map error: validate pow arguments failed');
  assert.equal(
    callError('array_map', 'avg', [0n]),
    'call func array_map error: first argument should be a scalar function.',
  );
  assert.equal(callError('array_map', 'nosuch', [0n]), 'call func array_map error: unknown built-in function: nosuch.');
});

test('array_join', () => {
  assert.equal(call('array_join', ['a', 'b', 'c'], ':'), 'a:b:c');
  assert.equal(call('array_join', ['a', 'b', 'c'], ''), 'abc');
  assert.equal(call('array_join', ['a', null, 'b'], ':'), 'a:b');
  assert.equal(call('array_join', ['a', null, 'c'], ':', 'nullReplacementStr'), 'a:nullReplacementStr:c');
  assert.equal(call('array_join', [123n, 'b', 'c'], ':', 'a'), '123:b:c');
  assert.equal(call('array_join', [null, null, null], ','), '');
  assert.equal(call('array_join', [null, null], ',', 'x'), 'x,x');
  assert.equal(callError('array_join', ['a'], 1n), 'call func array_join error: second argument should be string');
});

test('shuffle, sort by text form, concat', () => {
  const s = call('array_shuffle', [1n, 2n, 3n]) as bigint[];
  assert.deepEqual([...s].sort(), [1n, 2n, 3n]);
  assert.deepEqual(call('array_sort', [3n, 2n, 1n]), [1n, 2n, 3n]);
  assert.deepEqual(call('array_sort', [3n, 1.6, -0.83]), [-0.83, 1.6, 3n]);
  assert.deepEqual(call('array_sort', ['abc', 3n, 'def', 1.6, -0.83]), [-0.83, 1.6, 3n, 'abc', 'def']);
  assert.deepEqual(call('array_sort', [9n, 10n]), [10n, 9n]);
  assert.deepEqual(call('array_concat', [1n], [2n], ['3'], [null]), [1n, 2n, '3', null]);
  assert.deepEqual(call('array_concat', [1n], null), [1n]);
  assert.equal(call('array_concat', null, null), null);
  assert.equal(callError('array_concat', [1n], 2n), 'call func array_concat error: array elements should be array');
});

test('repeat and sequence fail for every SQL value, as the reference does (docs/sql.md §7.6 quirk)', () => {
  assert.equal(callError('repeat', 'hello', 3n), 'call func repeat error: second argument should be int');
  assert.equal(callError('repeat', 'rockset', 0n), 'call func repeat error: second argument should be int');
  assert.equal(callError('repeat', 'x', 2.0), 'call func repeat error: second argument should be int');
  assert.equal(callError('sequence', 1n, 5n), 'call func sequence error: first argument should be int');
  assert.equal(callError('sequence', 10n, 1n, -3n), 'call func sequence error: first argument should be int');
  assert.equal(callError('sequence', 1n, 5n, 0n), 'call func sequence error: first argument should be int');
});

test('kvpair_array_to_obj', () => {
  assert.deepEqual(
    call('kvpair_array_to_obj', [
      { key: 'a', value: 1n },
      { key: 'b', value: ['foo', 'bar'] },
    ]),
    { a: 1n, b: ['foo', 'bar'] },
  );
  assert.equal(
    callError('kvpair_array_to_obj', [{ wrongKey: 'a', value: 1n }]),
    'call func kvpair_array_to_obj error: array item should be key-value pair',
  );
});
