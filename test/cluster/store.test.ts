/**
 * The cluster store (src/cluster/store.ts) on both backends: the metadata store contract every store owes, its
 * transaction, and what makes it a cluster's — a write on one node reaches another node's mirror and its
 * remote-change handler (never the writer's own), listings keep the writer's order everywhere, and rule state goes
 * to the fenced state store.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterStore } from '../../src/cluster/store.js';
import { Fenced } from '../../src/cluster/state-store.js';
import { contract } from '../helpers/kv-contract.js';
import { waitFor } from '../helpers/process.js';
import {
  BACKEND_SUBJECTS,
  silentLogger as logger,
  startBackendServers,
  stopBackendServers,
  withBackend,
} from '../helpers/cluster-backends.js';

before(startBackendServers);
after(stopBackendServers);

for (const s of BACKEND_SUBJECTS) {
  describe(`cluster store: ${s.kind}`, () => {
    test('the metadata store contract', () =>
      withBackend(s, async (b) => {
        const store = await ClusterStore.open(b, () => 'a', logger);
        await contract(store);
        await store.close();
      }));

    test('a change made on one node reaches the other in order; its own changes are not handed back', () =>
      withBackend(s, async (b, name) => {
        const other = await s.open(name);
        const a = await ClusterStore.open(b, () => 'a', logger);
        const c = await ClusterStore.open(other, () => 'c', logger);
        const atA: string[] = [];
        const atC: string[] = [];
        a.onRemoteChange((ns, key, value) => void atA.push(`${ns}/${key}=${value}`));
        c.onRemoteChange((ns, key, value) => void atC.push(`${ns}/${key}=${value}`));
        await a.set('stream', 's1', 'one');
        await a.set('stream', 's2', 'two');
        await a.setIfAbsent('rule', 'r1', '{}');
        await a.delete('stream', 's1');
        await a.set('stream', 's1', 'again');
        await waitFor(() => atC.length >= 5, 10_000, 'every change at c');
        assert.deepEqual(atC, [
          'stream/s1=one',
          'stream/s2=two',
          'rule/r1={}',
          'stream/s1=undefined',
          'stream/s1=again',
        ]);
        assert.deepEqual(await c.keys('stream'), ['s2', 's1'], "the writer's listing order");
        await c.set('stream', 's2', 'from c');
        await waitFor(() => atA.length >= 1, 10_000, 'the change at a');
        assert.deepEqual(atA, ['stream/s2=from c']);
        assert.equal(await a.get('stream', 's2'), 'from c');
        assert.deepEqual(await a.keys('stream'), ['s2', 's1'], 'a replaced key keeps its position everywhere');
        await a.settled();
        assert.deepEqual(atA, ['stream/s2=from c'], "a's own writes never came back to it");
        await a.close();
        await c.close();
        await other.close();
      }));

    test('a transaction is written as one batch at its end; reads inside it see its writes', () =>
      withBackend(s, async (b, name) => {
        const other = await s.open(name);
        const a = await ClusterStore.open(b, () => 'a', logger);
        const c = await ClusterStore.open(other, () => 'c', logger);
        await a.set('stream', 'old', 'x');
        await a.set('rule', 'keep', 'k');
        await waitFor(async () => (await c.get('stream', 'old')) === 'x', 10_000, 'c to see the data');
        await a.transaction(async () => {
          await a.clear('stream');
          await a.set('stream', 'new', 'y');
          assert.deepEqual(await a.entries('stream'), [['new', 'y']]);
          assert.equal(await a.setIfAbsent('stream', 'new', 'z'), false);
          assert.equal(await c.get('stream', 'new'), undefined, 'nothing is written before the end');
        });
        assert.deepEqual(await a.entries('stream'), [['new', 'y']]);
        await waitFor(async () => (await c.get('stream', 'new')) === 'y', 10_000, 'c to see the batch');
        assert.equal(await c.get('stream', 'old'), undefined);
        assert.equal(await c.get('rule', 'keep'), 'k');
        await assert.rejects(
          a.transaction(async () => {
            await a.set('stream', 'never', 'n');
            throw new Error('abandoned');
          }),
        );
        assert.equal(await a.get('stream', 'never'), undefined, 'an abandoned transaction writes nothing');
        await a.close();
        await c.close();
        await other.close();
      }));

    test('rule state goes to the fenced state store under the routed unit and epoch', () =>
      withBackend(s, async (b) => {
        const a = await ClusterStore.open(b, () => 'a', logger);
        let epoch: number | undefined = 7;
        a.routeStateBy({
          stateUnit: (ns) => ({ unit: ns.startsWith('checkpoint:') ? ns.slice(11) : ns, epoch, placed: true }),
        });
        assert.equal(await a.state.fence('r1', 7), true);
        await a.set('checkpoint:r1', 'latest', '{"id":1}');
        assert.equal(await a.get('checkpoint:r1', 'latest'), '{"id":1}');
        assert.deepEqual(await a.entries('checkpoint:r1'), [['latest', '{"id":1}']]);
        assert.deepEqual(await a.keys('rule'), [], 'no metadata was written');
        assert.deepEqual(await a.state.head('r1'), { epoch: 7, node: 'a' });
        await a.state.fence('r1', 9);
        await assert.rejects(a.set('checkpoint:r1', 'latest', '{"id":2}'), Fenced);
        epoch = undefined;
        await assert.rejects(a.clear('checkpoint:r1'), Fenced, 'a node that holds no lease writes nothing');
        epoch = 9;
        await a.clear('checkpoint:r1');
        assert.deepEqual(await a.entries('checkpoint:r1'), []);
        await a.close();
      }));
  });
}
