import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DateTime, formatFloatG, formatFloatPlain, goTypeName, keyText, textOf } from '../../src/values/index.js';

test('float text form switches to exponent form below 1e-4 and from 1e6 (Go %v)', () => {
  const cases: [number, string][] = [
    [1.5, '1.5'],
    [10, '10'],
    [123456, '123456'],
    [0.0001, '0.0001'],
    [1e6, '1e+06'],
    [1234567, '1.234567e+06'],
    [1541152486013, '1.541152486013e+12'],
    [1e-5, '1e-05'],
    [-2.5e-7, '-2.5e-07'],
    [1e21, '1e+21'],
    [1e100, '1e+100'],
    [0, '0'],
    [-0, '-0'],
    [NaN, 'NaN'],
    [Infinity, '+Inf'],
  ];
  for (const [x, s] of cases) assert.equal(formatFloatG(x), s, String(x));
});

test('plain float form never uses an exponent (cast to string)', () => {
  assert.equal(formatFloatPlain(1e21), '1000000000000000000000');
  assert.equal(formatFloatPlain(1.2), '1.2');
  assert.equal(formatFloatPlain(1e-7), '0.0000001');
  assert.equal(formatFloatPlain(-1.5e-7), '-0.00000015');
  assert.equal(formatFloatPlain(1.5e22), '15000000000000000000000');
});

test('text forms of every kind', () => {
  assert.equal(textOf('a'), 'a');
  assert.equal(textOf(12n), '12');
  assert.equal(textOf(true), 'true');
  assert.equal(textOf(null), '');
  assert.equal(textOf([1n, 'a', null]), '[1 a <nil>]');
  assert.equal(textOf({ b: 2n, a: 1.5 }), 'map[a:1.5 b:2]');
  assert.equal(textOf(new Uint8Array([104, 105])), '[104 105]');
  assert.equal(textOf(new DateTime(Date.UTC(2020, 0, 16, 2, 14, 24, 913), 'UTC')), '2020-01-16 02:14:24.913 +0000 UTC');
});

test('group and partition keys print null as <nil>', () => {
  assert.equal(keyText(null), '<nil>');
  assert.equal(keyText(undefined), '<nil>');
  assert.equal(keyText(1n), keyText(1.0));
  assert.equal(keyText('1'), '1');
});

test('Go type names', () => {
  assert.equal(goTypeName(1n), 'int64');
  assert.equal(goTypeName(1), 'float64');
  assert.equal(goTypeName('s'), 'string');
  assert.equal(goTypeName(true), 'bool');
  assert.equal(goTypeName([]), '[]interface {}');
  assert.equal(goTypeName({}), 'map[string]interface {}');
  assert.equal(goTypeName(new DateTime(0)), 'time.Time');
  assert.equal(goTypeName(new Uint8Array()), '[]uint8');
  assert.equal(goTypeName(null), '<nil>');
});
