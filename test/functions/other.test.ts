import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, callError, ctx, lit, registry, validate } from './helpers.js';

test('isnull, coalesce, cardinality', () => {
  assert.equal(call('isnull', []), false);
  assert.equal(call('isnull', null), true);
  assert.equal(call('isnull', undefined), true);
  assert.equal(call('coalesce', 'foo', 'bar', '2'), 'foo');
  assert.equal(call('coalesce', null, 'dd', '1'), 'dd');
  assert.equal(call('coalesce', null, null, '2'), '2');
  assert.equal(call('coalesce', null, null, null), null);
  assert.equal(call('cardinality', []), 0n);
  assert.equal(call('cardinality', [1n, 2n, 3n, 4n, null]), 5n);
  assert.equal(call('cardinality', 'x'), 0n);
});

test('newuuid gives distinct version-1 UUIDs; tstamp is epoch ms', () => {
  const a = call('newuuid') as string;
  const b = call('newuuid') as string;
  assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.notEqual(a, b);
  const t = call('tstamp') as bigint;
  assert.ok(Math.abs(Number(t) - Date.now()) < 5000);
});

test('rule and window context values', () => {
  assert.equal(call('rule_id'), 'rule0');
  assert.equal(call('rule_start'), 12345n);
  assert.equal(call('window_start'), null);
  assert.equal(call('event_time'), null);
  ctx.windowStart = 1000;
  ctx.windowEnd = 2000;
  ctx.eventTime = 2000;
  ctx.lastHitCount = 2;
  ctx.lastHitTime = 1500;
  try {
    assert.equal(call('window_start'), 1000n);
    assert.equal(call('window_end'), 2000n);
    assert.equal(call('event_time'), 2000n);
    assert.equal(call('last_hit_count'), 2n);
    assert.equal(call('last_hit_time'), 1500n);
  } finally {
    ctx.windowStart = ctx.windowEnd = ctx.eventTime = undefined;
    ctx.lastHitCount = ctx.lastHitTime = 0;
  }
});

test('meta and mqtt take the metadata value the compiler resolved', () => {
  assert.equal(registry.get('meta')!.argMode, 'metaRef');
  assert.equal(call('meta', 'devices/device_001/message'), 'devices/device_001/message');
  assert.equal(call('mqtt', 'topic/a'), 'topic/a');
  assert.equal(call('mqtt', null), null);
  assert.equal(callError('mqtt', 5n), 'call func mqtt error: <nil>');
  assert.equal(validate('mqtt', lit.field('messageid')), undefined);
  assert.equal(validate('mqtt', lit.field('TOPIC')), undefined);
  assert.equal(
    validate('mqtt', lit.field('qos')),
    'validate function mqtt error: Parameter of mqtt function can be only topic or messageid.',
  );
  assert.equal(
    validate('mqtt', lit.str('topic')),
    'validate function mqtt error: Expect meta reference type for parameter 1',
  );
  assert.equal(validate('coalesce'), 'validate function coalesce error: The arguments should be at least one.');
  assert.match(validate('meta', lit.str('x'))!, /^validate function meta error: /);
  assert.equal(validate('meta', lit.star()), undefined);
});

test('delay is asynchronous and resolves to its value', async () => {
  const def = registry.get('delay')!;
  assert.equal(def.exec, undefined, 'delay never blocks the thread');
  assert.equal(def.async?.maxInFlight, 1, 'one delayed event at a time, as the rule would wait');
  let later = false;
  const p = def.execAsync!([20n, 'bar'], ctx);
  setImmediate(() => (later = true));
  assert.equal(await p, 'bar');
  assert.ok(later, 'the thread ran other work while delay waited');
  await assert.rejects(
    def.execAsync!(['bar', 'bar'], ctx),
    /^Error: cannot convert string\(bar\) to int$|cannot convert string\(bar\) to int/,
  );
});

test('get_keyed_state reads the store and converts with cast rules', () => {
  // no store plugged: nothing is stored, the default applies (docs/sql.md §7.14 example)
  assert.equal(call('get_keyed_state', 'foo', 'float', 20.0), 20.0);
  const store = new Map<string, string>([['n', '12']]);
  ctx.keyedState = (k) => store.get(k);
  try {
    assert.equal(call('get_keyed_state', 'foo', 'float', 20.0), 20.0);
    assert.equal(call('get_keyed_state', 'n', 'bigint', 0n), 12n);
  } finally {
    ctx.keyedState = undefined;
  }
  assert.match(
    validate('get_keyed_state', lit.str('k'), lit.str('nope'), lit.int(1n))!,
    /^validate function get_keyed_state error: /,
  );
});
