import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatInvocation,
  inRanges,
  parseCronSpec,
  parseGoDuration,
  parseRangeTime,
  rangesEnded,
} from '../../src/rules/schedule.js';

test('Go durations', () => {
  assert.equal(parseGoDuration('30s'), 30000);
  assert.equal(parseGoDuration('1h30m'), 5400000);
  assert.equal(parseGoDuration('1.5h'), 5400000);
  assert.equal(parseGoDuration('500ms'), 500);
  assert.equal(parseGoDuration('0'), 0);
  assert.equal(parseGoDuration('10'), undefined);
  assert.equal(parseGoDuration('ten seconds'), undefined);
  assert.equal(parseGoDuration(''), undefined);
});

test('last_invocation: local date-time with trailing fractional zeros trimmed; never is year 1', () => {
  const t = Date.UTC(2024, 4, 1, 10, 0, 0, 120);
  assert.equal(formatInvocation(t, 'UTC'), '2024-05-01T10:00:00.12');
  assert.equal(formatInvocation(Date.UTC(2024, 4, 1, 10, 0, 0, 0), 'UTC'), '2024-05-01T10:00:00');
  assert.equal(formatInvocation(t, 'Asia/Shanghai'), '2024-05-01T18:00:00.12');
  assert.equal(formatInvocation(0), '0001-01-01T00:00:00');
  assert.match(formatInvocation(t, 'Local'), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.12$/);
});

test('datetime ranges are read in the configured zone', () => {
  assert.equal(parseRangeTime('2024-05-01 18:00:00', 'Asia/Shanghai'), Date.UTC(2024, 4, 1, 10, 0, 0));
  assert.equal(parseRangeTime('2024-05-01 10:00:00', 'UTC'), Date.UTC(2024, 4, 1, 10, 0, 0));
  assert.equal(parseRangeTime('2024-13-01 10:00:00', 'UTC'), undefined);
  assert.equal(parseRangeTime('2024-05-01T10:00:00', 'UTC'), undefined);
  const ranges = [{ begin: '2024-05-01 10:00:00', end: '2024-05-01 11:00:00' }];
  assert.equal(inRanges(ranges, Date.UTC(2024, 4, 1, 10, 30), 'UTC'), true);
  assert.equal(inRanges(ranges, Date.UTC(2024, 4, 1, 12, 0), 'UTC'), false);
  assert.equal(rangesEnded(ranges, Date.UTC(2024, 4, 1, 12, 0), 'UTC'), true);
  assert.equal(inRanges([], 0), true, 'no ranges: always inside');
  assert.equal(inRanges([{ beginTimestamp: 10, endTimestamp: 20 }], 15), true);
});

test('cron specs: 5 fields, seconds, descriptors and @every', () => {
  const at = Date.UTC(2024, 4, 1, 10, 0, 30);
  assert.equal(parseCronSpec('*/5 * * * *', 'UTC').next(at), Date.UTC(2024, 4, 1, 10, 5, 0));
  assert.equal(parseCronSpec('*/10 * * * * *', 'UTC').next(at), Date.UTC(2024, 4, 1, 10, 0, 40));
  assert.equal(parseCronSpec('@hourly', 'UTC').next(at), Date.UTC(2024, 4, 1, 11, 0, 0));
  assert.equal(parseCronSpec('@every 1m').next(at + 250), at + 60000);
  assert.throws(() => parseCronSpec('not a cron'));
  assert.throws(() => parseCronSpec('@every soon'));
});
