import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHarness, plainOut } from './harness.js';
import { settle, until } from './helpers.js';
import type { ValueObject } from '../../src/values/value.js';

/**
 * The same join written twice: `ON <eq> AND …` (a hash join) and `ON true AND <eq> AND …` (a nested loop, the
 * equality no longer first): both must give the same rows in the same order, or the same error.
 */
async function sameAsNestedLoop(kind: string, on: string, left: ValueObject[], right: ValueObject[]): Promise<unknown> {
  const h = await createHarness();
  try {
    const tag = Math.random().toString(36).slice(2);
    h.ddl(`CREATE STREAM l () WITH (DATASOURCE="t/${tag}/l", TYPE="memory")`);
    h.ddl(`CREATE STREAM r () WITH (DATASOURCE="t/${tag}/r", TYPE="memory")`);
    const n = left.length + right.length;
    const sql = (cond: string) =>
      `SELECT l.id AS lid, l.n AS ln, r.id AS rid, r.n AS rn FROM l ${kind} JOIN r ON ${cond} GROUP BY COUNTWINDOW(${n})`;
    const hashed = await h.rule(`j1${tag}`, sql(on));
    const looped = await h.rule(`j2${tag}`, sql(`true AND ${on}`));
    for (const row of left) h.publish(`t/${tag}/l`, row);
    for (const row of right) h.publish(`t/${tag}/r`, row);
    await until(() => hashed.out.length > 0 && looped.out.length > 0, 'both results');
    assert.deepEqual(plainOut(hashed.out), plainOut(looped.out));
    return plainOut(hashed.out);
  } finally {
    await h.close();
  }
}

const L: ValueObject[] = [
  { id: 1n, n: 'l0' },
  { id: 2.0, n: 'l1' },
  { id: 9007199254740993n, n: 'l2' },
  { id: null, n: 'l3' },
  { n: 'l4' },
  { id: 2n, n: 'l5' },
];
const R: ValueObject[] = [
  { id: 1.0, n: 'r0' },
  { id: 2n, n: 'r1' },
  { id: 9007199254740992n, n: 'r2' },
  { id: 9007199254740993n, n: 'r3' },
  { id: null, n: 'r4' },
  { id: 2.5, n: 'r5' },
];

test('equi-join as a hash join: ints and floats by value, nulls never equal, order and results of the nested loop', async () => {
  const rows = (await sameAsNestedLoop('INNER', 'l.id = r.id', L, R)) as Array<Array<Record<string, unknown>>>;
  assert.deepEqual(
    rows[0].map((x) => `${x.ln}-${x.rn}`),
    ['l0-r0', 'l1-r1', 'l2-r3', 'l5-r1'],
  );
  // the equality written right side first, and more conjuncts after it
  await sameAsNestedLoop('INNER', 'r.id = l.id AND r.n != "r1"', L, R);
});

test('hash joins of every kind give the nested loop results: LEFT, RIGHT, FULL', async () => {
  for (const kind of ['LEFT', 'RIGHT', 'FULL']) await sameAsNestedLoop(kind, 'l.id = r.id', L, R);
});

test('keys of kinds = cannot compare fail the join as the nested loop does', async () => {
  const rows = (await sameAsNestedLoop(
    'INNER',
    'l.id = r.id',
    [{ id: 'a', n: 'l0' }],
    [
      { id: 1n, n: 'r0' },
      { id: 'a', n: 'r1' },
    ],
  )) as unknown[];
  assert.equal(rows.length, 1);
  assert.match(JSON.stringify(rows[0]), /error/);
  await sameAsNestedLoop(
    'INNER',
    'l.id = r.id',
    [
      { id: 'a', n: 'l0' },
      { id: 3n, n: 'l1' },
    ],
    [{ id: 'a', n: 'r1' }],
  );
});

test('a large window join runs in slices: the event loop turns before its result is emitted', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM bl (v BIGINT) WITH (DATASOURCE="t/big/l", TYPE="memory")');
    h.ddl('CREATE STREAM br (v BIGINT) WITH (DATASOURCE="t/big/r", TYPE="memory")');
    const n = 1500;
    const { out } = await h.rule(
      'big',
      `SELECT count(*) AS c FROM bl INNER JOIN br ON bl.v < br.v GROUP BY COUNTWINDOW(${2 * n})`,
    );
    let turnedBeforeResult: boolean | undefined;
    // in chunks the queues (bufferLength 1024) take
    for (let i = 0; i < n; i++) {
      h.publish('t/big/l', { v: BigInt(i) });
      if (i % 500 === 499) await settle(1);
    }
    for (let i = 0; i < n - 1; i++) {
      h.publish('t/big/r', { v: BigInt(i) });
      if (i % 500 === 499) await settle(1);
    }
    await settle(1);
    h.publish('t/big/r', { v: BigInt(n - 1) });
    setImmediate(() => {
      turnedBeforeResult = out.length === 0;
    });
    await until(() => out.length > 0, 'the join result');
    // pairs (i, j) with i < j
    assert.deepEqual(plainOut(out), [[{ c: (n * (n - 1)) / 2 }]]);
    assert.equal(turnedBeforeResult, true);
  } finally {
    await h.close();
  }
});
