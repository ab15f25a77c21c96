import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  add,
  bitAnd,
  bitOr,
  bitXor,
  DateTime,
  div,
  eq,
  EvalError,
  ge,
  gt,
  le,
  lt,
  mod,
  mul,
  neq,
  setDefaultZone,
  sub,
  compareForSort,
  type Value,
} from '../../src/values/index.js';

setDefaultZone('UTC');

function err(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof EvalError, 'an EvalError');
    return e.message;
  }
  assert.fail('expected an error');
}

test('int op int stays int, with integer division truncating and remainder signed like the dividend', () => {
  assert.equal(add(2n, 3n), 5n);
  assert.equal(sub(2n, 3n), -1n);
  assert.equal(mul(4n, 3n), 12n);
  assert.equal(div(5n, 2n), 2n);
  assert.equal(div(-7n, 2n), -3n);
  assert.equal(mod(-7n, 2n), -1n);
  assert.equal(mod(7n, -2n), 1n);
});

test('int arithmetic wraps at 64 bits and keeps precision beyond 2^53', () => {
  assert.equal(add(9223372036854775807n, 1n), -9223372036854775808n);
  assert.equal(mul(4611686018427387904n, 2n), -9223372036854775808n);
  assert.equal(add(9007199254740993n, 0n), 9007199254740993n);
  assert.equal(div(-9223372036854775808n, -1n), -9223372036854775808n);
});

test('int/float mixes give floats; float % is fmod', () => {
  assert.equal(add(1n, 2.5), 3.5);
  assert.equal(div(5.0, 2n), 2.5);
  assert.equal(div(5n, 2.0), 2.5);
  assert.equal(mod(5.5, 2n), 1.5);
  assert.equal(mod(-5.5, 2), -1.5);
  const r = add(1.0, 1n);
  assert.equal(typeof r, 'number');
});

test('null in arithmetic gives null', () => {
  for (const op of [add, sub, mul, div, mod]) {
    assert.equal(op(null, 1n), null);
    assert.equal(op(1.5, undefined), null);
  }
});

test('division and remainder by zero are errors', () => {
  assert.equal(
    err(() => div(1n, 0n)),
    'divided by zero',
  );
  assert.equal(
    err(() => div(1.5, 0)),
    'divided by zero',
  );
  assert.equal(
    err(() => mod(1n, 0n)),
    'divided by zero',
  );
  assert.equal(
    err(() => mod(1n, 0.0)),
    'divided by zero',
  );
});

test('arithmetic on non-numbers is an invalid operation with Go type names', () => {
  assert.equal(
    err(() => mul('32', 3n)),
    'invalid operation string(32) * int64(3)',
  );
  assert.equal(
    err(() => add('a', 'b')),
    'invalid operation string(a) + string(b)',
  );
  assert.equal(
    err(() => mul('string', 5n)),
    'invalid operation string(string) * int64(5)',
  );
  assert.equal(
    err(() => sub(true, 1.5)),
    'invalid operation bool(true) - float64(1.5)',
  );
  assert.equal(
    err(() => add([1n], 1n)),
    '+ is an invalid operation for []interface {}',
  );
  assert.equal(
    err(() => add({ a: 1n }, 1n)),
    '+ is an invalid operation for map[string]interface {}',
  );
});

test('bitwise operators: bits on ints, logic on bools, false with null, errors otherwise', () => {
  assert.equal(bitAnd(10n, 2n), 2n);
  assert.equal(bitOr(-10n, 2n), -10n);
  assert.equal(bitXor(10n, 2n), 8n);
  assert.equal(bitAnd(true, false), false);
  assert.equal(bitOr(true, false), true);
  assert.equal(bitXor(true, true), false);
  assert.equal(bitAnd(null, 1n), false);
  assert.equal(
    err(() => bitAnd(1.5, 1n)),
    'invalid operation float64(1.5) & int64(1)',
  );
  assert.equal(
    err(() => bitOr(true, 1n)),
    'invalid operation bool(true) | int64(1)',
  );
});

test('comparisons: numeric mixing, strings byte-wise, bools equality only', () => {
  assert.equal(eq(55.0, 55n), true);
  assert.equal(lt(1n, 1.5), true);
  assert.equal(ge(2.0, 2n), true);
  assert.equal(lt('a', 'b'), true);
  assert.equal(gt('b', 'abc'), true);
  assert.equal(lt('\uffff', '\u{10000}'), true); // UTF-8 order, not UTF-16
  assert.equal(eq(true, true), true);
  assert.equal(neq(true, false), true);
  assert.equal(
    err(() => gt(true, false)),
    'invalid operation bool(true) > bool(false)',
  );
  assert.equal(eq(9007199254740993n, 9007199254740992n), false);
});

test('comparisons with null are false, including null = null', () => {
  const ops = [eq, neq, lt, le, gt, ge];
  for (const op of ops) {
    assert.equal(op(null, null), false);
    assert.equal(op(1n, null), false);
    assert.equal(op(undefined, 'x'), false);
  }
});

test('comparing incompatible kinds is an error', () => {
  assert.equal(
    err(() => eq(32, 'x')),
    'invalid operation float64(32) = string(x)',
  );
  assert.equal(
    err(() => lt(1n, true)),
    'invalid operation int64(1) < bool(true)',
  );
  assert.equal(
    err(() => gt([1n], 2n)),
    '> is an invalid operation for []interface {}',
  );
  assert.equal(
    err(() => eq({ a: 1n }, null)),
    '= is an invalid operation for map[string]interface {}',
  );
  assert.equal(
    err(() => eq(new Uint8Array([1]), new Uint8Array([1]))),
    'invalid operation []uint8([1]) = []uint8([1])',
  );
});

test('a datetime on the left compares with datetimes, epoch ms and datetime strings; not the other way round', () => {
  const t = new DateTime(Date.UTC(2019, 0, 1), 'UTC');
  assert.equal(eq(t, new DateTime(Date.UTC(2019, 0, 1), 'Asia/Shanghai')), true);
  assert.equal(eq(t, BigInt(Date.UTC(2019, 0, 1))), true);
  assert.equal(lt(t, Date.UTC(2019, 0, 2) * 1.0), true);
  assert.equal(eq(t, '2019-01-01 00:00:00'), true);
  assert.equal(gt(t, '2018-12-31'), true);
  assert.match(
    err(() => eq(BigInt(Date.UTC(2019, 0, 1)), t)),
    /^invalid operation int64\(1546300800000\) = time\.Time\(2019-01-01 00:00:00 \+0000 UTC\)$/,
  );
});

test('ORDER BY ordering: numbers, strings, datetimes; mixing kinds is an error', () => {
  const vals: Value[] = [3n, 1.5, 2n];
  vals.sort(compareForSort);
  assert.deepEqual(vals, [1.5, 2n, 3n]);
  assert.match(
    err(() => compareForSort(1n, 'a')),
    /^incompatible types for comparison: int64\(1\) and string\(a\)$/,
  );
});
