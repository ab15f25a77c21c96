import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeJson } from '../../../src/connectors/formats/jsonenc.js';
import { toJson } from '../../../src/values/json.js';
import { DateTime } from '../../../src/values/value.js';

const GO = { sortKeys: true, escapeHtml: true } as const;

test('sink JSON: sorted keys at every depth, HTML characters escaped, digit keys in byte order', () => {
  assert.equal(
    encodeJson([{ temperature: 51, deviceId: 'd<1>', humidity: 50 }]),
    '[{"deviceId":"d\\u003c1\\u003e","humidity":50,"temperature":51}]',
  );
  assert.equal(
    encodeJson({ b: { z: 1, a: [{ y: true, x: null }] }, a: 'x&y' }),
    '{"a":"x\\u0026y","b":{"a":[{"x":null,"y":true}],"z":1}}',
  );
  assert.equal(encodeJson({ '10': 1, '9': 2, a: 3 }), '{"10":1,"9":2,"a":3}');
  assert.equal(encodeJson({ n: 12345678901234567890n, f: 1.5, u: undefined }), '{"f":1.5,"n":12345678901234567890}');
  assert.equal(encodeJson([JSON.parse('{"b":1,"__proto__":{"x":1},"a":2}')]), '[{"__proto__":{"x":1},"a":2,"b":1}]');
  assert.throws(() => encodeJson({ x: Number.NaN }), /unsupported value/);
  // rows of one shape, one after the other (the key order is cached), then another shape
  for (let i = 0; i < 3; i++) assert.equal(encodeJson([{ c: i, b: 'x', a: true }]), `[{"a":true,"b":"x","c":${i}}]`);
  assert.equal(encodeJson([{ c: 1, a: 2 }]), '[{"a":2,"c":1}]');
});

test('sink JSON: the fast path gives the text of the general serialiser for any value', () => {
  const key = fc.oneof(
    fc.string({ maxLength: 4 }),
    fc.constantFrom('a', 'b', 'Z', '10', '9', '<&>', 'é', '\u2028', '', '__proto__'),
  );
  const scalar = fc.oneof(
    fc.string(),
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.bigInt(),
  );
  const value = fc.letrec((tie) => ({
    v: fc.oneof(
      { depthSize: 'small' },
      scalar,
      fc.constant(new DateTime(0, 'UTC', 0)),
      fc.array(tie('v'), { maxLength: 4 }),
      fc.dictionary(key, tie('v'), { maxKeys: 5 }),
    ),
  })).v;
  const text = (f: () => string): string => {
    try {
      return f();
    } catch (err) {
      return `error: ${(err as Error).message}`;
    }
  };
  fc.assert(
    fc.property(value, (v) => {
      assert.equal(
        text(() => encodeJson(v)),
        text(() => toJson(v as never, GO)),
      );
    }),
    { numRuns: 3000 },
  );
});
