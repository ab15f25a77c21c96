/**
 * The one suite both cluster backends pass (docs/cluster.md §2): the table contract (revisions, compare-and-set,
 * prefix listings, large values, the change feed and its survival of a cut connection, atomic batches) and the
 * backend-independent parts built on it — leases with growing epochs, fenced state, liveness by the server's clock.
 * NATS runs on a nats-server of the suite's own; Redis on the shared server at 6379 under a unique cluster name. Both
 * are reached through a TCP proxy the suite can cut.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { keyOf, partsOf, type Change } from '../../src/cluster/backend.js';
import { JOURNAL_KEY } from '../../src/cluster/nats-backend.js';
import { Leases } from '../../src/cluster/leases.js';
import { Fenced, StateStore } from '../../src/cluster/state-store.js';
import { Membership } from '../../src/cluster/membership.js';
import { startTcpProxy } from '../helpers/tcpproxy.js';
import { waitFor } from '../helpers/process.js';
import {
  BACKEND_SUBJECTS,
  silentLogger as logger,
  startBackendServers,
  stopBackendServers,
  uniqueClusterName as uniqueName,
  withBackend,
} from '../helpers/cluster-backends.js';

before(startBackendServers);
after(stopBackendServers);

for (const s of BACKEND_SUBJECTS) {
  describe(`cluster backend: ${s.kind}`, () => {
    test('revisions grow; create refuses an existing key; update and delete compare the revision', () =>
      withBackend(s, async (b) => {
        const t = b.table('meta');
        const k = keyOf('rule', 'r1');
        const r1 = await t.create(k, 'one');
        assert.ok(r1 !== undefined && r1 > 0);
        assert.equal(await t.create(k, 'again'), undefined);
        const r2 = await t.update(k, 'two', r1);
        assert.ok(r2 !== undefined && r2 > r1);
        assert.equal(await t.update(k, 'stale', r1), undefined);
        assert.equal((await t.get(k))?.value, 'two');
        const r3 = await t.put(k, 'three');
        assert.ok(r3 > r2);
        assert.equal(await t.delete(k, r2), 0, 'a delete at an old revision does nothing');
        const d = await t.delete(k, r3);
        assert.ok(d > r3);
        assert.equal(await t.get(k), undefined);
        assert.equal(await t.delete(k), 0);
        const r4 = await t.create(k, 'reborn');
        assert.ok(r4 !== undefined && r4 > d, 'a deleted key can be created again');
        const e = await t.get(k);
        assert.equal(e?.revision, r4);
        // the server's clock stamps the entry (same machine here: near ours)
        assert.ok(Math.abs((e?.time ?? 0) - Date.now()) < 60_000);
      }));

    test('keys of any characters round-trip and list by whole-token prefix', () =>
      withBackend(s, async (b) => {
        const t = b.table('meta');
        const odd = ['a.b', 'x y/z', '', 'ünï*?[]', '=3D', 'rule'];
        for (const k of odd) await t.put(keyOf('rule', k), `v:${k}`);
        await t.put(keyOf('rules', 'other'), 'not a rule');
        await t.put(keyOf('ru'), 'short');
        const listed = await t.list(keyOf('rule'));
        assert.deepEqual(listed.map((e) => partsOf(e.key)[1]).sort(), [...odd].sort());
        for (const e of listed) assert.equal(e.value, `v:${partsOf(e.key)[1]}`);
        assert.equal((await t.list('')).length, odd.length + 2);
      }));

    test('values of several megabytes are stored, replaced, listed, watched and deleted', () =>
      withBackend(s, async (b) => {
        const t = b.table('state');
        const big = (c: string) => c.repeat(3 * 1024 * 1024);
        const seen: Change[] = [];
        const w = t.watch(keyOf('u'), (c) => seen.push(c));
        await w.ready;
        const k = keyOf('u', 'big');
        const r1 = await t.put(k, big('a'));
        assert.equal((await t.get(k))?.value, big('a'));
        const r2 = await t.update(k, big('b'), r1);
        assert.ok(r2 !== undefined);
        assert.equal((await t.list(keyOf('u')))[0]?.value, big('b'));
        await waitFor(() => seen.length >= 2, 20_000, 'the watch to report both writes');
        assert.equal(seen[seen.length - 1]?.value, big('b'));
        assert.ok((await t.delete(k)) > 0);
        assert.equal(await t.get(k), undefined);
        await w.stop();
      }));

    test('a watch reports the current entries, then every change in revision order, deletes included', () =>
      withBackend(s, async (b) => {
        const t = b.table('meta');
        for (const k of ['z', 'a', 'm', 'b', 'y']) await t.put(keyOf('stream', `early_${k}`), k);
        await t.put(keyOf('stream', 's1'), 'one');
        await t.put(keyOf('rule', 'r0'), 'not watched');
        const all: Change[] = [];
        const w = t.watch(keyOf('stream'), (c) => all.push(c), { initial: true });
        await w.ready;
        assert.deepEqual(
          all.map((c) => [partsOf(c.key)[1], c.value]),
          [...['z', 'a', 'm', 'b', 'y'].map((k) => [`early_${k}`, k]), ['s1', 'one']],
          'the current entries come first, in the order they were written',
        );
        // from here on only the entry s1 and the changes after the listing matter
        all.splice(0, 5);
        const seen = all;
        await t.put(keyOf('stream', 's2'), 'two');
        await t.put(keyOf('rule', 'r1'), 'not watched');
        await t.delete(keyOf('stream', 's1'));
        await t.put(keyOf('stream', 's2'), 'two again');
        await waitFor(() => seen.length >= 4, 10_000, 'every change');
        assert.deepEqual(
          seen.map((c) => [partsOf(c.key)[1], c.value]),
          [
            ['s1', 'one'],
            ['s2', 'two'],
            ['s1', undefined],
            ['s2', 'two again'],
          ],
        );
        for (let i = 1; i < seen.length; i++) assert.ok(seen[i].revision > seen[i - 1].revision);
        await w.stop();
      }));

    test('a batch applies every write, in order, and says their revisions', () =>
      withBackend(s, async (b) => {
        const t = b.table('meta');
        await t.put(keyOf('rule', 'gone'), 'x');
        const revs = await t.batch([
          { key: keyOf('rule', 'a'), value: '1' },
          { key: keyOf('rule', 'gone'), value: null },
          { key: keyOf('rule', 'a'), value: '2' },
          { key: keyOf('rule', 'never'), value: null },
        ]);
        assert.equal(revs.length, 4);
        assert.ok(revs[0] > 0 && revs[1] > revs[0] && revs[2] > revs[1]);
        assert.equal(revs[3], 0, 'deleting an absent key is no write');
        assert.equal((await t.get(keyOf('rule', 'a')))?.value, '2');
        assert.equal(await t.get(keyOf('rule', 'gone')), undefined);
        assert.deepEqual(
          (await t.list('')).map((e) => partsOf(e.key)[1]),
          ['a'],
          'no journal or marker is left in the table',
        );
      }));

    test('a watch reports what changed while its connection was cut', async () => {
      const name = uniqueName();
      const proxy = await startTcpProxy(s.port());
      const watched = await s.openVia(name, proxy);
      const writer = await s.open(name);
      try {
        const seen = new Map<string, string | undefined>();
        const w = watched.table('meta').watch('', (c) => seen.set(partsOf(c.key)[1], c.value), { initial: true });
        await w.ready;
        await writer.table('meta').put(keyOf('rule', 'before'), '1');
        await waitFor(() => seen.get('before') === '1', 10_000, 'the change before the cut');
        proxy.cut();
        await writer.table('meta').put(keyOf('rule', 'during'), '2');
        await writer.table('meta').delete(keyOf('rule', 'before'));
        await new Promise((r) => setTimeout(r, 300));
        proxy.restore();
        await waitFor(
          () => seen.get('during') === '2' && seen.has('before') && seen.get('before') === undefined,
          20_000,
          'the changes made during the cut',
        );
        await w.stop();
      } finally {
        await watched.close();
        await writer.close();
        await proxy.close();
        await s.cleanup(name);
      }
    });

    test('a lease is taken once; a live holder keeps it; a take after expiry gets a higher epoch', () =>
      withBackend(s, async (b) => {
        const leases = new Leases(b.table('leases'));
        await leases.start();
        const a = { node: 'a', session: 's-a' };
        const c = { node: 'c', session: 's-c' };
        const gone = new Set<string>();
        const expired = (l: { session: string }) => gone.has(l.session);
        const e1 = await leases.acquire('rule1', a, expired);
        assert.ok(e1 !== undefined);
        assert.equal(await leases.acquire('rule1', a, expired), e1, 'the holder keeps its epoch');
        assert.equal(await leases.acquire('rule1', c, expired), undefined, 'a live holder keeps the lease');
        gone.add('s-a');
        const e2 = await leases.acquire('rule1', c, expired);
        assert.ok(e2 !== undefined && e2 > e1);
        await waitFor(() => leases.current('rule1')?.node === 'c', 10_000, 'the watch to see the new holder');
        assert.equal(leases.current('rule1')?.epoch, e2);
        assert.equal(await leases.release('rule1', e1), false, 'a former holder cannot release it');
        assert.equal(await leases.release('rule1', e2), true);
        const e3 = await leases.acquire('rule1', a, () => false);
        assert.ok(e3 !== undefined && e3 > e2, 'a free lease is taken at a higher epoch');
        // two nodes racing for a lease whose holder is gone: exactly one wins
        gone.add('s-a');
        const results = await Promise.all([
          leases.acquire('rule1', { node: 'x', session: 's-x' }, expired),
          leases.acquire('rule1', { node: 'y', session: 's-y' }, expired),
        ]);
        assert.equal(results.filter((r) => r !== undefined).length, 1);
        await leases.stop();
      }));

    test('state writes are fenced by epoch; a fence keeps the state; large values and drop', () =>
      withBackend(s, async (b) => {
        const a = new StateStore(b.table('state'), () => 'a');
        const c = new StateStore(b.table('state'), () => 'c');
        assert.equal(await a.fence('r1', 5), true);
        await a.write('r1', 5, [
          { key: 'checkpoint:r1\u0000latest', value: '{"id":1}' },
          { key: 'sink/x\u0000page0', value: 'p'.repeat(200_000) },
        ]);
        assert.equal(await c.fence('r1', 9), true, 'a later holder fences');
        assert.equal((await c.read('r1')).get('checkpoint:r1\u0000latest'), '{"id":1}', 'the state survives');
        await assert.rejects(a.write('r1', 5, [{ key: 'checkpoint:r1\u0000latest', value: '{"id":2}' }]), Fenced);
        assert.equal(await a.fence('r1', 5), false, 'an earlier holder cannot fence again');
        await c.write('r1', 9, [{ key: 'sink/x\u0000page0', value: null }]);
        const state = await c.read('r1');
        assert.deepEqual([...state.keys()], ['checkpoint:r1\u0000latest']);
        assert.deepEqual(await c.head('r1'), { epoch: 9, node: 'c' });
        // concurrent writers of one epoch (two processes of the same holder) both land
        await Promise.all([
          c.write('r1', 9, [{ key: 'k1', value: '1' }]),
          new StateStore(b.table('state'), () => 'c').write('r1', 9, [{ key: 'k2', value: '2' }]),
        ]);
        const both = await c.read('r1');
        assert.equal(both.get('k1'), '1');
        assert.equal(both.get('k2'), '2');
        await c.drop('r1');
        assert.deepEqual(await b.table('state').list(keyOf('r1')), []);
        assert.deepEqual(await c.head('r1'), { epoch: 0, node: '' });
      }));

    test("a node is alive while its heartbeat is fresh by the server's clock; leaving removes it at once", () =>
      withBackend(s, async (b) => {
        const mk = (id: string) =>
          new Membership(b.table('nodes'), { id, rest: `http://${id}`, startedAt: 0 }, 800, logger);
        const a = mk('a');
        const c = mk('c');
        await a.start();
        await c.start();
        await waitFor(() => a.liveNodes().join() === 'a,c' && c.liveNodes().join() === 'a,c', 10_000, 'both alive');
        assert.ok(Math.abs(a.serverNow() - Date.now()) < 60_000);
        // c stops beating without leaving: a sees it dead once its last heartbeat is older than the lease timeout
        await c.stop(false);
        await waitFor(() => a.liveNodes().join() === 'a', 10_000, 'c to be judged dead');
        assert.equal(a.view().find((n) => n.id === 'c')?.alive, false);
        const d = mk('d');
        await d.start();
        await waitFor(() => a.liveNodes().join() === 'a,d', 10_000, 'd alive');
        await d.stop(true);
        await waitFor(() => a.view().every((n) => n.id !== 'd'), 10_000, 'd gone from the view');
        await a.stop(true);
      }));
  });
}

test('nats: a batch whose writer died after its journal is finished by the next batch', async () => {
  const name = uniqueName();
  const b = await BACKEND_SUBJECTS[0].open(name);
  try {
    const t = b.table('meta');
    // what a writer that died right after storing its journal leaves behind
    await t.put(
      JOURNAL_KEY,
      JSON.stringify({
        at: 0,
        ops: [
          { key: keyOf('rule', 'x'), value: 'from the dead' },
          { key: keyOf('rule', 'y'), value: 'too' },
        ],
      }),
    );
    assert.equal(await t.get(keyOf('rule', 'x')), undefined);
    await new Promise((r) => setTimeout(r, 400));
    await t.batch([{ key: keyOf('rule', 'z'), value: 'next' }]);
    assert.equal((await t.get(keyOf('rule', 'x')))?.value, 'from the dead');
    assert.equal((await t.get(keyOf('rule', 'y')))?.value, 'too');
    assert.equal((await t.get(keyOf('rule', 'z')))?.value, 'next');
    assert.equal(await t.get(JOURNAL_KEY), undefined);
  } finally {
    await b.close();
  }
});
