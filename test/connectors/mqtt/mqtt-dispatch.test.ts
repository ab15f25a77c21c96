/**
 * Many rules on one pooled MQTT connection, end to end over REST: every rule gets the messages of its own topic
 * and of its wildcard filters only, the connection carries one set of client listeners, and no
 * MaxListenersExceededWarning is raised however many rules start at once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../helpers/server.js';
import { BROKER, publisher, subscriber, uniqueTopic, until } from '../helpers.js';

test('300 rules on distinct MQTT topics of one shared connection each see their own messages', async () => {
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  const s = await startTestServer();
  const base = uniqueTopic('many');
  const out = await subscriber(`${base}/out/#`);
  const pub = await publisher();
  const n = 300;
  try {
    for (let i = 0; i < n; i++) {
      let r = await s.req('POST', '/streams', {
        sql: `CREATE STREAM many${i} () WITH (DATASOURCE="${base}/in/${i}", FORMAT="json")`,
      });
      assert.equal(r.status, 201, r.text);
      r = await s.req('POST', '/rules', {
        id: `many${i}`,
        sql: `SELECT n FROM many${i}`,
        actions: [{ mqtt: { server: BROKER, topic: `${base}/out/${i}`, sendSingle: true } }],
      });
      assert.equal(r.status, 201, r.text);
    }
    // two wildcard rules on the same connection: one level and every level
    await s.req('POST', '/streams', {
      sql: `CREATE STREAM manyplus () WITH (DATASOURCE="${base}/in/+", FORMAT="json")`,
    });
    await s.req('POST', '/streams', {
      sql: `CREATE STREAM manyhash () WITH (DATASOURCE="${base}/in/#", FORMAT="json")`,
    });
    for (const w of ['plus', 'hash']) {
      const r = await s.req('POST', '/rules', {
        id: `many${w}`,
        sql: `SELECT n FROM many${w}`,
        actions: [{ mqtt: { server: BROKER, topic: `${base}/out/${w}`, sendSingle: true } }],
      });
      assert.equal(r.status, 201, r.text);
    }
    const deadline = Date.now() + 60_000;
    for (;;) {
      const list = (await s.req('GET', '/rules')).json() as Array<{ status: string }>;
      if (list.filter((x) => x.status === 'Running').length === n + 2) break;
      assert.ok(Date.now() < deadline, 'every rule running');
      await new Promise((r) => setTimeout(r, 50));
    }
    // sources share one connection, sinks another at most (the sink always speaks MQTT 3.1.1)
    assert.ok(s.app.connectors.mqtt.size <= 2, `${s.app.connectors.mqtt.size} connections`);

    for (let i = 0; i < n; i++) pub.publish(`${base}/in/${i}`, JSON.stringify({ n: i }));
    const outTopics = new Set(Array.from({ length: n }, (_, i) => `${base}/out/${i}`));
    const arrived = () => new Set(out.messages.map((m) => m.topic).filter((t) => outTopics.has(t))).size;
    const plusCount = () => out.messages.filter((m) => m.topic === `${base}/out/plus`).length;
    const hashCount = () => out.messages.filter((m) => m.topic === `${base}/out/hash`).length;
    await until(() => arrived() === n && plusCount() >= n && hashCount() >= n, 60_000, 'all results');
    // settle: a wrong dispatch would deliver more than expected
    await new Promise((r) => setTimeout(r, 300));
    const byTopic = new Map<string, string[]>();
    for (const m of out.messages) byTopic.set(m.topic, [...(byTopic.get(m.topic) ?? []), m.text]);
    for (let i = 0; i < n; i++)
      assert.deepEqual(byTopic.get(`${base}/out/${i}`), [JSON.stringify({ n: i })], `rule ${i}`);
    const nums = (w: string) =>
      (byTopic.get(`${base}/out/${w}`) ?? []).map((t) => (JSON.parse(t) as { n: number }).n).sort((a, b) => a - b);
    const all = Array.from({ length: n }, (_, i) => i);
    assert.deepEqual(nums('plus'), all);
    assert.deepEqual(nums('hash'), all);
    assert.equal(out.messages.length, 3 * n);

    const conn = s.app.connectors.mqtt as unknown as { conns: Map<string, { client: NodeJS.EventEmitter }> };
    for (const { client } of conn.conns.values()) {
      for (const ev of ['message', 'connect', 'close', 'error']) {
        assert.ok(client.listenerCount(ev) <= 3, `${ev} listeners: ${client.listenerCount(ev)}`);
      }
    }
    assert.deepEqual(
      warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
      [],
    );
  } finally {
    process.off('warning', onWarning);
    await pub.endAsync();
    await out.close();
    await s.dispose();
  }
});

test('sources connecting at once on a new pooled connection wait together, without a listener each', async () => {
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  const s = await startTestServer();
  const base = uniqueTopic('burst');
  const pub = await publisher();
  const ctx = { ruleId: 'burst', logger: s.app.logger, dataDir: s.app.home.data };
  try {
    const got: number[] = [];
    const sources = Array.from({ length: 50 }, (_, i) => {
      const src = s.app.connectors.registry.source('mqtt')!();
      src.provision(ctx, `${base}/${i}`, { server: BROKER, clientid: `eddy-burst-${process.pid}` });
      return src;
    });
    await Promise.all(
      sources.map((src, i) =>
        src.connect(
          ctx,
          () => got.push(i),
          () => undefined,
        ),
      ),
    );
    for (let i = 0; i < 50; i++) pub.publish(`${base}/${i}`, '{}');
    await until(() => got.length === 50, 15_000, 'one message per source');
    assert.deepEqual(
      got.slice().sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i),
    );
    await Promise.all(sources.map((src) => src.close(ctx)));
    assert.deepEqual(
      warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
      [],
    );
  } finally {
    process.off('warning', onWarning);
    await pub.endAsync();
    await s.dispose();
  }
});
