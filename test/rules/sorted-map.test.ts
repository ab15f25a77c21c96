import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SortedKeyMap } from '../../src/rules/sorted-map.js';

test('the keys stay sorted as rules come and go, whatever the order of the changes', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.boolean(), fc.string({ maxLength: 4 })), { maxLength: 60 }), (ops) => {
      const m = new SortedKeyMap<number>();
      const plain = new Map<string, number>();
      for (const [add, key] of ops) {
        if (add) {
          m.set(key, 1);
          plain.set(key, 1);
        } else assert.equal(m.delete(key), plain.delete(key));
      }
      assert.deepEqual(m.sortedKeys(), [...plain.keys()].sort());
      assert.equal(m.size, plain.size);
    }),
  );
  const m = new SortedKeyMap<number>();
  m.set('b', 1);
  m.set('a', 2);
  m.set('b', 3);
  const keys = m.sortedKeys();
  keys.push('z');
  assert.deepEqual(m.sortedKeys(), ['a', 'b'], 'a copy, the map keeps its own order');
  m.clear();
  assert.deepEqual(m.sortedKeys(), []);
});
