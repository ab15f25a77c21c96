import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSelect } from '../../src/sql/index.js';
import { planQuery } from '../../src/plan/planner.js';
import { SELECTS } from '../sql/corpus.js';
import { catalogOf, deps } from './helpers.js';

function deepFreeze(v: unknown): void {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
}

/** What planning a query gives, in a form two plans can be compared by. */
function outcome(sql: string, d: ReturnType<typeof deps>): string {
  try {
    return `plan: ${planQuery(sql, d)
      .nodes.map((n) => n.name)
      .join(',')}`;
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
}

test('a parsed SELECT is handed out again for the same text, and planning never changes it', () => {
  const d = deps(
    catalogOf(
      ...['demo', 's', 's1', 's2', 's3', 's4'].map((n) => `CREATE STREAM ${n} () WITH (DATASOURCE="${n}")`),
      'CREATE TABLE t3 () WITH (DATASOURCE="t3", TYPE="memory")',
    ),
  );
  const extra = [
    'SELECT deviceId, avg(temperature) AS t FROM demo WHERE temperature > 20 GROUP BY deviceId, TUMBLINGWINDOW(ss, 10) HAVING avg(temperature) > 25 ORDER BY t DESC',
    'SELECT s1.a, s2.b, lag(s1.a) OVER (PARTITION BY s1.k) FROM s1 LEFT JOIN s2 ON s1.id = s2.id GROUP BY COUNTWINDOW(3)',
  ];
  let planned = 0;
  for (const sql of [...SELECTS, ...extra]) {
    const first = outcome(sql, d);
    const tree = parseSelect(sql);
    assert.equal(parseSelect(sql), tree, 'the same tree for the same text');
    // a planner that wrote into the tree would now throw (modules are strict) or plan differently
    deepFreeze(tree);
    assert.equal(outcome(sql, d), first, sql);
    if (first.startsWith('plan:')) planned++;
  }
  assert.ok(planned >= 10, `only ${planned} of the queries planned`);
});
