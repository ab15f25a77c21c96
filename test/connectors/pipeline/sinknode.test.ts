import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { ErrorRecord, type Props, type SinkNode } from '../../../src/contracts/index.js';
import type { ValueObject } from '../../../src/values/value.js';
import { EddyError } from '../../../src/core/errors.js';
import { BROKER, BrokerProxy, subscriber, uniqueTopic, until } from '../helpers.js';
import { testSink } from '../../helpers/declare.js';

function sinkNode(s: TestServer, type: string, props: Props, ruleId = 'r1', index = 0): SinkNode {
  return s.app.connectors.createSinkNode({
    ruleId,
    index,
    type,
    props,
    ruleOptions: s.app.config.rule,
    logger: s.app.logger,
  });
}

test('sink pipeline over mqtt: list by default, sendSingle, fields, dataField, omitIfEmpty, errors as data', async () => {
  const s = await startTestServer();
  const topic = uniqueTopic('pipe');
  const sub = await subscriber(`${topic}/#`);
  const nodes: SinkNode[] = [];
  try {
    const mk = (suffix: string, extra: Props) => {
      const n = sinkNode(s, 'mqtt', { server: BROKER, topic: `${topic}/${suffix}`, ...extra }, 'r1', nodes.length);
      nodes.push(n);
      return n;
    };
    const plain = mk('plain', {});
    const single = mk('single', { sendSingle: true, omitIfEmpty: true });
    mk('fields', { fields: ['b', 'zz'] });
    mk('df', { dataField: 'inner', sendSingle: true });
    for (const n of nodes) await n.open();

    const rows: ValueObject[] = [
      { a: 1n, b: 'x', inner: { k: 1.5 } },
      { a: 2n, b: 'y', inner: { k: 2 } },
    ];
    for (const n of nodes) n.push(rows);
    single.push([]);
    single.push([{}]);
    plain.push(new ErrorRecord('boom'));
    await until(() => sub.messages.length >= 7, 15_000, 'seven messages');
    await new Promise((r) => setTimeout(r, 200));
    const by = (suffix: string) => sub.messages.filter((m) => m.topic === `${topic}/${suffix}`).map((m) => m.text);
    assert.deepEqual(by('plain'), [
      '[{"a":1,"b":"x","inner":{"k":1.5}},{"a":2,"b":"y","inner":{"k":2}}]',
      '[{"error":"boom"}]',
    ]);
    assert.deepEqual(by('single'), ['{"a":1,"b":"x","inner":{"k":1.5}}', '{"a":2,"b":"y","inner":{"k":2}}']);
    assert.deepEqual(by('fields'), ['[{"b":"x","zz":null},{"b":"y","zz":null}]']);
    assert.deepEqual(by('df'), ['{"k":1.5}', '{"k":2}']);

    assert.equal(plain.metrics.name, 'sink_mqtt_0');
    assert.equal(plain.metrics.recordsIn, 2);
    assert.equal(plain.metrics.recordsOut, 2);
    assert.equal(single.metrics.recordsIn, 3);
    assert.equal(single.metrics.recordsOut, 2);
    assert.equal(plain.metrics.exceptions, 0);
  } finally {
    for (const n of nodes) await n.close();
    await sub.close();
    await s.dispose();
  }
});

test('dataTemplate output is sent verbatim; a templated topic is rendered per row; delimited format', async () => {
  const s = await startTestServer();
  const topic = uniqueTopic('tpl');
  const sub = await subscriber(`${topic}/#`);
  const nodes: SinkNode[] = [];
  try {
    const tpl = sinkNode(
      s,
      'mqtt',
      {
        server: BROKER,
        topic: `${topic}/{{.room}}`,
        sendSingle: true,
        dataTemplate: '{"r":"{{.room}}","t":{{.temp}}}',
      },
      'r2',
      0,
    );
    const whole = sinkNode(
      s,
      'mqtt',
      { server: BROKER, topic: `${topic}/whole`, dataTemplate: '{{range .}}{{.room}};{{end}}' },
      'r2',
      1,
    );
    const tplFields = sinkNode(
      s,
      'mqtt',
      { server: BROKER, topic: `${topic}/tf`, sendSingle: true, dataTemplate: '{"x":{{.temp}},"y":1}', fields: ['x'] },
      'r2',
      2,
    );
    const csv = sinkNode(
      s,
      'mqtt',
      { server: BROKER, topic: `${topic}/csv`, sendSingle: true, format: 'delimited', delimiter: ';' },
      'r2',
      3,
    );
    nodes.push(tpl, whole, tplFields, csv);
    for (const n of nodes) await n.open();
    const rows: ValueObject[] = [
      { room: 'a', temp: 31.5 },
      { room: 'b', temp: 29 },
    ];
    for (const n of nodes) n.push(rows);
    await until(() => sub.messages.length >= 7, 15_000, 'seven messages');
    const by = (suffix: string) => sub.messages.filter((m) => m.topic === `${topic}/${suffix}`).map((m) => m.text);
    assert.deepEqual(by('a'), ['{"r":"a","t":31.5}']);
    assert.deepEqual(by('b'), ['{"r":"b","t":29}']);
    assert.deepEqual(by('whole'), ['a;b;']);
    assert.deepEqual(by('tf'), ['{"x":31.5}', '{"x":29}']);
    assert.deepEqual(by('csv'), ['a;31.5', 'b;29']);
  } finally {
    for (const n of nodes) await n.close();
    await sub.close();
    await s.dispose();
  }
});

test('sink property validation throws EddyError 2201; legacy properties are accepted', async () => {
  const s = await startTestServer();
  try {
    const bad = (type: string, props: Props, re: RegExp) =>
      assert.throws(
        () => sinkNode(s, type, props),
        (e: unknown) => e instanceof EddyError && e.code === 2201 && re.test(e.message),
      );
    bad('nosuch', {}, /sink nosuch is not found/);
    bad('log', { bufferLength: 0 }, /bufferLength/);
    bad('log', { concurrency: -1 }, /concurrency/);
    bad('log', { format: 'xml' }, /invalid format xml/);
    bad('log', { sendSingle: 'true' }, /sendSingle/);
    bad('log', { enableCache: true, memoryCacheThreshold: 10, bufferPageSize: 3 }, /invalid cache properties/);
    bad('mqtt', { server: BROKER }, /topic/);
    bad('mqtt', { server: BROKER, topic: 'a/#' }, /shouldn't contain # or \+/);
    bad('mqtt', { server: BROKER, topic: 'a', qos: 3 }, /qos/);
    bad('memory', {}, /topic/);
    bad('log', { dataTemplate: '{{.a' }, /dataTemplate/);
    const ok = sinkNode(s, 'log', {
      runAsync: true,
      retryInterval: 10,
      retryCount: 2,
      cacheLength: 5,
      cacheSaveInterval: 9,
    });
    await ok.open();
    ok.push([{ a: 1 }]);
    await until(() => ok.metrics.recordsOut === 1);
    await ok.close();
  } finally {
    await s.dispose();
  }
});

test('resourceId merges the stored sink config key under the action properties', async () => {
  const s = await startTestServer();
  const topic = uniqueTopic('res');
  const sub = await subscriber(topic);
  try {
    assert.equal(
      (await s.req('PUT', '/metadata/sinks/mqtt/confKeys/broker1', { server: BROKER, topic: 'wrong', qos: 1 })).status,
      200,
    );
    const n = sinkNode(s, 'mqtt', { resourceId: 'broker1', topic, sendSingle: true });
    await n.open();
    n.push([{ v: 1 }]);
    await until(() => sub.messages.length === 1);
    assert.equal(sub.messages[0].text, '{"v":1}');
    await n.close();
  } finally {
    await sub.close();
    await s.dispose();
  }
});

test('failure cache: items sent while the broker is down are kept and all resent in order once it is back', async () => {
  const s = await startTestServer();
  const proxy = new BrokerProxy();
  await proxy.start();
  const topic = uniqueTopic('cache');
  const sub = await subscriber(topic);
  const n = sinkNode(s, 'mqtt', {
    server: proxy.url,
    topic,
    qos: 1,
    sendSingle: true,
    enableCache: true,
    memoryCacheThreshold: 4,
    bufferPageSize: 2,
    maxDiskCache: 100,
  });
  try {
    await n.open();
    n.push([{ i: 0n }]);
    await until(() => sub.messages.length === 1, 15_000, 'first message');
    await proxy.stop();
    await new Promise((r) => setTimeout(r, 300));
    // 10 items: 4 in memory, the rest in disk pages of the store
    for (let i = 1; i <= 10; i++) n.push([{ i: BigInt(i) }]);
    await until(() => n.metrics.exceptions > 0, 15_000, 'a failed send');
    assert.ok(n.metrics.bufferLength >= 10, `buffer length counts cached items (${n.metrics.bufferLength})`);
    await proxy.start();
    await until(() => sub.messages.length === 11, 15000, 'all resent');
    assert.deepEqual(
      sub.messages.map((m) => JSON.parse(m.text).i),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    );
    await until(() => n.metrics.bufferLength === 0, 10_000, 'empty cache');
  } finally {
    await n.close();
    await sub.close();
    await proxy.stop();
    await s.dispose();
  }
});

test('failure cache survives a stop: cached items are resent by the next run of the sink', async () => {
  const s = await startTestServer();
  const proxy = new BrokerProxy();
  await proxy.start();
  const topic = uniqueTopic('persist');
  const sub = await subscriber(topic);
  const props = {
    server: proxy.url,
    topic,
    sendSingle: true,
    enableCache: true,
    memoryCacheThreshold: 2,
    bufferPageSize: 1,
    maxDiskCache: 10,
  };
  try {
    const first = sinkNode(s, 'mqtt', props, 'rp');
    await first.open();
    await proxy.stop();
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 5; i++) first.push([{ i: BigInt(i) }]);
    await until(() => first.metrics.exceptions > 0, 15_000, 'a failed send');
    await first.close();
    await proxy.start();
    const second = sinkNode(s, 'mqtt', props, 'rp');
    await second.open();
    await until(() => sub.messages.length === 5, 15000, 'resent after restart');
    assert.deepEqual(
      sub.messages.map((m) => JSON.parse(m.text).i),
      [0, 1, 2, 3, 4],
    );
    await second.close();
  } finally {
    await sub.close();
    await proxy.stop();
    await s.dispose();
  }
});

test('without the cache a failing sink counts exceptions and keeps accepting data', async () => {
  const s = await startTestServer();
  const proxy = new BrokerProxy();
  await proxy.start();
  const topic = uniqueTopic('nocache');
  const sub = await subscriber(topic);
  const n = sinkNode(s, 'mqtt', { server: proxy.url, topic, sendSingle: true });
  try {
    await n.open();
    await proxy.stop();
    await new Promise((r) => setTimeout(r, 300));
    n.push([{ i: 1n }]);
    await until(() => n.metrics.exceptions === 1, 15_000, 'one exception');
    assert.match(n.metrics.lastException, /not connected/);
    await proxy.start();
    await until(() => proxy.connections > 0, 15_000, 'reconnect');
    // the proxy accepting the socket does not mean the client has its CONNACK yet (slow on a loaded machine); a row
    // sent before that is rightly lost without a cache, so the row is sent again until one arrives
    for (const end = Date.now() + 10_000; sub.messages.length === 0 && Date.now() < end;) {
      n.push([{ i: 2n }]);
      await new Promise((r) => setTimeout(r, 300));
    }
    await until(() => sub.messages.length >= 1, 15_000, 'delivery after reconnect');
    assert.equal(sub.messages[0].text, '{"i":2}');
  } finally {
    await n.close();
    await sub.close();
    await proxy.stop();
    await s.dispose();
  }
});

test('alternate resend queue: live data keeps flowing, failed items go to resendDestination marked by the indicator field', async () => {
  const s = await startTestServer();
  const proxy = new BrokerProxy();
  await proxy.start();
  const topic = uniqueTopic('alt');
  const sub = await subscriber(`${topic}/#`);
  const n = sinkNode(s, 'mqtt', {
    server: proxy.url,
    topic: `${topic}/live`,
    resendDestination: `${topic}/resent`,
    sendSingle: true,
    enableCache: true,
    resendAlterQueue: true,
    resendPriority: -1,
    resendIndicatorField: 'resent',
  });
  try {
    await n.open();
    await proxy.stop();
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 3; i++) n.push([{ i: BigInt(i) }]);
    await until(() => n.metrics.exceptions >= 3, 15_000, 'three failures');
    await proxy.start();
    await until(() => proxy.connections === 1, 15_000, 'reconnect');
    // the resends (retried on a timer) show the client is connected again before live data is sent
    await until(() => sub.messages.length === 3, 10000, 'resent messages');
    n.push([{ i: 10n }]);
    await until(() => sub.messages.length === 4, 10000, 'live and resent messages');
    const live = sub.messages.filter((m) => m.topic === `${topic}/live`).map((m) => m.text);
    const resent = sub.messages.filter((m) => m.topic === `${topic}/resent`).map((m) => m.text);
    assert.deepEqual(live, ['{"i":10}']);
    assert.deepEqual(resent, ['{"i":0,"resent":true}', '{"i":1,"resent":true}', '{"i":2,"resent":true}']);
  } finally {
    await n.close();
    await sub.close();
    await proxy.stop();
    await s.dispose();
  }
});

test('sendSingle: one collection far larger than bufferLength is delivered row by row, none dropped', async () => {
  const s = await startTestServer();
  const topic = uniqueTopic('burst');
  const sub = await subscriber(topic);
  const n = sinkNode(s, 'mqtt', { server: BROKER, topic, sendSingle: true, bufferLength: 8, omitIfEmpty: true });
  try {
    await n.open();
    const rows: ValueObject[] = [];
    for (let i = 0; i < 5000; i++) rows.push(i === 10 ? {} : { i: BigInt(i) });
    n.push(rows);
    await until(() => sub.messages.length === 4999, 20000, 'every row of the burst');
    assert.equal(n.metrics.exceptions, 0);
    assert.equal(n.metrics.recordsIn, 1);
    assert.equal(n.metrics.recordsOut, 4999);
    assert.equal(sub.messages[0].text, '{"i":0}');
    assert.equal(sub.messages[10].text, '{"i":11}');
    assert.equal(sub.messages[4998].text, '{"i":4999}');
    // the queue still holds at most bufferLength pushed items
    for (let i = 0; i < 50; i++) n.push([{ j: BigInt(i) }]);
    await until(() => n.metrics.recordsOut + n.metrics.exceptions >= 4999 + 50, 20000, 'small pushes');
  } finally {
    await n.close();
    await sub.close();
    await s.dispose();
  }
});

test('a burst far larger than bufferLength reaches the broker in order, none dropped, when the socket keeps up', async () => {
  const s = await startTestServer();
  const topic = uniqueTopic('burst');
  const sub = await subscriber(topic);
  const node = sinkNode(s, 'mqtt', { server: BROKER, topic, bufferLength: 10 });
  try {
    await node.open();
    for (let i = 0; i < 3000; i++) node.push([{ i: BigInt(i) }]);
    await until(() => sub.messages.length >= 3000, 30_000, 'every message');
    assert.deepEqual(
      sub.messages.map((m) => (JSON.parse(m.text) as Array<{ i: number }>)[0].i),
      Array.from({ length: 3000 }, (_, i) => i),
    );
    assert.equal(node.metrics.exceptions, 0);
    assert.equal(node.metrics.recordsOut, 3000);
  } finally {
    await node.close();
    await sub.close();
    await s.dispose();
  }
});

test('a pipelined connector gets the next send before the last settles; any other waits for each send', async () => {
  const s = await startTestServer();
  const calls: Record<string, number[]> = { piped: [], serial: [] };
  const settle: Array<() => void> = [];
  for (const [type, pipelined] of [
    ['piped', true],
    ['serial', false],
  ] as const) {
    s.app.connectors.registry.declare(
      testSink(type, () => ({
        pipelined,
        provision: () => undefined,
        connect: async () => undefined,
        collect: (_ctx, payload) => {
          calls[type].push((payload.rows[0] as { i: number }).i);
          return new Promise<void>((resolve) => settle.push(resolve));
        },
        close: async () => undefined,
      })),
    );
  }
  const piped = sinkNode(s, 'piped', {}, 'r1', 0);
  const serial = sinkNode(s, 'serial', {}, 'r1', 1);
  try {
    await piped.open();
    await serial.open();
    for (let i = 0; i < 5; i++) {
      piped.push([{ i }]);
      serial.push([{ i }]);
    }
    await until(() => calls.piped.length === 5, 5000, 'five sends in flight');
    assert.deepEqual(calls.piped, [0, 1, 2, 3, 4]);
    assert.deepEqual(calls.serial, [0]);
    while (calls.serial.length < 5 || settle.length > 0) {
      settle.shift()?.();
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.deepEqual(calls.serial, [0, 1, 2, 3, 4]);
    await until(() => piped.metrics.recordsOut === 5 && serial.metrics.recordsOut === 5, 5000, 'all settled');
  } finally {
    await piped.close();
    await serial.close();
    await s.dispose();
  }
});

test('a list of many thousand rows is encoded in slices and sent whole, before what was pushed after it', async () => {
  const s = await startTestServer();
  const topic = uniqueTopic('large');
  const sub = await subscriber(topic);
  const node = sinkNode(s, 'mqtt', { server: BROKER, topic });
  try {
    await node.open();
    const big = Array.from({ length: 10_000 }, (_, i) => ({ i: BigInt(i), s: `<${i}>`, f: i / 2 }));
    node.push(big);
    node.push([{ last: true }]);
    await until(() => sub.messages.length >= 2, 30_000, 'both messages');
    const first = JSON.parse(sub.messages[0].text) as Array<{ i: number; s: string; f: number }>;
    assert.equal(first.length, 10_000);
    assert.deepEqual(first[9999], { f: 4999.5, i: 9999, s: '<9999>' });
    assert.ok(sub.messages[0].text.includes('\\u003c9999\\u003e'), 'Go escaping of < and >');
    assert.equal(sub.messages[1].text, '[{"last":true}]');
    assert.equal(node.metrics.recordsOut, 2);
  } finally {
    await node.close();
    await sub.close();
    await s.dispose();
  }
});
