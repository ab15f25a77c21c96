import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, callError, lit, validate } from './helpers.js';

const sortedKeys = (v: unknown) => [...(v as string[])].sort();

test('keys, values, items, obj_to_kvpair_array', () => {
  assert.deepEqual(sortedKeys(call('keys', { a: 1n, b: 2n })), ['a', 'b']);
  assert.equal(callError('keys', 1n), 'call func keys error: the argument should be map[string]interface{}');
  assert.equal(call('keys', {}), null);
  assert.deepEqual(sortedKeys(call('values', { a: 'c', b: 'd' })), ['c', 'd']);
  assert.deepEqual(call('items', { a: 1n, b: 2n }), [
    ['a', 1n],
    ['b', 2n],
  ]);
  assert.deepEqual(call('items', { k2: null }), [['k2', null]]);
  assert.deepEqual(call('obj_to_kvpair_array', { a: 1n }), [{ key: 'a', value: 1n }]);
});

test('object pairs key and value arrays', () => {
  assert.deepEqual(call('object', ['a', 'b'], [1n, 2n]), { a: 1n, b: 2n });
  assert.equal(
    callError('object', ['a', 'b'], [1n, 2n, 3n]),
    'call func object error: the length of the arguments should be same',
  );
  assert.equal(callError('object', [1n, 2n], [1n, 2n]), 'call func object error: first argument should be []string');
  assert.deepEqual(call('object', ['k1'], [null]), { k1: null });
  assert.equal(call('object', [], []), null);
});

test('zip builds an object from pairs', () => {
  assert.deepEqual(
    call('zip', [
      ['a', 1n],
      ['b', 2n],
    ]),
    { a: 1n, b: 2n },
  );
  assert.deepEqual(call('zip', [['k1', 'v1'], null, ['k2', 'v2']]), { k1: 'v1', k2: 'v2' });
  assert.equal(
    callError('zip', [
      [1n, 3n],
      [2n, 4n],
    ]),
    'call func zip error: the first element in the list item should be string',
  );
  assert.equal(callError('zip', [['a']]), 'call func zip error: each argument should be [][2]interface{}');
});

test('object_concat and object_construct', () => {
  assert.deepEqual(call('object_concat', { a: 1n, b: 2n }, { b: 3n, c: 4n }, { a: 2n, d: 1n }), {
    a: 2n,
    b: 3n,
    c: 4n,
    d: 1n,
  });
  assert.deepEqual(call('object_concat', { a: 1n, b: 2n }, { b: 3n, c: 4n }, null), { a: 1n, b: 3n, c: 4n });
  assert.deepEqual(call('object_construct', 'key1', 'bar', 'key2', 'foo'), { key1: 'bar', key2: 'foo' });
  assert.deepEqual(call('object_construct', 'key1', null, 'key2', 'foo', 'key3', null), { key2: 'foo' });
  assert.equal(
    callError('object_construct', true, 'bar'),
    'call func object_construct error: key true is not a string',
  );
  assert.equal(
    validate('object_construct', lit.str('a')),
    'validate function object_construct error: the args must be key value pairs',
  );
  assert.equal(
    validate('object_construct', lit.int(1n), lit.str('a')),
    'validate function object_construct error: Expect string type for parameter 1',
  );
  assert.equal(
    validate('object_concat', lit.field()),
    'validate function object_concat error: At least has 2 argument but found 1.',
  );
});

test('erase, object_size, object_pick', () => {
  const o = { a: 1n, b: 2n, c: 3n };
  assert.deepEqual(call('erase', o, 'a'), { b: 2n, c: 3n });
  assert.deepEqual(call('erase', o, ['a', 'b']), { c: 3n });
  assert.deepEqual(o, { a: 1n, b: 2n, c: 3n }, 'the argument is not modified');
  assert.equal(callError('erase', o, ['a', 'b'], 'c'), 'call func erase error: the argument number should be 2, got 3');
  assert.equal(call('object_size', { a: 1n, b: ['foo', 'bar'] }), 2n);
  assert.equal(call('object_size', null), 0n);
  assert.equal(callError('erase', o, 1n), 'call func erase error: the argument should be slice or string');
  assert.equal(
    callError('erase', 'x', 'a'),
    'call func erase error: the first argument should be map[string]interface{}, got x',
  );
  assert.equal(
    callError('object_concat', { a: 1n }, 2n),
    'call func object_concat error: the argument should be map[string]interface{}, got 2',
  );
  assert.equal(callError('items', 2n), 'call func items error: first argument should be map[string]interface{}');
  assert.deepEqual(call('object_pick', o, ['a', 'c']), { a: 1n, c: 3n });
  assert.deepEqual(call('object_pick', o, 'a'), { a: 1n });
  assert.deepEqual(call('object_pick', o, 'd'), {});
  assert.deepEqual(call('object_pick', { k1: null, k2: '2' }, 'k1'), { k1: null });
  assert.deepEqual(call('object_pick', { a: { b: 1n, c: 2n }, d: 3n }, 'a.b', 123n), { a: { b: 1n } });
  assert.equal(call('object_pick', null, 'a'), null);
});
