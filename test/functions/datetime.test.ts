import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DateTime, formatRfc3339 } from '../../src/values/index.js';
import { parseDuration } from '../../src/functions/index.js';
import { call, callError, lit, validate } from './helpers.js';

const d0 = '2019-01-01 00:00:00';

test('format_time with eKuiper patterns', () => {
  assert.equal(
    call('format_time', new DateTime(1568854515000, 'UTC'), 'yyyy-MM-dd T HH:mm:ss'),
    '2019-09-19 T 00:55:15',
  );
  assert.equal(call('format_time', 1.62000273e9 * 1000, 'yyyy-MM-dd T HH:mm:ss'), '2021-05-03 T 00:45:30');
  assert.equal(
    call('format_time', new DateTime(Date.UTC(2020, 0, 16, 2, 14, 24, 913)), 'YYYY-MM-dd HH:mm:ssSSS'),
    '2020-01-16 02:14:24.913',
  );
  assert.match(callError('format_time', new DateTime(0), 'YYY'), /^call func format_time error: /);
  assert.equal(
    validate('format_time', lit.int(1n), lit.str('yyyy-MM-dd')),
    'validate function format_time error: Expect datetime type for parameter 1',
  );
  assert.equal(call('format_time', null, 'yyyy'), null);
});

test('date_calc adds a Go duration and date_diff gives nanoseconds', () => {
  assert.equal(call('date_calc', d0, '24h'), '2019-01-02 00:00:00');
  assert.equal(call('date_calc', d0, '-24h'), '2018-12-31 00:00:00');
  assert.equal(call('date_calc', d0, '1h30m10s'), '2019-01-01 01:30:10');
  assert.match(callError('date_calc', d0, '1d'), /^call func date_calc error: time: unknown unit "d"/);
  assert.equal(
    callError('date_calc', null, '1h'),
    'call func date_calc error: unsupported type to convert to timestamp <nil>',
  );
  assert.equal(call('date_diff', d0, '2019-01-02 00:00:00'), 86400000000000n);
  assert.equal(
    validate('date_calc', lit.field(), lit.field()),
    'validate function date_calc error: Expect string type for parameter 2',
  );
});

test('Go durations', () => {
  assert.equal(parseDuration('1h30m'), 5400000000000n);
  assert.equal(parseDuration('1.5s'), 1500000000n);
  assert.equal(parseDuration('-2ms'), -2000000n);
  assert.equal(parseDuration('10µs'), 10000n);
  assert.equal(parseDuration('0'), 0n);
  assert.throws(() => parseDuration(''));
  assert.throws(() => parseDuration('h'));
  assert.throws(() => parseDuration('10'));
});

test('calendar parts of a datetime', () => {
  assert.equal(call('day_name', d0), 'Tuesday');
  assert.equal(call('day_of_month', d0), 1n);
  assert.equal(call('day', d0), 1n);
  assert.equal(call('day_of_week', d0), 2n);
  assert.equal(call('day_of_year', d0), 1n);
  assert.equal(call('hour', '2019-01-01 01:00:00'), 1n);
  assert.equal(call('minute', '2019-01-01 01:23:45'), 23n);
  assert.equal(call('second', '2019-01-01 01:23:45'), 45n);
  assert.equal(call('month', '2019-01-01 01:23:45'), 1n);
  assert.equal(call('month_name', '2019-01-01 01:23:45'), 'January');
  assert.equal(call('microsecond', '2019-01-01 01:00:00.123456'), 123456n);
  assert.equal(call('last_day', '2019-01-01 01:00:00'), '2019-01-31');
  assert.equal(call('last_day', '2020-02-10'), '2020-02-29');
  assert.equal(callError('hour', null), 'call func hour error: unsupported type to convert to timestamp <nil>');
  assert.equal(callError('hour', true), 'call func hour error: unsupported type to convert to timestamp true');
});

test('from_days, from_unix_time, to_seconds', () => {
  assert.equal(call('from_days', 100n), '1970-04-10');
  assert.equal(call('from_days', 1n), '1970-01-01');
  assert.equal(call('from_days', 0n), null);
  assert.equal(call('from_unix_time', 100n), '1970-01-01 00:01:40');
  assert.equal(call('from_unix_time', 0n), null);
  assert.equal(call('to_seconds', new DateTime(1_000_000_000_000, 'UTC')), 1000000000n);
  assert.equal(
    validate('from_days', lit.int(100n)),
    'validate function from_days error: Expect int type for parameter 1',
  );
  assert.equal(validate('from_unix_time', lit.field()), undefined);
});

test('convert_tz moves a datetime to another zone', () => {
  const t = new DateTime(Date.UTC(2022, 3, 13, 6, 22, 32, 233), 'UTC');
  const r = call('convert_tz', t, 'Asia/Shanghai') as DateTime;
  assert.ok(r instanceof DateTime);
  assert.equal(formatRfc3339(r), '2022-04-13T14:22:32.233+08:00');
  assert.equal(callError('convert_tz', t, 'Unknown'), 'call func convert_tz error: unknown time zone Unknown');
  assert.equal(
    callError('convert_tz', true, 'UTC'),
    'call func convert_tz error: unsupported type to convert to timestamp true',
  );
});

test('clock functions', () => {
  assert.match(call('now') as string, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  assert.match(call('current_timestamp', 3n) as string, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/);
  assert.match(call('cur_date') as string, /^\d{4}-\d\d-\d\d$/);
  assert.match(call('cur_time') as string, /^\d\d:\d\d:\d\d$/);
  assert.match(call('current_time', 6n) as string, /^\d\d:\d\d:\d\d\.\d{6}$/);
  const now = call('now') as string;
  const parsed = Date.parse(now.replace(' ', 'T') + 'Z');
  assert.ok(Math.abs(parsed - Date.now()) < 5000);
  assert.equal(validate('now', lit.field()), 'validate function now error: Expect int type for parameter 1');
});
