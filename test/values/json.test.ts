import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DateTime, EvalError, toJson } from '../../src/values/index.js';

test('ints keep full 64-bit precision, floats print like Go JSON', () => {
  assert.equal(toJson({ a: 9223372036854775807n }), '{"a":9223372036854775807}');
  assert.equal(toJson([2.0, 1541152486013.0, 1e21, 1e-7, 0.1]), '[2,1541152486013,1e+21,1e-7,0.1]');
});

test('datetimes are RFC 3339 in their zone with a trimmed fraction; bytes are base64', () => {
  const t = new DateTime(Date.UTC(2022, 3, 13, 6, 22, 32, 233), 'Asia/Shanghai');
  assert.equal(toJson(t), '"2022-04-13T14:22:32.233+08:00"');
  assert.equal(toJson(new DateTime(Date.UTC(2022, 3, 13), 'UTC', 500)), '"2022-04-13T00:00:00.0000005Z"');
  assert.equal(toJson(new Uint8Array([104, 101, 108, 108, 111])), '"aGVsbG8="');
});

test('missing members are omitted; null array elements stay', () => {
  assert.equal(toJson({ a: undefined, b: null, c: [undefined, 1n] }), '{"b":null,"c":[null,1]}');
});

test('sorted keys and HTML escaping on request (to_json)', () => {
  assert.equal(
    toJson({ b: '<&>', a: { d: 1n, c: 2n } }, { sortKeys: true, escapeHtml: true }),
    '{"a":{"c":2,"d":1},"b":"\\u003c\\u0026\\u003e"}',
  );
});

test('non-finite floats cannot be serialised', () => {
  assert.throws(() => toJson({ a: Infinity }), EvalError);
  assert.throws(() => toJson([NaN]), EvalError);
  assert.throws(() => toJson({ a: [{ b: 1n, c: -Infinity }] }), EvalError);
});
