import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, callError, lit, validate } from './helpers.js';

const equipment = {
  rings: [
    { name: 'ring of despair', weight: 0.1 },
    { name: 'ring of strength', weight: 2.4 },
  ],
  arm_right: 'Sword of flame',
  arm_left: 'Shield of faith',
};

test('json_path_query: definite paths give one value, wildcards and filters give arrays', () => {
  assert.equal(call('json_path_query', equipment, '$.arm_right'), 'Sword of flame');
  assert.deepEqual(call('json_path_query', equipment, '$.rings[*].weight'), [0.1, 2.4]);
  assert.deepEqual(call('json_path_query', equipment, '$.rings[? @.weight>1]'), [
    { name: 'ring of strength', weight: 2.4 },
  ]);
  assert.deepEqual(call('json_path_query', equipment, '$.rings[? (@.weight>1)].name'), ['ring of strength']);
  assert.deepEqual(call('json_path_query', equipment, "$.rings[?(@.name == 'ring of despair')].weight"), [0.1]);
  assert.deepEqual(call('json_path_query', equipment, '$..weight'), [0.1, 2.4]);
  assert.equal((call('json_path_query', equipment, '$..*') as unknown[]).length, 9);
  assert.deepEqual(call('json_path_query', equipment, '$..[0].name'), ['ring of despair']);
  assert.deepEqual(call('json_path_query', equipment, '$.rings.*.weight'), [0.1, 2.4]);
  // comparisons order numbers and strings; arithmetic is on numbers, + also joins strings; x/0 gives no value
  assert.deepEqual(call('json_path_query', equipment, "$.rings[? @.name < 'ring of s'].weight"), [0.1]);
  assert.deepEqual(call('json_path_query', equipment, '$.rings[? @.weight * 10 > 5].name'), ['ring of strength']);
  assert.deepEqual(call('json_path_query', equipment, "$.rings[? @.name + 'x' == 'ring of despairx'].weight"), [0.1]);
  assert.deepEqual(call('json_path_query', equipment, '$.rings[? @.weight / 0 > 1].name'), []);
  assert.deepEqual(call('json_path_query', equipment, '$.rings[0:1].name'), ['ring of despair']);
  assert.equal(call('json_path_query', equipment, '$.rings[-1].name'), 'ring of strength');
  assert.equal(
    call('json_path_query', JSON.stringify({ 'arm.left': 'Shield of faith' }), '$["arm.left"]'),
    'Shield of faith',
  );
  assert.deepEqual(call('json_path_query', [1, 2, 3], '$[0,2]'), [1, 3]);
  assert.deepEqual(call('json_path_query', { rings: [0.1, 2.4] }, '$.rings[*]'), [0.1, 2.4]);
  const arr = [{ rings: [0.1, 2.4], 'arm.left': 'Shield of faith' }];
  assert.equal(call('json_path_query', arr, '$[0]["arm.left"]'), 'Shield of faith');
  assert.equal(call('json_path_query', JSON.stringify(arr), '$[0]["arm.left"]'), 'Shield of faith');
  const samplers = [
    { name: 'page1', result: { throughput: 25, rt: 20 } },
    { name: 'page2', result: { throughput: 30, rt: 20 } },
  ];
  assert.equal(call('json_path_exists', samplers, '$[? @.result.throughput<20]'), false);
  assert.deepEqual(call('json_path_query', samplers, '$[? @.result.throughput<28 && @.rt != 1].name'), ['page1']);
  assert.deepEqual(call('json_path_query', samplers, "$[? @.name =~ 'page2'].result.rt"), [20]);
});

test('json_path_query errors', () => {
  assert.equal(
    callError('json_path_query', null, '$.arm_right'),
    'call func json_path_query error: invalid data nil for jsonpath',
  );
  assert.equal(callError('json_path_query', 1n, '$.a'), 'call func json_path_query error: invalid data 1 for jsonpath');
  assert.match(
    callError('json_path_query', equipment, '$.ring1'),
    /^call func json_path_query error: unknown key ring1/,
  );
  assert.equal(
    validate('json_path_query', lit.field(), lit.field()),
    'validate function json_path_query error: Expect string type for parameter 2',
  );
});

test('json_path_query_first and json_path_exists', () => {
  assert.equal(call('json_path_query_first', equipment, '$.rings[*].weight'), 0.1);
  assert.match(
    callError('json_path_query_first', equipment, '$.arm_right'),
    /^call func json_path_query_first error: query result \(Sword of flame\) is not an array$/,
  );
  assert.equal(call('json_path_exists', equipment, '$.rings[? @.weight>5]'), false);
  assert.equal(call('json_path_exists', equipment, '$.ring1'), false);
  assert.equal(call('json_path_exists', equipment, '$.rings'), true);
  assert.equal(call('json_path_exists', null, '$.rings'), false);
});

test('to_json sorts keys and escapes HTML characters; null/[]/{} give null', () => {
  assert.equal(call('to_json', 'foo'), '"foo"');
  assert.equal(call('to_json', { key2: 'foo', key1: 'bar' }), '{"key1":"bar","key2":"foo"}');
  assert.equal(call('to_json', { a: '<b>' }), '{"a":"\\u003cb\\u003e"}');
  assert.equal(call('to_json', [1n, 2.5]), '[1,2.5]');
  assert.equal(call('to_json', []), null);
  assert.equal(call('to_json', {}), null);
  assert.equal(call('to_json', null), null);
});

test('parse_json: numbers become floats, "null" is null, errors worded like Go', () => {
  assert.equal(call('parse_json', '"foo"'), 'foo');
  assert.equal(call('parse_json', 'null'), null);
  assert.equal(call('parse_json', null), null);
  assert.deepEqual(call('parse_json', '[{"key1":"bar"}]'), [{ key1: 'bar' }]);
  assert.equal(
    call('parse_json', '{"a":1}') !== null && typeof (call('parse_json', '{"a":1}') as { a: unknown }).a,
    'number',
  );
  assert.equal(
    callError('parse_json', 'key1'),
    "call func parse_json error: fail to parse json: invalid character 'k' looking for beginning of value",
  );
  assert.equal(
    callError('parse_json', '{"a":'),
    'call func parse_json error: fail to parse json: unexpected end of JSON input',
  );
  assert.equal(
    validate('parse_json', lit.int(1n)),
    'validate function parse_json error: Expect string type for parameter 1',
  );
});
