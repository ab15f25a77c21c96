/**
 * Rules using the data server run on the rule workers (docs/runtime.md §1.10): the server listens on the main thread,
 * and the bodies of an httppush route, the frames sent to a websocket endpoint and what a websocket sink broadcasts
 * cross between it and the rule's worker. Clients get the answers they got before (200 `ok`, 400 with the decode
 * error, 404 once no rule holds the route).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { subscriber, uniqueTopic, until } from '../connectors/helpers.js';
import { status, type J } from './helpers.js';

async function created(s: TestServer, path: string, body: unknown): Promise<void> {
  const r = await s.req('POST', path, body);
  assert.equal(r.status, 201, r.text);
}

test('httppush sources and websocket endpoints of rules on a worker reach them through the main thread', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('dataserver');
  const tag = topic.replace(/\W/g, '_');
  const sub = await subscriber(`${topic}/#`);
  const mqtt = (leaf: string) => ({ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/${leaf}` } });
  const clients: WebSocket[] = [];
  try {
    await created(s, '/streams', {
      sql: `CREATE STREAM push_${tag} () WITH (TYPE="httppush", DATASOURCE="/${tag}/in")`,
    });
    await created(s, '/rules', { id: `push_${tag}`, sql: `SELECT a FROM push_${tag}`, actions: [mqtt('push')] });
    await created(s, '/streams', {
      sql: `CREATE STREAM ws_${tag} () WITH (TYPE="websocket", DATASOURCE="/${tag}/ws")`,
    });
    await created(s, '/rules', { id: `ws_${tag}`, sql: `SELECT b FROM ws_${tag}`, actions: [mqtt('ws')] });
    await created(s, '/streams', { sql: `CREATE STREAM gen_${tag} () WITH (TYPE="random", DATASOURCE="x")` });
    await created(s, '/rules', {
      id: `wsout_${tag}`,
      sql: `SELECT count FROM gen_${tag}`,
      actions: [{ websocket: { path: `/${tag}/out` } }],
    });
    for (const id of [`push_${tag}`, `ws_${tag}`, `wsout_${tag}`]) {
      const st: J = await status(s, id);
      assert.equal(st.status, 'running', JSON.stringify(st));
      assert.equal(st.worker, s.app.workers?.place(id), `${id} runs on its worker: ${JSON.stringify(st)}`);
    }
    const port = s.app.connectors.dataServer.port;
    assert.ok(port !== undefined, 'the data server listens on the main thread');

    // httppush: bodies reach the worker's rule; a bad body is answered 400 and counted by the rule's source
    const url = `http://127.0.0.1:${port}/${tag}/in`;
    let a = 0;
    const end = Date.now() + 30_000;
    while (!sub.messages.some((m) => m.topic === `${topic}/push`)) {
      assert.ok(Date.now() < end, 'rows pushed over HTTP');
      const res = await fetch(url, { method: 'POST', body: JSON.stringify({ a: a++ }) });
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'ok');
      await new Promise((r) => setTimeout(r, 100));
    }
    const bad = await fetch(url, { method: 'POST', body: '{"a":' });
    assert.equal(bad.status, 400);
    assert.equal(await bad.text(), 'Fail to decode data: unexpected end of JSON input\n');
    const counted = async () => {
      const st = await status(s, `push_${tag}`);
      return st[`source_push_${tag}_0_last_exception`] === 'Fail to decode data: unexpected end of JSON input';
    };
    const end2 = Date.now() + 10_000;
    while (!(await counted())) {
      assert.ok(Date.now() < end2, 'the decode error counted by the rule on the worker');
      await new Promise((r) => setTimeout(r, 100));
    }

    // websocket endpoint as a source: frames reach the worker's rule
    const input = new WebSocket(`ws://127.0.0.1:${port}/${tag}/ws`);
    clients.push(input);
    await new Promise((resolve, reject) => input.once('open', resolve).once('error', reject));
    const end3 = Date.now() + 30_000;
    while (!sub.messages.some((m) => m.topic === `${topic}/ws`)) {
      assert.ok(Date.now() < end3, 'rows sent over the websocket');
      input.send(JSON.stringify({ b: 7 }));
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(JSON.parse(sub.messages.find((m) => m.topic === `${topic}/ws`)!.text), [{ b: 7 }]);

    // websocket endpoint as a sink: what the worker's rule sends reaches the endpoint's clients
    const output = new WebSocket(`ws://127.0.0.1:${port}/${tag}/out`);
    clients.push(output);
    const frames: string[] = [];
    output.on('message', (d) => frames.push(d.toString()));
    await until(() => frames.length > 0, 30_000, 'frames from the websocket sink');
    assert.ok('count' in (JSON.parse(frames[0]) as J[])[0], frames[0]);

    // the rule's worker crashes: the replacement holds the route again, and the dead worker's hold is let go
    const before = sub.messages.filter((m) => m.topic === `${topic}/push`).length;
    s.app.workers!.crash(s.app.workers!.place(`push_${tag}`));
    const end5 = Date.now() + 30_000;
    while (sub.messages.filter((m) => m.topic === `${topic}/push`).length === before) {
      assert.ok(Date.now() < end5, 'rows pushed to the replacement worker');
      // refused or 404 while the replacement opens the rule (the data server stops while no route is held, and
      // listens again, here on a new ephemeral port), then 200
      const again = `http://127.0.0.1:${s.app.connectors.dataServer.port}/${tag}/in`;
      await fetch(again, { method: 'POST', body: JSON.stringify({ a: a++ }) }).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 200));
    }

    // once no rule holds the route, the data server no longer serves it
    assert.equal((await s.req('DELETE', `/rules/push_${tag}`)).status, 200);
    const end4 = Date.now() + 10_000;
    const gone = async () => {
      const now = s.app.connectors.dataServer.port;
      // stopped: no route is served at all
      if (now === undefined) return true;
      return (await fetch(`http://127.0.0.1:${now}/${tag}/in`, { method: 'POST', body: '{}' })).status === 404;
    };
    while (!(await gone())) {
      assert.ok(Date.now() < end4, 'the route let go');
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    for (const c of clients) c.terminate();
    await sub.close();
    await s.dispose();
  }
});
