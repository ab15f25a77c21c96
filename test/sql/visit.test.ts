/**
 * The one expression visitor and transformer (src/sql/visit.ts): the visitor, the walker and the transformer agree
 * on every node kind, and a meta key is no sub-expression for any of them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseExpression } from '../../src/sql/index.js';
import type { Expr } from '../../src/sql/ast.js';
import { childExprs, forEachChild, mapChildren, walk } from '../../src/sql/visit.js';
import { exprToString } from '../../src/sql/print.js';

const SAMPLES = [
  'a + b * 2 > 3 AND c = "x"',
  's.a -> b -> c',
  'arr[1 + i]',
  'arr[1:n]',
  'a IN (1, b, c + 1)',
  'a BETWEEN lo AND hi',
  'name LIKE "a%"',
  'CASE x WHEN 1 THEN "one" WHEN y THEN z ELSE w END',
  'CASE WHEN a > 1 THEN b END',
  'lag(a, 1, b) OVER (PARTITION BY p1, p2 WHEN c > d)',
  'row_number() OVER (ORDER BY ts DESC)',
  'meta(device -> id)',
  'mqtt(topic)',
  'upper(meta(topic))',
  '(a)',
  'true',
  '1.5',
];

/** Every node `walk` visits, as text. */
function walked(e: Expr): string[] {
  const out: string[] = [];
  walk(e, (x) => out.push(exprToString(x)));
  return out;
}

test('the visitor and the transformer name the same children, in the same order, for every sample', () => {
  for (const sql of SAMPLES) {
    const seen: Expr[] = [];
    const e = parseExpression(sql);
    const stack = [e];
    while (stack.length > 0) {
      const x = stack.pop()!;
      const viaMap: Expr[] = [];
      mapChildren(x, (c) => {
        viaMap.push(c);
        return c;
      });
      const viaEach: Expr[] = [];
      forEachChild(x, (c) => viaEach.push(c));
      assert.deepEqual(viaMap, childExprs(x), `${sql}: mapChildren of ${exprToString(x)}`);
      assert.deepEqual(viaEach, childExprs(x), `${sql}: forEachChild of ${exprToString(x)}`);
      seen.push(x);
      stack.push(...childExprs(x));
    }
    assert.equal(walked(e).length, seen.length, sql);
  }
});

test('walk is pre-order and goes into OVER clauses; the key of meta() is not a sub-expression', () => {
  assert.deepEqual(walked(parseExpression('lag(a) OVER (PARTITION BY p WHEN c > 1)')), [
    'lag(a) OVER (PARTITION BY p WHEN c > 1)',
    'a',
    'p',
    'c > 1',
    'c',
    '1',
  ]);
  assert.deepEqual(walked(parseExpression('upper(meta(device -> id))')), [
    'upper(meta(device->id))',
    'meta(device->id)',
  ]);
});

test('mapChildren rebuilds a node with the children transformed and leaves the original alone', () => {
  const e = parseExpression('a + f(b, c)');
  const renamed = (x: Expr): Expr =>
    x.kind === 'field' ? { ...x, name: x.name.toUpperCase() } : mapChildren(x, renamed);
  assert.equal(exprToString(renamed(e)), 'A + f(B, C)');
  assert.equal(exprToString(e), 'a + f(b, c)');
  const meta = parseExpression('meta(topic)');
  assert.equal(mapChildren(meta, renamed), meta, 'a meta key is not renamed as a column');
});
