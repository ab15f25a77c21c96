/**
 * Back-pressure end to end: a rule whose sources can wait (MQTT at QoS 1) holds them back while its sink is full
 * and loses nothing (MQTT at QoS 1, files); at QoS 0 the same overflow is dropped and counted in the sink's metrics.
 */
import { test } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { startTestServer } from '../../helpers/server.js';
import { BROKER, publisher, uniqueTopic, until } from '../helpers.js';
import { testSink } from '../../helpers/declare.js';

test('a full sink holds back a QoS 1 MQTT source instead of dropping; at QoS 0 the overflow is dropped and counted', async () => {
  const s = await startTestServer();
  const pub = await publisher();
  const received: Record<string, number[]> = { bpq1: [], bpq0: [] };
  s.app.connectors.registry.declare(
    testSink('slowsink', () => {
      let rule = '';
      return {
        provision: (ctx) => {
          rule = ctx.ruleId;
        },
        connect: async () => undefined,
        // a slow target: 2 ms per send
        collect: (_ctx, payload) =>
          new Promise<void>((resolve) =>
            setTimeout(() => {
              for (const r of payload.rows) received[rule].push(Number(r.n));
              resolve();
            }, 2),
          ),
        close: async () => undefined,
      };
    }),
  );
  const base = uniqueTopic('bp');
  const n = 400;
  try {
    for (const qos of [1, 0]) {
      let r = await s.req('PUT', `/metadata/sources/mqtt/confKeys/bpq${qos}`, { server: BROKER, qos });
      assert.ok(r.status < 300, r.text);
      r = await s.req('POST', '/streams', {
        sql: `CREATE STREAM bpq${qos} (n BIGINT) WITH (DATASOURCE="${base}/${qos}", FORMAT="json", CONF_KEY="bpq${qos}")`,
      });
      assert.equal(r.status, 201, r.text);
      r = await s.req('POST', '/rules', {
        id: `bpq${qos}`,
        sql: `SELECT n FROM bpq${qos}`,
        actions: [{ slowsink: { bufferLength: 5 } }],
      });
      assert.equal(r.status, 201, r.text);
    }
    await until(
      () => ['bpq1', 'bpq0'].every((id) => s.app.rules.statusText(id) === 'Running'),
      15_000,
      'both rules running',
    );
    for (let i = 0; i < n; i++) {
      pub.publish(`${base}/1`, JSON.stringify({ n: i }), { qos: 1 });
      pub.publish(`${base}/0`, JSON.stringify({ n: i }), { qos: 0 });
    }
    await until(() => received.bpq1.length === n, 60_000, 'every QoS 1 message');
    assert.deepEqual(
      received.bpq1,
      Array.from({ length: n }, (_, i) => i),
      'all, in order',
    );
    const status = (id: string) => s.app.rules.status(id) as Record<string, unknown>;
    assert.equal(status('bpq1').sink_slowsink_0_0_exceptions_total, 0);
    // QoS 0 cannot wait: what overflows the sink is dropped and counted
    await until(() => Number(status('bpq0').sink_slowsink_0_0_exceptions_total) > 0, 30_000, 'drops counted at QoS 0');
    assert.match(String(status('bpq0').sink_slowsink_0_0_last_exception), /buffer full/);
    assert.ok(received.bpq0.length < n);
  } finally {
    await pub.endAsync();
    await s.dispose();
  }
});

test('a full sink holds back a file source: every line of a large file arrives, none dropped', async () => {
  const s = await startTestServer();
  const dir = mkdtempSync(join(tmpdir(), 'eddy-bp-'));
  const got: number[] = [];
  s.app.connectors.registry.declare(
    testSink('slowfile', () => ({
      provision: () => undefined,
      connect: async () => undefined,
      collect: (_ctx, payload) =>
        new Promise<void>((resolve) =>
          setImmediate(() => {
            for (const r of payload.rows) got.push(Number(r.n));
            resolve();
          }),
        ),
      close: async () => undefined,
    })),
  );
  const n = 5000;
  writeFileSync(join(dir, 'in.jsonl'), Array.from({ length: n }, (_, i) => JSON.stringify({ n: i })).join('\n'));
  try {
    let r = await s.req('PUT', '/metadata/sources/file/confKeys/bpfile', { path: dir, fileType: 'lines' });
    assert.ok(r.status < 300, r.text);
    r = await s.req('POST', '/streams', {
      sql: 'CREATE STREAM bpfile (n BIGINT) WITH (DATASOURCE="in.jsonl", TYPE="file", FORMAT="json", CONF_KEY="bpfile")',
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'bpfile',
      sql: 'SELECT n FROM bpfile',
      actions: [{ slowfile: { bufferLength: 5 } }],
    });
    assert.equal(r.status, 201, r.text);
    await until(() => got.length === n, 60_000, 'every line');
    // every line, in order: nothing was dropped (the rule stops by itself once the file is read and sent)
    assert.deepEqual(
      got,
      Array.from({ length: n }, (_, i) => i),
    );
  } finally {
    await s.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
