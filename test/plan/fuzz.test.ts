import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { plan, run } from './helpers.js';
import { EddyError } from '../../src/core/errors.js';
import { StageError } from '../../src/plan/plan.js';
import type { ValueObject } from '../../src/values/value.js';

/** JS engine failures that would mean a bug in the compiler or a function, never an eKuiper error text. */
const JS_FAILURE =
  /Cannot read properties|is not a function|is not iterable|Cannot mix BigInt|Cannot convert a|Maximum call stack|undefined is not|of undefined|of null/;

const field = fc.constantFrom('a', 'b', 'c', 'arr', 'obj', 'obj->k', 'arr[0]', 'arr[1:]', 'obj.k');
const literal = fc.constantFrom('1', '0', '-3', '2.5', '"x"', '"1"', 'true', 'false');
const fn1 = fc.constantFrom('abs', 'lower', 'upper', 'length', 'cardinality', 'isnull', 'to_json', 'round', 'trim');
const fn2 = fc.constantFrom('concat', 'coalesce', 'power', 'mod', 'split_value2', 'array_contains', 'element_at');

const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    field,
    literal,
    fc
      .tuple(tie('e'), fc.constantFrom('+', '-', '*', '/', '%', '=', '!=', '<', '>=', 'AND', 'OR', '&', '|'), tie('e'))
      .map(([l, op, r]) => `(${l}) ${op} (${r})`),
    fc.tuple(fn1, tie('e')).map(([f, x]) => `${f}(${x})`),
    fc
      .tuple(fn2, tie('e'), tie('e'))
      .map(([f, x, y]) => (f === 'split_value2' ? `split_value(${x}, "/", 0)` : `${f}(${x}, ${y})`)),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([x, y, z]) => `(${x}) IN ((${y}), (${z}))`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([x, y, z]) => `(${x}) BETWEEN (${y}) AND (${z})`),
    fc.tuple(tie('e'), literal).map(([x, p]) => `(${x}) LIKE ${p.startsWith('"') ? p : '"%"'}`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([x, y, z]) => `CASE WHEN (${x}) = (${y}) THEN ${z} ELSE ${x} END`),
  ),
})).e;

const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }),
  fc.integer({ min: -5, max: 5 }),
  fc.string({ maxLength: 4 }),
  fc.boolean(),
  fc.array(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.string({ maxLength: 2 }), fc.constant(null)), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('k', 'a'), fc.oneof(fc.integer(), fc.string({ maxLength: 2 })), { maxKeys: 2 }),
);
const message = fc.record({ a: value, b: value, c: value, arr: value, obj: value }, { requiredKeys: [] });

test('random expressions either evaluate or fail with an eKuiper error, never a JS failure', () => {
  fc.assert(
    fc.property(expr, expr, message, (sel, cond, msg) => {
      let p;
      try {
        p = plan(`SELECT ${sel} AS r, ${sel} FROM s WHERE (${cond}) OR true`);
      } catch (e) {
        // rule-creation rejections are coded errors with a message
        assert.ok(e instanceof EddyError, `not an EddyError: ${String(e)}`);
        assert.doesNotMatch(e.message, JS_FAILURE);
        return;
      }
      try {
        run(p, msg as ValueObject);
      } catch (e) {
        assert.ok(e instanceof StageError, `not a StageError: ${String(e)}`);
        assert.doesNotMatch(e.message, JS_FAILURE);
      }
    }),
    { numRuns: 400, seed: 20261121 },
  );
});
