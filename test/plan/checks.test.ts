import { test } from 'node:test';
import assert from 'node:assert/strict';
import { catalogOf, deps, SCHEMALESS } from './helpers.js';
import { planQuery, querySources, validateQuery, UnknownStreamError } from '../../src/plan/planner.js';
import { EddyError } from '../../src/core/errors.js';

const TYPED =
  'CREATE STREAM t (a BIGINT, b STRING, rec STRUCT(x BIGINT, y STRING)) WITH (DATASOURCE="t", TYPE="memory")';
const TYPED2 = 'CREATE STREAM u (a BIGINT, c STRING) WITH (DATASOURCE="u", TYPE="memory")';
const TABLE = 'CREATE TABLE tb (k STRING, v BIGINT) WITH (DATASOURCE="tb", TYPE="file")';
const LOOKUP = 'CREATE TABLE lk () WITH (DATASOURCE="lk", TYPE="memory", KIND="lookup", KEY="id")';

const cat = catalogOf(
  SCHEMALESS,
  TYPED,
  TYPED2,
  TABLE,
  LOOKUP,
  'CREATE STREAM s2 () WITH (DATASOURCE="t2", TYPE="memory")',
);

/** The coded error planning `sql` fails with. */
function failure(sql: string, opts = {}): EddyError {
  try {
    planQuery(sql, deps(cat, opts));
  } catch (e) {
    assert.ok(e instanceof EddyError, `EddyError expected, got ${String(e)}`);
    return e;
  }
  assert.fail(`planning succeeded: ${sql}`);
}

function rejects(sql: string, message: string | RegExp, opts = {}): void {
  const e = failure(sql, opts);
  assert.equal(e.code, 2101);
  if (typeof message === 'string') assert.equal(e.message, message);
  else assert.match(e.message, message);
}

test('unknown stream: code 2101 with eKuiper text, and the stream name for /rules/validate', () => {
  const e = failure('SELECT * FROM s9');
  assert.ok(e instanceof UnknownStreamError);
  assert.equal(e.code, 2101);
  assert.equal(e.message, 'fail to get stream s9, please check if stream is created');
  assert.equal((e as UnknownStreamError).stream, 's9');
  assert.throws(
    () => planQuery('SELECT * FROM s INNER JOIN nope ON s.a = nope.a GROUP BY COUNTWINDOW(2)', deps(cat)),
    UnknownStreamError,
  );
});

test('syntax errors keep the parser message with code 2001', () => {
  const e = failure('SELECT * FROM s WHERE a >');
  assert.equal(e.code, 2001);
  assert.ok(e.message.length > 0);
});

test('typed streams: unknown and ambiguous fields', () => {
  rejects('SELECT nosuchfield FROM t', 'unknown field nosuchfield');
  rejects('SELECT NULL FROM t', 'unknown field NULL');
  rejects('SELECT a FROM t INNER JOIN u ON t.b = u.c GROUP BY COUNTWINDOW(2)', 'ambiguous field a');
  // binding is case-insensitive; qualified references resolve in their stream
  planQuery('SELECT B, t.a, u.c FROM t INNER JOIN u ON t.a = u.a GROUP BY COUNTWINDOW(2)', deps(cat));
  rejects('SELECT t.c FROM t', /unknown field/);
});

test('windows and joins: group by without window, joins without window, tables, count in event time', () => {
  rejects('SELECT a FROM s GROUP BY a', 'select stmt group by should be used with window');
  rejects(
    'SELECT * FROM s INNER JOIN s2 ON s.a = s2.a',
    'a time window or count window is required to join multiple streams',
  );
  rejects('SELECT * FROM tb GROUP BY TUMBLINGWINDOW(ss, 1)', 'cannot run window for TABLE sources');
  rejects('SELECT * FROM s GROUP BY COUNTWINDOW(3)', 'unsupported window type', { isEventTime: true });
  planQuery('SELECT * FROM s INNER JOIN tb ON s.k = tb.k', deps(cat));
});

test('alias cycles are rejected', () => {
  rejects('SELECT a + 1 AS b, b + 1 AS a FROM s', 'select fields have cycled alias');
});

test('unknown functions and literal argument validation', () => {
  rejects('SELECT nofunc(a) FROM s', 'function nofunc not found');
  rejects('SELECT abs("x") FROM s', /^validate function abs error: /);
  rejects('SELECT tumblingwindow(ss, 1) FROM s', /window function tumblingwindow/);
});

test('searched CASE needs bool conditions; literal LIKE patterns must compile', () => {
  // the parser may already reject it (2001); either way the text is eKuiper's
  assert.match(failure('SELECT CASE WHEN a THEN 1 END FROM s').message, /WHEN expression must be a bool condition/);
  rejects('SELECT a FROM s WHERE a LIKE "a(b"', /invalid LIKE pattern/);
});

test('lookup tables: only in JOIN, with an equi-join predicate', () => {
  rejects('SELECT * FROM lk', 'cannot find lookup table lk in any join');
  rejects('SELECT * FROM s INNER JOIN lk ON s.a > lk.b', /at least one equi-join predicate is required/);
  planQuery('SELECT * FROM s INNER JOIN lk ON s.id = lk.id', deps(cat));
});

test('sendMetaToSink is rejected for windows and several streams', () => {
  rejects(
    'SELECT a FROM s GROUP BY TUMBLINGWINDOW(ss, 1)',
    'Invalid option sendMetaToSink, it can not be applied to window',
    {
      sendMetaToSink: true,
    },
  );
});

test('validateQuery lists the sources in FROM/JOIN order', () => {
  assert.deepEqual(validateQuery('SELECT * FROM s INNER JOIN tb ON s.k = tb.k', deps(cat)), { sources: ['s', 'tb'] });
  assert.throws(() => validateQuery('SELECT * FROM s9', deps(cat)), UnknownStreamError);
});

test('event time: a typed stream must declare its TIMESTAMP field', () => {
  const c = catalogOf('CREATE STREAM et (a BIGINT) WITH (DATASOURCE="et", TYPE="memory", TIMESTAMP="ts")');
  assert.throws(
    () => planQuery('SELECT a FROM et', deps(c, { isEventTime: true })),
    (e: unknown) => e instanceof EddyError && e.code === 2101 && e.message === 'timestamp field ts not found',
  );
  planQuery('SELECT a FROM et', deps(c));
});

test("querySources checks only syntax and stream existence, like eKuiper's validate", () => {
  assert.deepEqual(querySources('SELECT nosuchfield FROM t INNER JOIN u ON t.a = u.a', cat), ['t', 'u']);
  assert.throws(() => querySources('SELECT * FROM s9', cat), UnknownStreamError);
  assert.throws(
    () => querySources('SELECT * FROMM s', cat),
    (e: unknown) => e instanceof EddyError && e.code === 2001,
  );
});
