import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkZone,
  DateTime,
  ekuiperLayout,
  EvalError,
  fieldsOf,
  formatGoTime,
  formatLayout,
  formatRfc3339,
  parseAuto,
  parseWithFormat,
  zoneOffset,
} from '../../src/values/index.js';

const utc = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0) => Date.UTC(y, mo - 1, d, h, mi, s, ms);

test('auto-detected layouts read wall-clock strings in the given zone', () => {
  const cases: [string, number][] = [
    ['2019', utc(2019, 1, 1)],
    ['2019-3', utc(2019, 3, 1)],
    ['2019-1-2', utc(2019, 1, 2)],
    ['2019-01-01 00:00:00', utc(2019, 1, 1)],
    ['2019-1-1 1:2:3', utc(2019, 1, 1, 1, 2, 3)],
    ['2019-01-01 01:00:00.123456', utc(2019, 1, 1, 1, 0, 0, 123)],
    ['2019.01.02 03:04:05', utc(2019, 1, 2, 3, 4, 5)],
    ['1/2/2006', utc(2006, 1, 2)],
    ['2006/01/02 15:04:05', utc(2006, 1, 2, 15, 4, 5)],
    ['20060102', utc(2006, 1, 2)],
    ['Mon Jan  2 15:04:05 2006', utc(2006, 1, 2, 15, 4, 5)],
    ['Mon, 02 Jan 2006 15:04:05 -0700', utc(2006, 1, 2, 22, 4, 5)],
    ['2006-01-02T15:04:05Z', utc(2006, 1, 2, 15, 4, 5)],
    ['2006-01-02T15:04:05+08:00', utc(2006, 1, 2, 7, 4, 5)],
    ['2022-04-13T06:22:32.233Z', utc(2022, 4, 13, 6, 22, 32, 233)],
    ['2006-01-02T15:04:05', utc(2006, 1, 2, 15, 4, 5)],
  ];
  for (const [s, ms] of cases) assert.equal(parseAuto(s, 'UTC').ms, ms, s);
  assert.equal(parseAuto('2019-01-01 01:00:00.123456', 'UTC').nanos, 456_000);
  assert.equal(parseAuto('2019-01-01 08:00:00', 'Asia/Shanghai').ms, utc(2019, 1, 1));
  assert.equal(parseAuto('2019-07-01 00:00:00', 'America/New_York').ms, utc(2019, 7, 1, 4));
});

test('time-only strings take today; a month-day string takes this year', () => {
  const now = new Date();
  const t = parseAuto('12:30:15', 'UTC');
  const f = fieldsOf(t);
  assert.equal(f.year, now.getUTCFullYear());
  assert.equal(f.day, now.getUTCDate());
  assert.deepEqual([f.hour, f.minute, f.second], [12, 30, 15]);
  assert.equal(fieldsOf(parseAuto('3-4', 'UTC')).year, now.getUTCFullYear());
});

test('unparseable strings are errors', () => {
  assert.throws(
    () => parseAuto('not a time', 'UTC'),
    (e) => e instanceof EvalError && e.message === "Can't parse string as time: not a time",
  );
  assert.throws(() => parseAuto('2019-02-30', 'UTC'), EvalError);
  assert.throws(() => parseAuto('2019-13-01', 'UTC'), EvalError);
});

test('eKuiper format tokens', () => {
  const t = new DateTime(utc(2020, 1, 16, 2, 14, 24, 913), 'UTC');
  assert.equal(formatLayout(t, ekuiperLayout('YYYY-MM-dd HH:mm:ssSSS')), '2020-01-16 02:14:24.913');
  assert.equal(formatLayout(t, ekuiperLayout('yy/M/d h:m:s a')), '20/1/16 2:14:24 AM');
  assert.equal(formatLayout(t, ekuiperLayout('EEE EEEE MMM MMMM')), 'Thu Thursday Jan January');
  assert.equal(
    formatLayout(t, ekuiperLayout("'at' HH 'o''clock' \\Z z Z XXX G")),
    "at 02 o'clock Z UTC +0000 +00:00 AD",
  );
  assert.equal(formatLayout(t, ekuiperLayout('ss.SSS')), '24..913');
  assert.equal(
    formatLayout(new DateTime(1568854515000), ekuiperLayout('yyyy-MM-dd T HH:mm:ss')),
    '2019-09-19 T 00:55:15',
  );
  assert.throws(() => ekuiperLayout('YYY'), EvalError);
  assert.throws(() => ekuiperLayout('H:mm'), EvalError);
});

test('parsing with an explicit format', () => {
  assert.equal(
    parseWithFormat('2020-01-16 02:14:24.913', 'yyyy-MM-dd HH:mm:ssSSS', 'UTC').ms,
    utc(2020, 1, 16, 2, 14, 24, 913),
  );
  assert.equal(parseWithFormat('16/01/2020', 'dd/MM/yyyy', 'UTC').ms, utc(2020, 1, 16));
  assert.throws(() => parseWithFormat('2020-01-16', 'dd/MM/yyyy', 'UTC'), EvalError);
});

test('zones: IANA names with DST, fixed offsets, unknown names rejected', () => {
  assert.equal(zoneOffset('Asia/Shanghai', 0), 8 * 3600);
  assert.equal(zoneOffset('America/New_York', utc(2019, 1, 1)), -5 * 3600);
  assert.equal(zoneOffset('America/New_York', utc(2019, 7, 1)), -4 * 3600);
  assert.equal(zoneOffset('+05:30', 0), 5.5 * 3600);
  assert.equal(checkZone('UTC'), 'UTC');
  assert.throws(
    () => checkZone('Unknown'),
    (e) => e instanceof EvalError && e.message === 'unknown time zone Unknown',
  );
});

test('Go String and RFC 3339 forms', () => {
  const t = new DateTime(utc(2022, 4, 13, 6, 22, 32, 233), 'Asia/Shanghai');
  assert.equal(formatRfc3339(t), '2022-04-13T14:22:32.233+08:00');
  assert.match(formatGoTime(t), /^2022-04-13 14:22:32\.233 \+0800 /);
  assert.equal(formatGoTime(new DateTime(0, 'America/New_York')), '1969-12-31 19:00:00 -0500 EST');
  assert.equal(formatRfc3339(new DateTime(0, 'UTC')), '1970-01-01T00:00:00Z');
});

test('calendar fields', () => {
  const f = fieldsOf(new DateTime(utc(2019, 1, 1, 1, 23, 45), 'UTC'));
  assert.deepEqual(
    [f.year, f.month, f.day, f.hour, f.minute, f.second, f.weekday, f.yearDay],
    [2019, 1, 1, 1, 23, 45, 2, 1],
  );
  assert.equal(fieldsOf(new DateTime(utc(2020, 12, 31), 'UTC')).yearDay, 366);
});

/** `hostZone()` in a fresh Node process with environment `env` (the host zone is read once per process). */
function hostZoneIn(env: Record<string, string>): string {
  const src = "import { hostZone } from './src/values/datetime.ts'; console.log(hostZone());";
  return execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', src], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  }).trim();
}

test('the host zone comes from TZ: UTC by any of its names, another zone as Intl resolves it', () => {
  assert.equal(hostZoneIn({ TZ: 'Etc/UTC' }), 'UTC');
  assert.equal(hostZoneIn({ TZ: ':UTC' }), 'UTC');
  assert.equal(hostZoneIn({ TZ: 'Asia/Shanghai' }), 'Asia/Shanghai');
  assert.equal(hostZoneIn({ TZ: ':America/New_York' }), 'America/New_York');
});
