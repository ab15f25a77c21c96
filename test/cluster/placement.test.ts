/**
 * Rendezvous placement (src/cluster/placement.ts, docs/cluster.md §3.1): balanced, moving only the joining or leaving
 * node's share, groups and pins respected, instances of a parallel rule on distinct nodes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ownerOf, rank, ruleOfUnit, instanceOfUnit, unitsOf } from '../../src/cluster/placement.js';

const rules = Array.from({ length: 300 }, (_, i) => `rule_${i}`);

function owners(live: string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const id of rules) for (const u of unitsOf(id, { parallelism: 1, node: '' })) m.set(id, ownerOf(u, live)!);
  return m;
}

test('300 rules over 3 nodes: none owns more than 40 %; a 4th node takes only its share, a leaving node gives only its own', () => {
  const three = owners(['n1', 'n2', 'n3']);
  for (const n of ['n1', 'n2', 'n3']) {
    const share = [...three.values()].filter((o) => o === n).length / rules.length;
    assert.ok(share <= 0.4, `${n} owns ${share}`);
  }
  const four = owners(['n1', 'n2', 'n3', 'n4']);
  const moved = rules.filter((id) => three.get(id) !== four.get(id));
  assert.ok(moved.length / rules.length <= 0.3, `${moved.length} moved`);
  assert.ok(
    moved.every((id) => four.get(id) === 'n4'),
    'only rules won by the new node move',
  );
  const two = owners(['n1', 'n3']);
  assert.ok(
    rules.every((id) => three.get(id) === 'n2' || two.get(id) === three.get(id)),
    'only the leaving node’s rules move',
  );
});

test('the ranking is the same whatever the order of the nodes; pins and groups', () => {
  assert.deepEqual(rank('g', ['a', 'b', 'c']), rank('g', ['c', 'a', 'b']));
  const [pinned] = unitsOf('r', { parallelism: 1, node: 'b' });
  assert.equal(ownerOf(pinned, ['a', 'b', 'c']), 'b');
  assert.equal(ownerOf(pinned, ['a', 'c']), undefined, 'a pinned rule waits for its node');
  const together = ['x1', 'x2', 'x3', 'x4'].map((id) =>
    ownerOf(unitsOf(id, { parallelism: 1, node: '' }, 's')[0], ['a', 'b', 'c']),
  );
  assert.equal(new Set(together).size, 1, 'the rules of one SHARED stream go to one node');
  assert.equal(ownerOf(unitsOf('r', { parallelism: 1, node: '' })[0], []), undefined);
});

test('the instances of a parallel rule go to distinct nodes, wrapping around when there are fewer', () => {
  const units = unitsOf('p', { parallelism: 3, node: '' });
  assert.deepEqual(
    units.map((u) => u.id),
    ['p#0', 'p#1', 'p#2'],
  );
  assert.deepEqual(
    units.map((u) => [ruleOfUnit(u.id), instanceOfUnit(u.id)]),
    [
      ['p', 0],
      ['p', 1],
      ['p', 2],
    ],
  );
  assert.equal(new Set(units.map((u) => ownerOf(u, ['a', 'b', 'c']))).size, 3);
  const two = units.map((u) => ownerOf(u, ['a', 'b']));
  assert.equal(new Set(two).size, 2);
  assert.equal(two[0], two[2]);
});
