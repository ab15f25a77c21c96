import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agg, aggError, ctx, lit, validate } from './helpers.js';

test('avg/max/min: ints stay ints (avg truncates), floats stay floats, strings for max/min', () => {
  assert.equal(agg('avg', [100n, 150n, 200n]), 150n);
  assert.equal(agg('max', [100n, 150n, 200n]), 200n);
  assert.equal(agg('min', [100n, 150n, 200n]), 100n);
  assert.equal(agg('avg', [100.0, 150.0, 201.0]), 150.33333333333334);
  assert.equal(agg('avg', [1n, 2n]), 1n);
  assert.equal(agg('avg', [1n, null]), 1n);
  assert.equal(agg('avg', [null]), null);
  assert.equal(agg('avg', []), null);
  assert.equal(agg('max', ['foo', 'bar', 'self']), 'self');
  assert.equal(agg('min', ['foo', 'bar', 'self']), 'bar');
  assert.equal(
    aggError('avg', ['foo', 'bar', 'self']),
    'call func avg error: run avg function error: found invalid arg string(foo)',
  );
  assert.equal(aggError('max', [1.5, 2n]), 'call func max error: requires float64 but found int64(2)');
  assert.equal(agg('max', [1n, 2.9]), 2n);
});

test('count and sum', () => {
  assert.equal(agg('count', [1n, null]), 1n);
  assert.equal(agg('count', [null]), 0n);
  assert.equal(agg('count', []), null, 'an empty group is null');
  assert.equal(agg('count', [{ a: 1n }, { b: 2n }]), 2n);
  assert.equal(agg('sum', [1n, 2n, null]), 3n);
  assert.equal(agg('sum', [null]), null);
  assert.equal(agg('sum', [1.5, 2.5]), 4);
});

test('statistical aggregates', () => {
  assert.equal(agg('stddev', [100n, 150n, 200n]), 40.824829046386306);
  assert.equal(agg('stddevs', [100n, 150n, null, 200n]), 50);
  assert.equal(agg('var', [100n, 150n, 200n, null]), 1666.6666666666667);
  assert.equal(agg('vars', [100n, 150n, 200n]), 2500);
  assert.equal(
    aggError('stddev', ['foo', 'bar', 'self']),
    'call func stddev error: requires float64 slice but found []interface {}([foo bar self])',
  );
  assert.equal(agg('percentile_cont', [100n, 150n, 200n], [0.5, 0.5, 0.5]), 125);
  assert.equal(agg('percentile_disc', [100n, 150n, 200n], [0.5, 0.5, 0.5]), 150);
  assert.equal(agg('percentile_cont', [100n, 150n, 200n, 250n], [0.5, 0.5, 0.5, 0.5]), 150);
  assert.equal(agg('percentile_disc', [3n, 1n, 2n], [1.0, 1.0, 1.0]), 3);
  assert.equal(agg('percentile_cont', [7n], [0.3]), 7);
  assert.equal(
    aggError('percentile_cont', [1n, 2n, 3n], [0.1, 0.1, 0.1]),
    'call func percentile_cont error: percentile exec with error: Input is outside of range.',
  );
  assert.equal(
    aggError('percentile_cont', [1n, 2n], [1.5, 1.5]),
    'call func percentile_cont error: percentile exec with error: Input is outside of range.',
  );
  assert.equal(agg('percentile_disc', [3n, 1n, 2n], [0.0, 0.0, 0.0]), 1);
});

test('collect keeps nulls; merge_agg merges objects', () => {
  assert.deepEqual(agg('collect', [1n, null, 3n]), [1n, null, 3n]);
  assert.deepEqual(agg('collect', []), []);
  assert.deepEqual(
    agg('merge_agg', [
      { foo: 'bar', a: 123n },
      { foo1: 'bar', a: 243n },
      { foo: 'bar1', a: 342n },
    ]),
    {
      foo: 'bar1',
      a: 342n,
      foo1: 'bar',
    },
  );
  assert.equal(agg('merge_agg', [100n, 150n, 200n]), null);
});

test('deduplicate compares keys by text and returns rows', () => {
  const rows = [{ c: 'red' }, { c: 'blue' }, { c: 'blue' }];
  const keys = rows.map((r) => r.c);
  assert.deepEqual(agg('deduplicate', keys, [true, true, true], rows), [{ c: 'red' }, { c: 'blue' }]);
  assert.equal(agg('deduplicate', keys, [false, false, false], rows), null);
  assert.deepEqual(agg('deduplicate', ['red', 'blue'], [false, false], rows.slice(0, 2)), { c: 'blue' });
  assert.equal(
    validate('deduplicate', lit.field(), lit.str('x')),
    'validate function deduplicate error: Expect bool type for parameter 2',
  );
});

test('last_value', () => {
  assert.equal(agg('last_value', ['foo', 'bar', 'self'], [true, true, true]), 'self');
  assert.equal(agg('last_value', [1n, 2n, null], [true, true, true]), 2n);
  assert.equal(agg('last_value', [1n, 2n, null], [false, false, false]), null);
});

test('last_agg_hit_* read the context', () => {
  ctx.lastAggHitCount = 3;
  ctx.lastAggHitTime = 1000;
  assert.equal(agg('last_agg_hit_count'), 3n);
  assert.equal(agg('last_agg_hit_time'), 1000n);
  ctx.lastAggHitCount = 0;
  ctx.lastAggHitTime = 0;
});

test('aggregate validation', () => {
  assert.equal(
    validate('sum', lit.str('a')),
    'validate function sum error: Expect number - float or int type for parameter 1',
  );
  assert.equal(validate('count', lit.star()), undefined);
  assert.equal(
    validate('percentile_cont', lit.field(), lit.bool(true)),
    'validate function percentile_cont error: Expect number - float or int type for parameter 2',
  );
});
