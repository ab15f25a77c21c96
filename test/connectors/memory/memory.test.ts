import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import type { ConnectorContext, SourceEvent } from '../../../src/contracts/index.js';
import { topicMatches } from '../../../src/connectors/memory/bus.js';
import { until } from '../helpers.js';

function ctx(s: TestServer, ruleId = 'm1'): ConnectorContext {
  return { ruleId, logger: s.app.logger, dataDir: s.app.home.data };
}

async function memorySource(
  s: TestServer,
  topic: string,
): Promise<{ events: SourceEvent[]; close: () => Promise<void> }> {
  const src = s.app.connectors.registry.source('memory')!();
  const c = ctx(s);
  src.provision(c, topic, {});
  const events: SourceEvent[] = [];
  await src.connect(
    c,
    (ev) => events.push(ev),
    () => undefined,
  );
  return { events, close: () => src.close(c) };
}

test('topic filters: + is one level, # the rest', () => {
  assert.equal(topicMatches('a/+/c', 'a/b/c'), true);
  assert.equal(topicMatches('a/+/c', 'a/b/x/c'), false);
  assert.equal(topicMatches('a/#', 'a/b/c'), true);
  assert.equal(topicMatches('a/#', 'a'), true);
  assert.equal(topicMatches('#', 'x/y'), true);
  assert.equal(topicMatches('a/b', 'a/b/c'), false);
});

test('memory sink publishes every row; sources subscribe with wildcards and see the topic as metadata', async () => {
  const s = await startTestServer();
  try {
    const exact = await memorySource(s, 'plant/1/temp');
    const plus = await memorySource(s, 'plant/+/temp');
    const hash = await memorySource(s, 'plant/#');
    const other = await memorySource(s, 'elsewhere');
    const sink = s.app.connectors.createSinkNode({
      ruleId: 'm1',
      index: 0,
      type: 'memory',
      props: { topic: 'plant/{{.id}}/temp' },
      ruleOptions: s.app.config.rule,
      logger: s.app.logger,
    });
    await sink.open();
    sink.push([
      { id: 1n, v: 20.5 },
      { id: 2n, v: 21 },
    ]);
    await until(() => hash.events.length === 2);
    assert.deepEqual(
      exact.events.map((e) => e.payload),
      [{ id: 1n, v: 20.5 }],
    );
    assert.deepEqual(exact.events[0].meta, { topic: 'plant/1/temp' });
    assert.deepEqual(
      plus.events.map((e) => e.meta.topic),
      ['plant/1/temp', 'plant/2/temp'],
    );
    assert.equal(other.events.length, 0);
    assert.equal(sink.metrics.recordsOut, 1);
    assert.equal(sink.metrics.messagesProcessed, 2);
    await exact.close();
    sink.push([{ id: 1n, v: 1 }]);
    await until(() => plus.events.length === 3);
    assert.equal(exact.events.length, 1, 'a closed source receives nothing');
    await Promise.all([plus.close(), hash.close(), other.close(), sink.close()]);
  } finally {
    await s.dispose();
  }
});

test('memory lookup table keeps the latest row per key and honours row kinds', async () => {
  const s = await startTestServer();
  try {
    const c = ctx(s);
    const table = s.app.connectors.registry.lookup('memory')!();
    table.provision(c, 'devices', { key: 'id' });
    await table.connect(c);
    assert.throws(
      () => s.app.connectors.registry.lookup('memory')!().provision(c, 'devices', {}),
      /Option "key" is required for memory lookup table\./,
    );
    const sink = s.app.connectors.createSinkNode({
      ruleId: 'm2',
      index: 0,
      type: 'memory',
      props: { topic: 'devices', rowkindField: 'op', keyField: 'id' },
      ruleOptions: s.app.config.rule,
      logger: s.app.logger,
    });
    await sink.open();
    sink.push([
      { id: 1n, name: 'a', op: 'insert' },
      { id: 2n, name: 'b' },
      { id: 1n, name: 'a2', op: 'update' },
    ]);
    await until(() => sink.metrics.recordsOut === 1);
    assert.deepEqual(await table.lookup(c, [], ['id'], [1n]), [{ id: 1n, name: 'a2', op: 'update' }]);
    // a float probe finds an int key (same text form)
    assert.deepEqual((await table.lookup(c, [], ['id'], [2])).length, 1);
    assert.deepEqual(await table.lookup(c, [], ['name'], ['b']), [{ id: 2n, name: 'b' }]);
    sink.push([{ id: 2n, op: 'delete' }]);
    await until(() => sink.metrics.recordsOut === 2);
    assert.deepEqual(await table.lookup(c, [], ['id'], [2n]), []);
    sink.push([{ id: 3n, op: 'bogus' }]);
    await until(() => sink.metrics.exceptions === 1);
    assert.match(sink.metrics.lastException, /invalid rowkind bogus/);
    await sink.close();
    await table.close(c);
  } finally {
    await s.dispose();
  }
});
