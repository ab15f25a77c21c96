/**
 * Stopping or deleting a rule sends what its sinks already accepted before their connections close
 * (docs/runtime.md §1.3): a real server, MQTT in through Mosquitto, a slow REST target and an MQTT sink.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connectAsync } from 'mqtt';
import { startTestServer, type TestServer } from '../../helpers/server.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

async function poll<T>(fn: () => Promise<T> | T, ok: (v: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 20));
    last = await fn();
  }
  return last;
}

async function sinkIn(s: TestServer, rule: string, node: string): Promise<number> {
  const st = (await s.req('GET', `/rules/${rule}/status`)).json() as Record<string, unknown>;
  return (st[`${node}_0_records_in_total`] as number | undefined) ?? -1;
}

test('deleting a rule while its REST sink holds accepted rows still delivers every row', async () => {
  const bodies: string[] = [];
  // while held, the target answers nothing: the sink keeps one request in flight and queues the rest
  let held = false;
  const waiting: Array<() => void> = [];
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const answer = () => {
        bodies.push(body);
        res.end('ok');
      };
      if (held) waiting.push(answer);
      else answer();
    });
  });
  const release = () => {
    held = false;
    for (const answer of waiting.splice(0)) answer();
  };
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/in`;
  const s = await startTestServer();
  const topic = `eddy/flush/${uid('in')}`;
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_flush'), reconnectPeriod: 0 });
  const delivered = () => bodies.map((b) => (JSON.parse(b) as { n: number }).n);
  try {
    const st = uid('s');
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM ${st} (n BIGINT) WITH (DATASOURCE="${topic}")` })).status,
      201,
    );
    const r = await s.req('POST', '/rules', {
      id: 'f1',
      sql: `SELECT n FROM ${st}`,
      actions: [{ rest: { url, method: 'post', sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    // probe rows until the subscription is in place, then a fence row behind them: once it is delivered, every
    // probe the sink will ever see has been sent
    await poll(
      async () => {
        await client.publishAsync(topic, JSON.stringify({ n: 0 }), { qos: 1 });
        return sinkIn(s, 'f1', 'sink_rest_0');
      },
      (n) => n > 0,
      'the subscription',
    );
    await client.publishAsync(topic, JSON.stringify({ n: -1 }), { qos: 1 });
    await poll(
      async () => delivered(),
      (d) => d.includes(-1),
      'the fence row',
    );
    const accepted = await sinkIn(s, 'f1', 'sink_rest_0');

    held = true;
    for (let n = 1; n <= 5; n++) await client.publishAsync(topic, JSON.stringify({ n }), { qos: 1 });
    await poll(
      () => sinkIn(s, 'f1', 'sink_rest_0'),
      (n) => n >= accepted + 5,
      'the sink accepted the five rows',
    );
    assert.deepEqual(
      delivered().filter((n) => n > 0),
      [],
      'nothing delivered yet',
    );
    const del = s.req('DELETE', '/rules/f1');
    // the target answers again while the delete waits
    setTimeout(release, 300);
    const answered = await del;
    assert.equal(answered.status, 200, answered.text);
    // the delete answered after the queue was sent
    assert.deepEqual(
      delivered().filter((n) => n > 0),
      [1, 2, 3, 4, 5],
    );
  } finally {
    release();
    await client.endAsync();
    await s.dispose();
    await new Promise<void>((r) => http.close(() => r()));
  }
});

test('stopping a rule right after its MQTT sink accepted a burst delivers the whole burst through Mosquitto', async () => {
  const s = await startTestServer();
  const inTopic = `eddy/flush/${uid('in')}`;
  const outTopic = `eddy/flush/${uid('out')}`;
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_flush'), reconnectPeriod: 0 });
  const seen = new Set<number>();
  client.on('message', (_t, p) => seen.add((JSON.parse(p.toString()) as { n: number }).n));
  await client.subscribeAsync(outTopic, { qos: 1 });
  try {
    const st = uid('s');
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM ${st} (n BIGINT) WITH (DATASOURCE="${inTopic}")` }))
        .status,
      201,
    );
    const r = await s.req('POST', '/rules', {
      id: 'f2',
      sql: `SELECT n FROM ${st}`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: outTopic, qos: 1, sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    await poll(
      async () => {
        await client.publishAsync(inTopic, JSON.stringify({ n: -1 }), { qos: 1 });
        return seen.has(-1);
      },
      (v) => v,
      'the subscription',
    );
    // a fence behind the probes: once it is out, the sink has counted every probe
    await client.publishAsync(inTopic, JSON.stringify({ n: -2 }), { qos: 1 });
    await poll(
      async () => seen.has(-2),
      (v) => v,
      'the fence row',
    );
    const base = await sinkIn(s, 'f2', 'sink_mqtt_0');
    const burst = 300;
    await Promise.all(
      Array.from({ length: burst }, (_, n) => client.publishAsync(inTopic, JSON.stringify({ n }), { qos: 1 })),
    );
    await poll(
      () => sinkIn(s, 'f2', 'sink_mqtt_0'),
      (n) => n >= base + burst,
      'the sink accepted the burst',
    );
    const stop = await s.req('POST', '/rules/f2/stop');
    assert.equal(stop.status, 200, stop.text);
    await poll(
      async () => seen.size,
      (n) => n >= burst + 2,
      `all ${burst} rows at the subscriber`,
    );
    for (let n = 0; n < burst; n++) assert.ok(seen.has(n), `row ${n}`);
  } finally {
    await client.endAsync();
    await s.dispose();
  }
});
