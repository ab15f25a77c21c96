/**
 * The behaviour every metadata store implementation owes (src/store/kv.ts): SQLite, Redis, and the cluster store
 * on either backend run the same cases.
 */
import assert from 'node:assert/strict';
import type { KVStore } from '../../src/store/index.js';

/** The same behaviour is required of every store implementation. */
export async function contract(store: KVStore): Promise<void> {
  assert.equal(await store.get('stream', 'a'), undefined);
  await store.set('stream', 'b', '{"x":1}');
  await store.set('stream', 'a', '{"x":2}');
  await store.set('rule', 'b', 'r');
  assert.deepEqual(await store.keys('stream'), ['b', 'a'], 'listing keeps insertion order');
  await store.set('stream', 'b', '{"x":3}');
  assert.deepEqual(
    await store.entries('stream'),
    [
      ['b', '{"x":3}'],
      ['a', '{"x":2}'],
    ],
    'a replaced key keeps its position and takes the new value',
  );
  assert.equal(await store.setIfAbsent('stream', 'a', 'no'), false);
  assert.equal(await store.get('stream', 'a'), '{"x":2}');
  assert.equal(await store.setIfAbsent('stream', 'c', 'yes'), true);
  assert.equal(await store.delete('stream', 'b'), true);
  assert.equal(await store.delete('stream', 'b'), false);
  await store.set('stream', 'b', 'again');
  assert.deepEqual(await store.keys('stream'), ['a', 'c', 'b'], 're-created entries go to the end');
  await store.batch([
    { ns: 'stream', key: 'a', value: null },
    { ns: 'stream', key: 'd', value: 'd' },
    { ns: 'rule', key: 'z', value: 'z' },
  ]);
  assert.deepEqual(await store.keys('stream'), ['c', 'b', 'd']);
  assert.deepEqual(await store.keys('rule'), ['b', 'z'], 'namespaces are separate');
  await store.clear('stream');
  assert.deepEqual(await store.keys('stream'), []);
  assert.deepEqual(await store.keys('rule'), ['b', 'z']);
}
