import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopicTrie, matchingFilter } from '../../src/connectors/topictrie.js';
import { topicMatches } from '../../src/connectors/memory/bus.js';

function matches<T>(trie: TopicTrie<T>, topic: string): T[] {
  const out: T[] = [];
  trie.match(topic, (v) => out.push(v));
  return out.sort();
}

test('topic trie: exact levels, + and # filters', () => {
  const t = new TopicTrie<string>();
  for (const f of ['a/b/c', 'a/+/c', 'a/#', '#', '+/+', 'a/b', '+', 'a/b/+/d', 'x//y', 'x/+/y']) t.add(f, f);
  assert.deepEqual(matches(t, 'a/b/c'), ['#', 'a/#', 'a/+/c', 'a/b/c']);
  assert.deepEqual(matches(t, 'a/b'), ['#', '+/+', 'a/#', 'a/b']);
  // `a/#` also matches its parent level
  assert.deepEqual(matches(t, 'a'), ['#', '+', 'a/#']);
  assert.deepEqual(matches(t, 'a/q/r/d'), ['#', 'a/#']);
  assert.deepEqual(matches(t, 'a/b/z/d'), ['#', 'a/#', 'a/b/+/d']);
  // empty levels are levels
  assert.deepEqual(matches(t, 'x//y'), ['#', 'x/+/y', 'x//y']);
  assert.deepEqual(matches(t, 'b/'), ['#', '+/+']);
  assert.deepEqual(matches(t, 'zz'), ['#', '+']);
});

test('topic trie: wildcards in the first level never match $ topics', () => {
  const t = new TopicTrie<string>();
  for (const f of ['#', '+/x', '$SYS/#', '$SYS/+', '$SYS/x']) t.add(f, f);
  assert.deepEqual(matches(t, '$SYS/x'), ['$SYS/#', '$SYS/+', '$SYS/x']);
  assert.deepEqual(matches(t, 'SYS/x'), ['#', '+/x']);
});

test('topic trie: shared subscriptions match as their inner filter', () => {
  assert.equal(matchingFilter('$share/g1/a/+'), 'a/+');
  assert.equal(matchingFilter('$queue/a/b'), 'a/b');
  assert.equal(matchingFilter('a/b'), 'a/b');
  const t = new TopicTrie<string>();
  t.add('$share/g/a/+', 'shared');
  t.add('$queue/a/b', 'queue');
  assert.deepEqual(matches(t, 'a/b'), ['queue', 'shared']);
  assert.ok(t.delete('$share/g/a/+', 'shared'));
  assert.deepEqual(matches(t, 'a/b'), ['queue']);
});

test('topic trie: delete removes one entry and prunes; a value under two filters is visited per filter', () => {
  const t = new TopicTrie<string>();
  t.add('a/+', 'v');
  t.add('a/#', 'v');
  t.add('a/b', 'v');
  t.add('a/b', 'w');
  assert.equal(t.size, 4);
  assert.deepEqual(matches(t, 'a/b'), ['v', 'v', 'v', 'w']);
  assert.equal(t.delete('a/+', 'w'), false);
  assert.equal(t.delete('c/+', 'v'), false);
  assert.ok(t.delete('a/+', 'v'));
  assert.ok(t.delete('a/b', 'v'));
  assert.deepEqual(matches(t, 'a/b'), ['v', 'w']);
  assert.ok(t.delete('a/#', 'v'));
  assert.ok(t.delete('a/b', 'w'));
  assert.equal(t.size, 0);
  assert.deepEqual(matches(t, 'a/b'), []);
  assert.equal(t.matches('a'), false);
});

test('topic trie agrees with the reference matcher on random filters and topics', () => {
  let seed = 42;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const words = ['a', 'b', 'c', ''];
  const topicOf = () => Array.from({ length: 1 + rnd(4) }, () => words[rnd(words.length)]).join('/');
  const filterOf = () => {
    const n = 1 + rnd(4);
    const levels: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = rnd(6);
      if (r === 0 && i === n - 1) levels.push('#');
      else if (r === 1) levels.push('+');
      else levels.push(words[rnd(words.length)]);
    }
    return levels.join('/');
  };
  const filters = Array.from({ length: 300 }, filterOf);
  const t = new TopicTrie<number>();
  filters.forEach((f, i) => t.add(f, i));
  for (let k = 0; k < 500; k++) {
    const topic = topicOf();
    const expected = filters.flatMap((f, i) => (topicMatches(f, topic) ? [i] : [])).sort((x, y) => x - y);
    const got: number[] = [];
    t.match(topic, (i) => got.push(i));
    assert.deepEqual(
      got.sort((x, y) => x - y),
      expected,
      `topic ${JSON.stringify(topic)}`,
    );
  }
});
