import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { SqliteStore } from '../../src/store/index.js';
import { RedisStore } from '../../src/store/redis.js';
import { contract } from '../helpers/kv-contract.js';

/** Go's gob stream of one string, written out here independently of the store's own codec. */
function gob(s: string): Buffer {
  const uint = (x: number): number[] => {
    if (x < 128) return [x];
    const b: number[] = [];
    for (let v = x; v > 0; v = Math.floor(v / 256)) b.unshift(v % 256);
    return [256 - b.length, ...b];
  };
  const text = Buffer.from(s);
  const body = [0x0c, 0x00, ...uint(text.length), ...text];
  return Buffer.from([...uint(body.length), ...body]);
}

test('SQLite store: ordered, namespaced, atomic, and durable across reopen', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-kv-'));
  try {
    const path = join(dir, 'kv.db');
    const s = new SqliteStore(path);
    await contract(s);
    await s.set('x', 'k', 'v');
    await s.close();
    const again = new SqliteStore(path);
    assert.equal(await again.get('x', 'k'), 'v');
    assert.deepEqual(await again.keys('rule'), ['b', 'z']);
    await again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Redis store against the real server: same contract, durable across reconnect', async () => {
  const prefix = `eddy-test:${randomUUID()}:`;
  const opts = { host: '127.0.0.1', port: 6379, prefix };
  const s = new RedisStore(opts);
  await s.connect();
  try {
    await contract(s);
    await s.close();
    const again = new RedisStore(opts);
    await again.connect();
    assert.deepEqual(await again.keys('rule'), ['b', 'z']);
    await again.clear('rule');
    await again.clear('x');
    await again.close();
  } finally {
    await s.close();
  }
});

/** Every key under a prefix with its serialized value: what a process reading Redis would find. */
async function snapshot(raw: Redis, prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of (await raw.keys(`${prefix}*`)).sort()) {
    if (key.endsWith('EDDY:SEQ')) continue;
    out.set(key, (await raw.dumpBuffer(key))?.toString('hex') ?? '');
  }
  return out;
}

test('Redis transaction: its reads see its writes, Redis holds none of them before the commit, a failure discards them', async () => {
  const prefix = `eddy-test:${randomUUID()}:`;
  const opts = { host: '127.0.0.1', port: 6379, prefix };
  const raw = new Redis({ host: '127.0.0.1', port: 6379 });
  const s = new RedisStore(opts);
  await s.connect();
  try {
    await s.set('stream', 'old', 'o');
    await s.set('other', 'a', '1');
    await s.set('other', 'b', '2');
    const before = await snapshot(raw, prefix);
    await s.transaction(async () => {
      await s.clear('stream');
      assert.equal(await s.get('stream', 'old'), undefined, 'a cleared namespace hides what Redis holds');
      await contract(s);
      assert.equal(await s.delete('other', 'a'), true);
      await s.set('other', 'c', '3');
      await s.set('other', 'b', '22');
      await s.set('other', 'a', '11');
      assert.deepEqual(await s.keys('other'), ['b', 'c', 'a'], 'replaced keys keep their place, re-created ones move');
      assert.deepEqual(await snapshot(raw, prefix), before, 'nothing reaches Redis before the commit');
    });
    const expect = async (store: RedisStore): Promise<void> => {
      assert.deepEqual(await store.keys('stream'), []);
      assert.deepEqual(await store.keys('rule'), ['b', 'z']);
      assert.deepEqual(await store.entries('other'), [
        ['b', '22'],
        ['c', '3'],
        ['a', '11'],
      ]);
    };
    await expect(s);
    const committed = await snapshot(raw, prefix);
    assert.notDeepEqual(committed, before);
    await assert.rejects(
      s.transaction(async () => {
        await s.set('other', 'x', '1');
        await s.batch([{ ns: 'rule', key: 'b', value: null }]);
        await s.clear('other');
        assert.deepEqual(await s.keys('rule'), ['z']);
        throw new Error('failed half-way');
      }),
      /failed half-way/,
    );
    assert.deepEqual(await snapshot(raw, prefix), committed, 'a failed transaction leaves Redis as it was');
    const again = new RedisStore(opts);
    await again.connect();
    await expect(again);
    for (const ns of ['rule', 'other', 'stream']) await again.clear(ns);
    await again.close();
  } finally {
    await s.close();
    await raw.quit();
  }
});

test("Redis store in eKuiper's layout: KV:STORE:<ns>:<key> holding gob strings, in the configured database", async () => {
  const db = 13;
  const raw = new Redis({ host: '127.0.0.1', port: 6379, db });
  const s = new RedisStore({ host: '127.0.0.1', port: 6379, database: db });
  await s.connect();
  try {
    await raw.flushdb();
    await s.set('rule', 'r1', '{"id":"r1"}');
    assert.deepEqual(await raw.getBuffer('KV:STORE:rule:r1'), gob('{"id":"r1"}'));
    const db0 = new Redis({ host: '127.0.0.1', port: 6379, db: 0 });
    assert.equal(await db0.exists('KV:STORE:rule:r1'), 0, 'nothing written to database 0');
    await db0.quit();
    // entries another program wrote: listed after the ordered ones, by key; values that are no gob string skipped
    await raw.set('KV:STORE:rule:b_other', gob('{"id":"b_other"}'));
    await raw.set('KV:STORE:rule:a_other', gob('{"id":"a_other"}'));
    await raw.set('KV:STORE:rule:int', Buffer.from([0x03, 0x04, 0x00, 0x0e]));
    await s.set('rule', 'r0', '{"id":"r0"}');
    assert.deepEqual(await s.keys('rule'), ['r1', 'r0', 'a_other', 'b_other', 'int']);
    assert.deepEqual(
      (await s.entries('rule')).map(([k]) => k),
      ['r1', 'r0', 'a_other', 'b_other'],
    );
    assert.equal(await s.get('rule', 'a_other'), '{"id":"a_other"}');
    assert.equal(await s.get('rule', 'int'), undefined);
    // rule ids with glob characters stay within their namespace
    await s.set('checkpoint:r[1]*', 'latest', 'x');
    await s.set('checkpoint:r1', 'latest', 'y');
    assert.deepEqual(await s.keys('checkpoint:r[1]*'), ['latest']);
    await s.clear('checkpoint:r[1]*');
    assert.equal(await s.get('checkpoint:r1', 'latest'), 'y');
    await s.clear('rule');
    assert.deepEqual(await raw.keys('KV:STORE:rule:*'), []);
  } finally {
    await s.close();
    await raw.flushdb();
    await raw.quit();
  }
});

test('SQLite batch is all-or-nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-kv-'));
  const s = new SqliteStore(join(dir, 'kv.db'));
  try {
    await s.set('n', 'keep', '1');
    const bad = { ns: 'n', key: 'broken', value: undefined as unknown as string };
    await assert.rejects(s.batch([{ ns: 'n', key: 'keep', value: null }, bad]));
    assert.equal(await s.get('n', 'keep'), '1', 'the delete before the failing write was rolled back');
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('SQLite writes asked for together are committed together, each with its own outcome, and reads see them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-kv-'));
  const path = join(dir, 'kv.db');
  const s = new SqliteStore(path);
  try {
    await s.set('n', 'old', '0');
    const bad = { ns: 'n', key: 'broken', value: undefined as unknown as string };
    // one turn of the event loop: a new key, a duplicate, a failing batch, a delete
    const writes = [
      s.setIfAbsent('n', 'a', '1'),
      s.setIfAbsent('n', 'old', 'x'),
      s.batch([{ ns: 'n', key: 'b', value: '2' }, bad]),
      s.delete('n', 'old'),
      s.set('n', 'c', '3'),
    ];
    // a read made before any of them settled sees them all
    assert.deepEqual(await s.entries('n'), [
      ['a', '1'],
      ['c', '3'],
    ]);
    const outcomes = await Promise.allSettled(writes);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
    );
    assert.equal((outcomes[0] as PromiseFulfilledResult<boolean>).value, true);
    assert.equal((outcomes[1] as PromiseFulfilledResult<boolean>).value, false, 'the key existed');
    assert.equal((outcomes[3] as PromiseFulfilledResult<boolean>).value, true);
    await s.close();
    // what the resolved writes stored is in the file
    const again = new SqliteStore(path);
    assert.deepEqual(await again.keys('n'), ['a', 'c']);
    await again.close();
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
