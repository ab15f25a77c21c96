import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan, run, catalogOf } from './helpers.js';

const DEMO =
  'CREATE STREAM demo (color STRING, size BIGINT, ts BIGINT) WITH (DATASOURCE="d", FORMAT="json", TYPE="memory")';

test('output keys: alias, column, dotted navigation, function name, kuiper_field_N (docs/sql.md §4.3)', () => {
  const p = plan('SELECT a, a.b, 3.4, b * 2, ABS(c), lower(d) AS l, e->f FROM s');
  assert.deepEqual(run(p, { a: { b: 'x' }, b: 2, c: -1, d: 'Q', e: { f: 1 } }), {
    a: { b: 'x' },
    b: 'x',
    kuiper_field_0: 3.4,
    kuiper_field_1: 4,
    abs: 1,
    l: 'q',
    kuiper_field_2: 1,
  });
});

test('computed nulls are omitted, plain column references keep explicit nulls', () => {
  const p = plan('SELECT a, b, lower(d) AS l, c + 1 AS x FROM s');
  assert.deepEqual(run(p, { a: null }), { a: null });
  assert.deepEqual(run(plan('SELECT lower(d) AS a FROM s'), {}), {});
});

test('later fields overwrite earlier ones with the same key', () => {
  assert.deepEqual(run(plan('SELECT abs(a), abs(b) FROM s'), { a: -1, b: -2 }), { abs: 2 });
});

test('aliases are usable in other fields; a self reference means the column', () => {
  const p = plan('select size + 1 as size, size + 1 as b from demo', catalogOf(DEMO));
  assert.deepEqual(run(p, { color: 'red', size: 3n, ts: 1n }), { size: 4n, b: 5n });
  const p2 = plan('select size as a, a + 1 as b from demo', catalogOf(DEMO));
  assert.deepEqual(run(p2, { size: 3n }), { a: 3n, b: 4n });
});

test('aliases are usable in WHERE', () => {
  const p = plan('SELECT size * 2 AS d FROM demo WHERE d > 5', catalogOf(DEMO));
  assert.equal(run(p, { size: 2n }), null);
  assert.deepEqual(run(p, { size: 3n }), { d: 6n });
});

test('SELECT *, expr merges the row and the computed keys', () => {
  const p = plan('SELECT a->b AS ab, *, abs(f1) FROM s');
  assert.deepEqual(run(p, { a: { b: 'test' }, b: 'b', f1: -12 }), {
    a: { b: 'test' },
    ab: 'test',
    abs: 12,
    b: 'b',
    f1: -12,
  });
});

test('field names are case-sensitive at run time', () => {
  assert.deepEqual(run(plan('SELECT A FROM s'), { a: 'val_a' }), {});
  assert.deepEqual(run(plan('SELECT `a.b.c` FROM s'), { 'a.b.c': 'v' }), { 'a.b.c': 'v' });
});

test('sendMetaToSink adds __meta', () => {
  const p = plan('SELECT a FROM s', undefined, { sendMetaToSink: true });
  assert.deepEqual(run(p, { a: 1 }, { topic: 't' }), { a: 1, __meta: { topic: 't' } });
});

test('fields named like Object.prototype members read the payload only', () => {
  assert.deepEqual(run(plan('SELECT constructor, toString FROM s'), {}), {});
  assert.deepEqual(run(plan('SELECT constructor FROM s'), { constructor: 'x' }), { constructor: 'x' });
});

test('an alias referenced elsewhere is evaluated once per row (rand(), newuuid())', () => {
  const p = plan('SELECT rand() AS r, r * 2 AS r2, newuuid() AS id, concat(id, "") AS copy FROM s WHERE r >= 0');
  for (let i = 0; i < 5; i++) {
    const out = run(p, {})!;
    assert.equal(out.r2, (out.r as number) * 2);
    assert.equal(out.copy, out.id);
  }
  // a new event gets new values
  const a = run(p, {})!;
  const b = run(p, {})!;
  assert.notEqual(a.id, b.id);
});
