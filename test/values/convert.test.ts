import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cast, DateTime, EvalError, parseGoFloat, parseGoInt, toDateTime } from '../../src/values/index.js';

function err(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof EvalError);
    return e.message;
  }
  assert.fail('expected an error');
}

test('cast to bigint: truncation, Go integer syntax with the leading-zero octal quirk, bools', () => {
  assert.equal(cast(101.5, 'bigint'), 101n);
  assert.equal(cast(1.2, 'bigint'), 1n);
  assert.equal(cast(-1.9, 'bigint'), -1n);
  assert.equal(cast(5n, 'bigint'), 5n);
  assert.equal(cast('010', 'bigint'), 8n);
  assert.equal(cast('0x1F', 'bigint'), 31n);
  assert.equal(cast('0b101', 'bigint'), 5n);
  assert.equal(cast('1_000', 'bigint'), 1000n);
  assert.equal(cast('-42', 'bigint'), -42n);
  assert.equal(cast(true, 'bigint'), 1n);
  assert.equal(
    err(() => cast('abc', 'bigint')),
    'not supported type conversion, got error cannot convert string(abc) to int64',
  );
  assert.equal(
    err(() => cast('9223372036854775808', 'bigint')),
    'not supported type conversion, got error cannot convert string(9223372036854775808) to int64',
  );
});

test('Go integer and float syntax', () => {
  assert.equal(parseGoInt('0o17'), 15n);
  assert.equal(parseGoInt('0x_1F'), 31n);
  assert.equal(parseGoInt('1_000'), 1000n);
  assert.equal(parseGoInt('1__0'), undefined);
  assert.equal(parseGoInt('0_10'), 8n);
  assert.equal(parseGoInt('12a'), undefined);
  assert.equal(parseGoInt(''), undefined);
  assert.equal(parseGoFloat('1.5e3'), 1500);
  assert.equal(parseGoFloat('.5'), 0.5);
  assert.equal(parseGoFloat('inf'), Infinity);
  assert.equal(parseGoFloat(''), undefined);
  assert.equal(parseGoFloat('1.2.3'), undefined);
  assert.equal(parseGoFloat(' 1'), undefined);
});

test('cast to float, string and boolean', () => {
  assert.equal(cast(1n, 'float'), 1);
  assert.equal(cast('2.5', 'float'), 2.5);
  assert.equal(cast(false, 'float'), 0);
  assert.equal(cast(1.2, 'string'), '1.2');
  assert.equal(cast(1e21, 'string'), '1000000000000000000000');
  assert.equal(cast(true, 'string'), 'true');
  assert.equal(cast(1n, 'string'), '1');
  assert.equal(cast(new Uint8Array([104, 105]), 'string'), 'hi');
  assert.equal(cast('true', 'boolean'), true);
  assert.equal(cast('1', 'boolean'), true);
  assert.equal(cast('F', 'boolean'), false);
  assert.equal(cast(0.0, 'boolean'), false);
  assert.equal(cast(2.5, 'boolean'), true);
  assert.equal(
    err(() => cast(1n, 'boolean')),
    'not supported type conversion, got error cannot convert int64(1) to bool',
  );
  assert.equal(
    err(() => cast('yes', 'boolean')),
    'not supported type conversion, got error cannot convert string(yes) to bool',
  );
});

test('cast to bytea and datetime', () => {
  assert.deepEqual(cast('Ynl0ZWE=', 'bytea'), new Uint8Array(Buffer.from('bytea')));
  assert.equal(
    err(() => cast(1n, 'bytea')),
    'cannot convert int(1) to bytea',
  );
  const d = cast(1.62000273e9 * 1000, 'datetime');
  assert.ok(d instanceof DateTime);
  assert.equal(d.ms, 1620002730000);
  assert.equal((cast('2019-01-01 00:00:00', 'datetime', 'UTC') as DateTime).ms, Date.UTC(2019, 0, 1));
  assert.equal(
    err(() => cast(1n, 'unknown')),
    'unknow type, only support bigint, float, string, boolean and datetime',
  );
});

test('datetime arguments: datetimes, epoch ms, strings; other kinds are errors', () => {
  const t = new DateTime(5, 'UTC');
  assert.equal(toDateTime(t), t);
  assert.equal(toDateTime(1000n, 'UTC').ms, 1000);
  assert.equal(
    err(() => toDateTime(true)),
    'unsupported type to convert to timestamp true',
  );
  assert.equal(
    err(() => toDateTime(null)),
    'unsupported type to convert to timestamp <nil>',
  );
});
