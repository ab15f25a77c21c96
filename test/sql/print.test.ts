import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { exprToString, parseExpression, parseSelect, selectToString, type Expr } from '../../src/sql/index.js';
import { SELECTS } from './corpus.js';
import { sexp } from './sexp.js';

const show = (sql: string): string => exprToString(parseExpression(sql));

/** Removes every `paren` node, so trees can be compared up to the parentheses the printer had to add. */
function strip(e: Expr): Expr {
  switch (e.kind) {
    case 'paren':
      return strip(e.expr);
    case 'binary':
      return { ...e, left: strip(e.left), right: strip(e.right) };
    case 'navigate':
      return { ...e, object: strip(e.object) };
    case 'index':
      return { ...e, array: strip(e.array), index: strip(e.index) };
    case 'slice':
      return { ...e, array: strip(e.array), start: e.start && strip(e.start), end: e.end && strip(e.end) };
    case 'in':
      return { ...e, value: strip(e.value), list: e.list && e.list.map(strip), array: e.array && strip(e.array) };
    case 'between':
      return { ...e, value: strip(e.value), low: strip(e.low), high: strip(e.high) };
    case 'like':
      return { ...e, value: strip(e.value), pattern: strip(e.pattern) };
    case 'case':
      return {
        ...e,
        value: e.value && strip(e.value),
        whens: e.whens.map((w) => ({ when: strip(w.when), then: strip(w.then) })),
        elseExpr: e.elseExpr && strip(e.elseExpr),
      };
    case 'call':
      return { ...e, args: e.args.map(strip) };
    default:
      return e;
  }
}

describe('exprToString', () => {
  test('readable compact SQL', () => {
    assert.equal(show('a>3'), 'a > 3');
    assert.equal(show('a   AND(b OR c)'), 'a AND (b OR c)');
    assert.equal(show("name like 'a%'"), 'name LIKE "a%"');
    assert.equal(show('count( * )'), 'count(*)');
    assert.equal(show('x not in (1,2)'), 'x NOT IN (1, 2)');
    assert.equal(show('x between 1 and 2'), 'x BETWEEN 1 AND 2');
    assert.equal(show('case when a > 0 then 1 else 2 end'), 'CASE WHEN a > 0 THEN 1 ELSE 2 END');
    assert.equal(
      show('lag(a) over (partition by b order by c desc when d)'),
      'lag(a) OVER (PARTITION BY b ORDER BY c DESC WHEN d)',
    );
    assert.equal(show('arr[1:] + arr[] + arr[:2] + arr[0]'), 'arr[1:] + arr[] + arr[:2] + arr[0]');
    assert.equal(show('a->b.c'), 'a->b.c');
    assert.equal(show('5.'), '5.0');
    assert.equal(show('"a\\"b\\n"'), '"a\\"b\\n"');
    assert.equal(show('`my col` + `select` + s.`x y`'), '`my col` + `select` + s.`x y`');
    assert.equal(show('meta(*) = mqtt(topic)'), 'meta(*) = mqtt(topic)');
    assert.equal(show('* except(a) replace(1 as b)'), '* EXCEPT(a) REPLACE(1 AS b)');
    assert.equal(show('ss'), 'ss');
  });

  test('keeps the comment-prone forms parseable', () => {
    assert.equal(show('a - (-1)'), 'a - (-1)');
    const synthetic: Expr = {
      kind: 'binary',
      op: '-',
      left: { kind: 'field', stream: null, name: 'a' },
      right: { kind: 'integer', value: -1n },
    };
    assert.equal(exprToString(synthetic), 'a - (-1)');
    const nav: Expr = { kind: 'navigate', object: { kind: 'float', value: 1 }, member: 'a', dot: true };
    assert.equal(exprToString(nav), '(1.0).a');
  });

  test('adds parentheses a synthetic tree needs', () => {
    const a: Expr = { kind: 'field', stream: null, name: 'a' };
    const b: Expr = { kind: 'field', stream: null, name: 'b' };
    const sum: Expr = { kind: 'binary', op: '+', left: a, right: b };
    assert.equal(exprToString({ kind: 'binary', op: '*', left: sum, right: b }), '(a + b) * b');
    assert.equal(exprToString({ kind: 'binary', op: '-', left: a, right: sum }), 'a - (a + b)');
    assert.equal(exprToString({ kind: 'index', array: sum, index: { kind: 'integer', value: 0n } }), '(a + b)[0]');
    assert.equal(
      exprToString({ kind: 'between', negated: false, value: a, low: sum, high: b }),
      'a BETWEEN (a + b) AND b',
    );
  });
});

describe('selectToString', () => {
  test('every corpus statement prints to SQL that parses back to the same statement', () => {
    for (const sql of SELECTS) {
      const once = selectToString(parseSelect(sql));
      assert.equal(selectToString(parseSelect(once)), once, sql);
    }
  });
});

// ------------------------------------------------------------------------------------------- generated trees

const NAMES = ['a', 'b', 'Temp_1', 'NULL', 'select', 'ss', 'my col', '温度', 'x.y', 'end'];
const name = fc.constantFrom(...NAMES);
const field = fc.record({ kind: fc.constant('field' as const), stream: fc.option(name, { nil: null }), name });

const leaf: fc.Arbitrary<Expr> = fc.oneof(
  field,
  fc.record({ kind: fc.constant('integer' as const), value: fc.bigInt(-(1n << 63n), (1n << 63n) - 1n) }),
  fc.record({ kind: fc.constant('float' as const), value: fc.constantFrom(0.5, 1.25, 3, -2.5, 100, 0) }),
  fc.record({ kind: fc.constant('string' as const), value: fc.string({ maxLength: 8 }) }),
  fc.record({ kind: fc.constant('boolean' as const), value: fc.boolean() }),
  fc.record({
    kind: fc.constant('timeUnit' as const),
    unit: fc.constantFrom('DD' as const, 'HH' as const, 'MI' as const, 'SS' as const, 'MS' as const),
  }),
);

const OPS = ['OR', 'AND', '=', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', '&', '|', '^'] as const;

const { expr } = fc.letrec<{ expr: Expr }>((tie) => {
  const sub = tie('expr');
  return {
    expr: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.record({ kind: fc.constant('binary' as const), op: fc.constantFrom(...OPS), left: sub, right: sub }),
      fc.record({ kind: fc.constant('paren' as const), expr: sub }),
      fc.record({ kind: fc.constant('navigate' as const), object: sub, member: name, dot: fc.constant(false) }),
      fc.record({ kind: fc.constant('index' as const), array: sub, index: sub }),
      fc
        .record({
          array: sub,
          start: fc.option(sub, { nil: null }),
          end: fc.option(sub, { nil: null }),
          colon: fc.boolean(),
        })
        .map((r): Expr => ({ kind: 'slice', ...r, ...(r.colon ? {} : { start: null, end: null }) })),
      fc.record({
        kind: fc.constant('in' as const),
        negated: fc.boolean(),
        value: sub,
        list: fc.array(sub, { minLength: 1, maxLength: 3 }),
        array: fc.constant(null),
      }),
      fc.record({
        kind: fc.constant('in' as const),
        negated: fc.boolean(),
        value: sub,
        list: fc.constant(null),
        array: field,
      }),
      fc.record({ kind: fc.constant('between' as const), negated: fc.boolean(), value: sub, low: sub, high: sub }),
      fc.record({ kind: fc.constant('like' as const), negated: fc.boolean(), value: sub, pattern: sub }),
      fc
        .record({
          kind: fc.constant('case' as const),
          value: fc.option(sub, { nil: null }),
          whens: fc.array(fc.record({ when: sub, then: sub }), { minLength: 1, maxLength: 2 }),
          elseExpr: fc.option(sub, { nil: null }),
        })
        // a searched CASE needs bool-shaped WHEN conditions
        .map((e): Expr =>
          e.value !== null
            ? e
            : {
                ...e,
                whens: e.whens.map((w) => ({
                  when: { kind: 'binary', op: '=', left: w.when, right: w.then },
                  then: w.then,
                })),
              },
        ),
      fc.record({
        kind: fc.constant('call' as const),
        name: fc.constantFrom('abs', 'f', 'Concat'),
        args: fc.array(sub, { maxLength: 3 }),
        over: fc.constant(null),
      }),
    ),
  };
});

describe('printer / parser agreement', () => {
  test('printing any tree and parsing it back gives the same tree up to parentheses', () => {
    fc.assert(
      fc.property(expr, (e) => {
        const text = exprToString(e);
        const back = parseExpression(text);
        assert.equal(sexp(strip(back)), sexp(strip(e)), text);
      }),
      { numRuns: 600 },
    );
  });
});
