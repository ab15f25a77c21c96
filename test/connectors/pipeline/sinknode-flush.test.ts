/**
 * `SinkNode.flush()`, which qos ≥ 1 checkpoints wait for before acknowledging their sources (docs/runtime.md §1.9):
 * it resolves once what was pushed before is sent, or saved in the store by the failure cache while the target
 * fails, and resolves false when the node closes first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { Connectors } from '../../../src/connectors/index.js';
import { sinkCacheNamespace } from '../../../src/connectors/pipeline/sinknode.js';
import { loadConfig, prepareHome, resolveHome } from '../../../src/config/index.js';
import { SqliteStore } from '../../../src/store/index.js';
import { logger, recordingServer, ruleOptions, tempDir, waitFor } from '../e2-helpers.js';

async function service(): Promise<{ conns: Connectors; store: SqliteStore; close: () => Promise<void> }> {
  const t = tempDir('eddy-flush-home-');
  const home = resolveHome(t.dir);
  prepareHome(home);
  const env = { KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1', KUIPER__SOURCE__HTTPSERVERPORT: '0' };
  const store = new SqliteStore(join(home.data, 'test.db'));
  const conns = await Connectors.create({ home, config: loadConfig(home, env), env, store, logger });
  return {
    conns,
    store,
    close: async () => {
      await conns.close();
      await store.close();
      t.remove();
    },
  };
}

test('flush resolves only once every row pushed before it has been answered by the target', async () => {
  const waiting: ServerResponse[] = [];
  const srv = await recordingServer((_r, res) => waiting.push(res));
  const { conns, close } = await service();
  const node = conns.createSinkNode({
    ruleId: 'flush1',
    index: 0,
    type: 'rest',
    props: { url: srv.url, method: 'post', sendSingle: true },
    ruleOptions,
    logger,
  });
  await node.open();
  node.push([{ n: 1 }, { n: 2 }, { n: 3 }]);
  let flushed: boolean | undefined;
  void node.flush!().then((ok) => (flushed = ok));
  for (let i = 1; i <= 3; i++) {
    await waitFor(() => waiting.length === 1, `request ${i}`);
    assert.equal(flushed, undefined, `not settled while row ${i} is unanswered`);
    waiting.shift()!.writeHead(200).end('ok');
  }
  await waitFor(() => flushed !== undefined, 'the flush');
  assert.equal(flushed, true);
  assert.deepEqual(
    srv.received.map((r) => r.body),
    ['{"n":1}', '{"n":2}', '{"n":3}'],
  );
  await node.close();
  await close();
  await srv.close();
});

test('with the cache, a flush while the target fails resolves once the cached rows are saved in the store', async () => {
  const srv = await recordingServer((_r, res) => res.writeHead(503).end('busy'));
  const { conns, store, close } = await service();
  const node = conns.createSinkNode({
    ruleId: 'flush2',
    index: 0,
    type: 'rest',
    props: { url: srv.url, method: 'post', sendSingle: true, enableCache: true },
    ruleOptions,
    logger,
  });
  await node.open();
  node.push([{ n: 1 }, { n: 2 }]);
  assert.equal(await node.flush!(), true);
  // what the target refused is in the store now: a crash from here on loses nothing
  const saved = await store.get(sinkCacheNamespace('flush2', 'rest', 0), 'memcache');
  assert.ok(saved !== undefined && saved.includes('"n":1') && saved.includes('"n":2'), `cache saved: ${saved}`);
  await node.close();
  await close();
  await srv.close();
});

test('closing sends what the node accepted; a flush the target never answers resolves false at close', async () => {
  const waiting: ServerResponse[] = [];
  const srv = await recordingServer((_r, res) => waiting.push(res));
  const { conns, close } = await service();
  const node = conns.createSinkNode({
    ruleId: 'flush3',
    index: 0,
    type: 'rest',
    props: { url: srv.url, method: 'post', timeout: 0 },
    ruleOptions,
    logger,
  });
  await node.open();
  node.push([{ n: 1 }]);
  node.push([{ n: 2 }]);
  const flushed = node.flush!();
  await waitFor(() => waiting.length === 1, 'the request');
  // the first row is answered while the node closes: the close still sends the second, which is never answered
  const closing = node.close();
  waiting.shift()!.writeHead(200).end('ok');
  await waitFor(() => waiting.length === 1, 'the second request, sent by the close');
  await closing;
  assert.equal(await flushed, false);
  assert.equal(srv.received.length, 2);
  for (const res of waiting.splice(0)) res.writeHead(200).end('ok');
  await close();
  await srv.close();
});
