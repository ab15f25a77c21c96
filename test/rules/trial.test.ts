/**
 * Rule trial runs (`/ruletest`, docs/rest-api.md §16.4) on a real server: mock data replaces a stream, results arrive
 * on the data server's websocket `/test/<id>`, a stream without mock data is read from Mosquitto, nothing is stored,
 * and a trial goes away when deleted or when its time is up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { connectAsync } from 'mqtt';
import { startTestServer, type TestServer } from '../helpers/server.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

async function until<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  const end = Date.now() + 20_000;
  let last = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 30));
    last = await fn();
  }
  return last;
}

/** A websocket client of a trial's endpoint collecting the parsed frames. */
async function listen(
  port: number,
  id: string,
): Promise<{ frames: unknown[]; closed: () => boolean; close: () => void }> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/test/${id}`);
  const frames: unknown[] = [];
  let closed = false;
  ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
  ws.on('close', () => (closed = true));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { frames, closed: () => closed, close: () => ws.close() };
}

async function create(s: TestServer, body: unknown): Promise<{ id: string; port: number }> {
  const r = await s.req('POST', '/ruletest', body);
  assert.equal(r.status, 200, r.text);
  return r.json() as { id: string; port: number };
}

test('a trial replays mock data through the rule to its websocket, with sinkProps, and stores nothing', async () => {
  const s = await startTestServer();
  try {
    const demo = uid('demo');
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM ${demo} (a BIGINT, b STRING) WITH (DATASOURCE="${demo}")`,
        })
      ).status,
      201,
    );
    const created = await create(s, {
      id: 't1',
      sql: `SELECT a, b FROM ${demo} WHERE a > 1`,
      mockSource: {
        [demo]: {
          data: [
            { a: 1, b: 'x' },
            { a: 2, b: 'y' },
            { a: 3, b: 'z' },
          ],
          interval: 20,
          loop: true,
        },
      },
      sinkProps: { fields: ['a'] },
    });
    assert.equal(created.id, 't1');
    assert.ok(created.port > 0);
    const ws = await listen(created.port, 't1');
    const started = await s.req('POST', '/ruletest/t1/start');
    assert.equal(started.status, 200, started.text);
    assert.equal(started.text, 'Test rule t1 was started');
    await until(
      () => ws.frames.length,
      (n) => n >= 4,
      'looped results',
    );
    assert.deepEqual(ws.frames.slice(0, 4), [{ a: 2 }, { a: 3 }, { a: 2 }, { a: 3 }]);

    // not a rule, and the stream is untouched
    assert.deepEqual((await s.req('GET', '/rules')).json(), []);
    assert.equal(
      ((await s.req('GET', `/streams/${demo}`)).json() as { Options: Record<string, string> }).Options.TYPE,
      undefined,
    );

    // creating the id again replaces the trial
    const replaced = await create(s, {
      id: 't1',
      sql: `SELECT b FROM ${demo}`,
      mockSource: { [demo]: { data: [{ a: 5, b: 'again' }], interval: 10, loop: false } },
    });
    assert.equal(replaced.port, created.port, 'the endpoint stays open');
    const ws2 = await listen(replaced.port, 't1');
    assert.equal((await s.req('POST', '/ruletest/t1/start')).status, 200);
    await until(
      () => ws2.frames.length,
      (n) => n >= 1,
      'the replaced trial',
    );
    assert.deepEqual(ws2.frames[0], { b: 'again' });

    const del = await s.req('DELETE', '/ruletest/t1');
    assert.equal(del.status, 200);
    assert.equal(del.text, 'Test rule t1 was stopped');
    await until(
      () => ws2.closed(),
      (c) => c,
      'the endpoint closed',
    );
    assert.equal(
      (await s.req('DELETE', '/ruletest/t1')).text,
      'Test rule t1 was stopped',
      'delete always answers the same',
    );
    const again = await s.req('POST', '/ruletest/t1/start');
    assert.equal(again.status, 404, again.text);
    ws.close();
  } finally {
    await s.dispose();
  }
});

test('a stream without mock data is read for real (Mosquitto); bad trials are refused with error objects', async () => {
  const s = await startTestServer();
  const topic = `eddy/trial/${uid('in')}`;
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_trial'), reconnectPeriod: 0 });
  try {
    const live = uid('live');
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM ${live} (v BIGINT) WITH (DATASOURCE="${topic}")` }))
        .status,
      201,
    );
    const { port } = await create(s, { id: 't2', sql: `SELECT v * 10 AS w FROM ${live}`, mockSource: {} });
    const ws = await listen(port, 't2');
    assert.equal((await s.req('POST', '/ruletest/t2/start')).status, 200);
    await until(
      async () => {
        await client.publishAsync(topic, JSON.stringify({ v: 4 }), { qos: 1 });
        return ws.frames.length;
      },
      (n) => n > 0,
      'a result from MQTT',
    );
    assert.deepEqual(ws.frames[0], { w: 40 });
    ws.close();

    const bad = async (body: unknown, status: number, code: number, message: RegExp) => {
      const r = await s.req('POST', '/ruletest', body);
      assert.equal(r.status, status, r.text);
      const e = r.json() as { error: number; message: string };
      assert.equal(e.error, code, r.text);
      assert.match(e.message, message);
    };
    await bad({ sql: `SELECT * FROM ${live}` }, 400, 1000, /missing id/);
    await bad({ id: 'x' }, 400, 1000, /missing sql/);
    await bad({ id: 'x', sql: 'SELECT * FROM nosuch' }, 400, 2101, /fail to get stream nosuch/);
    await bad('{', 400, 1000, /^Invalid body: /);
    assert.equal((await s.req('DELETE', '/ruletest/t2')).status, 200);
  } finally {
    await client.endAsync();
    await s.dispose();
  }
});

test('a trial goes away by itself when its time is up', async () => {
  const s = await startTestServer({ ruleTestTimeoutMs: 2000 });
  try {
    const demo = uid('demo');
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM ${demo} (a BIGINT) WITH (DATASOURCE="${demo}")` })).status,
      201,
    );
    const { port } = await create(s, {
      id: 't3',
      sql: `SELECT * FROM ${demo}`,
      mockSource: { [demo]: { data: [{ a: 1 }], interval: 10 } },
    });
    const ws = await listen(port, 't3');
    assert.equal((await s.req('POST', '/ruletest/t3/start')).status, 200);
    await until(
      () => ws.closed(),
      (c) => c,
      'the run to end and its endpoint to close',
    );
    assert.ok(ws.frames.length > 0);
    assert.equal((await s.req('POST', '/ruletest/t3/start')).status, 404);
  } finally {
    await s.dispose();
  }
});
