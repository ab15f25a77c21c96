/**
 * The sink property `concurrency` (docs/runtime.md §3.2): up to N sends of one sink in flight at once, and a flush
 * that resolves only when every earlier send has been answered, whatever order the answers come in.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { Connectors } from '../../../src/connectors/index.js';
import { loadConfig, prepareHome, resolveHome } from '../../../src/config/index.js';
import { SqliteStore } from '../../../src/store/index.js';
import { logger, recordingServer, ruleOptions, tempDir, waitFor } from '../e2-helpers.js';

async function service(): Promise<{ conns: Connectors; close: () => Promise<void> }> {
  const t = tempDir('eddy-concurrency-home-');
  const home = resolveHome(t.dir);
  prepareHome(home);
  const env = { KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1', KUIPER__SOURCE__HTTPSERVERPORT: '0' };
  const store = new SqliteStore(join(home.data, 'test.db'));
  const conns = await Connectors.create({ home, config: loadConfig(home, env), env, store, logger });
  return {
    conns,
    close: async () => {
      await conns.close();
      await store.close();
      t.remove();
    },
  };
}

test('a rest sink with concurrency 3 has three requests in flight; a flush waits for the earliest answer', async () => {
  const waiting: ServerResponse[] = [];
  const srv = await recordingServer((_r, res) => waiting.push(res));
  const { conns, close } = await service();
  const props = { url: srv.url, method: 'post', timeout: 0, concurrency: 3, sendSingle: true };
  const node = conns.createSinkNode({ ruleId: 'conc3', index: 0, type: 'rest', props, ruleOptions, logger });
  await node.open();
  for (let n = 1; n <= 5; n++) node.push([{ n }]);
  await waitFor(() => waiting.length === 3, 'three requests in flight');
  // a short wait gives a fourth request the chance to show up, which it must not
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(srv.received.length, 3, 'no more than `concurrency` sends at once');
  let flushed = false;
  void node.flush!().then(() => (flushed = true));
  // the later answers first: the flush still waits for the first request
  waiting[2].writeHead(200).end('ok');
  waiting[1].writeHead(200).end('ok');
  await waitFor(() => srv.received.length === 5, 'the remaining rows sent as places free up');
  assert.equal(flushed, false, 'the first row is not answered yet');
  for (const res of waiting.splice(0)) if (!res.writableEnded) res.writeHead(200).end('ok');
  await waitFor(() => flushed, 'the flush after every answer');
  assert.deepEqual(srv.received.map((r) => JSON.parse(r.body).n).sort(), [1, 2, 3, 4, 5]);
  await node.close();
  await close();
  await srv.close();
});

test('without concurrency a rest sink sends one request at a time', async () => {
  const waiting: ServerResponse[] = [];
  const srv = await recordingServer((_r, res) => waiting.push(res));
  const { conns, close } = await service();
  const props = { url: srv.url, method: 'post', timeout: 0, sendSingle: true };
  const node = conns.createSinkNode({ ruleId: 'conc1', index: 0, type: 'rest', props, ruleOptions, logger });
  await node.open();
  for (let n = 1; n <= 3; n++) node.push([{ n }]);
  await waitFor(() => waiting.length === 1, 'the first request');
  await new Promise((resolve) => setTimeout(resolve, 200));
  const received = (): number => srv.received.length;
  assert.equal(received(), 1);
  waiting.shift()!.writeHead(200).end('ok');
  await waitFor(() => waiting.length === 1 && received() === 2, 'the second request after the first answer');
  for (;;) {
    const res = waiting.shift();
    if (res) res.writeHead(200).end('ok');
    if (received() === 3 && waiting.length === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await node.close();
  await close();
  await srv.close();
});
