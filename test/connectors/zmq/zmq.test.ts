import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import type { ValueObject } from '../../../src/values/value.js';
import { freePort } from '../e2-helpers.js';
import { until } from '../helpers.js';

// the independent peer: libzmq through Debian's python3-zmq
const PYTHON = '/usr/bin/python3';

const PUBLISHER = `
import sys, time, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PUB)
s.bind("tcp://127.0.0.1:" + sys.argv[1])
i = 0
while True:
    s.send_multipart([b"sensors/a", b'{"n": %d, ' % i, b'"v": 1.5}'])
    s.send_multipart([b"other", b'{"n": -1}'])
    i += 1
    time.sleep(0.05)
`;

const SUBSCRIBER = `
import sys, json, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.SUB)
s.connect("tcp://127.0.0.1:" + sys.argv[1])
s.setsockopt(zmq.SUBSCRIBE, sys.argv[2].encode())
while True:
    parts = s.recv_multipart()
    print(json.dumps([p.decode() for p in parts]), flush=True)
`;

function python(script: string, args: string[]): { proc: ChildProcess; lines: string[] } {
  const proc = spawn(PYTHON, ['-c', script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let rest = '';
  proc.stdout!.on('data', (d: Buffer) => {
    const text = rest + d.toString('utf8');
    const all = text.split('\n');
    rest = all.pop() ?? '';
    lines.push(...all);
  });
  return { proc, lines };
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    proc.once('exit', () => resolve());
    proc.kill('SIGKILL');
  });
}

async function running(s: TestServer, rid: string): Promise<void> {
  let text = '';
  const end = Date.now() + 15_000;
  while (!/"status":\s*"running"/.test(text)) {
    if (Date.now() > end) throw new Error(`rule ${rid} not running: ${text}`);
    text = (await s.req('GET', `/rules/${rid}/status`)).text;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const uid = (): string => Math.random().toString(36).slice(2, 8);

test('zmq source subscribes to a libzmq publisher: topic prefix, topic metadata, frames joined as the payload', async () => {
  const port = await freePort();
  const pub = python(PUBLISHER, [String(port)]);
  const s = await startTestServer();
  const id = uid();
  const rows: ValueObject[] = [];
  const all: ValueObject[] = [];
  const c1 = s.app.connectors.memory.subscribe(`zmq/${id}/a`, (m) => rows.push(m.row));
  const c2 = s.app.connectors.memory.subscribe(`zmq/${id}/all`, (m) => all.push(m.row));
  try {
    assert.equal(
      (await s.req('PUT', `/metadata/sources/zmq/confKeys/k${id}`, { server: `tcp://127.0.0.1:${port}` })).status,
      200,
    );
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM zs${id} (n bigint, v float) WITH (TYPE="zmq", DATASOURCE="sensors", CONF_KEY="k${id}")`,
        })
      ).status,
      201,
    );
    // the publisher may still be starting: the source connects as soon as it listens
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `za${id}`,
          sql: `SELECT n, v, meta(topic) AS topic FROM zs${id}`,
          actions: [{ memory: { topic: `zmq/${id}/a`, sendSingle: true } }],
        })
      ).status,
      201,
    );
    await until(() => rows.length >= 3, 30_000, 'zmq rows');
    for (const r of rows) {
      assert.equal(r.topic, 'sensors/a');
      assert.equal(typeof r.n, 'bigint');
      assert.equal(r.v, 1.5);
    }
    assert.ok((rows[1].n as bigint) > (rows[0].n as bigint));
    assert.ok(!rows.some((r) => r.n === -1n), 'other topics are not received');
  } finally {
    c1();
    c2();
    await s.dispose();
    await stop(pub.proc);
  }
});

test('zmq source started before its publisher receives once the publisher comes up', async () => {
  const port = await freePort();
  const s = await startTestServer();
  const id = uid();
  const rows: ValueObject[] = [];
  const c = s.app.connectors.memory.subscribe(`zmq/${id}/late`, (m) => rows.push(m.row));
  let pub: ReturnType<typeof python> | undefined;
  try {
    assert.equal(
      (await s.req('PUT', `/metadata/sources/zmq/confKeys/k${id}`, { server: `tcp://127.0.0.1:${port}` })).status,
      200,
    );
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM zl${id} (n bigint) WITH (TYPE="zmq", DATASOURCE="sensors", CONF_KEY="k${id}")`,
        })
      ).status,
      201,
    );
    // nobody listens on the port yet: the SUB socket connects lazily and the rule (restart strategy: no attempts)
    // runs anyway
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `zl${id}`,
          sql: `SELECT n FROM zl${id}`,
          actions: [{ memory: { topic: `zmq/${id}/late`, sendSingle: true } }],
        })
      ).status,
      201,
    );
    await running(s, `zl${id}`);
    pub = python(PUBLISHER, [String(port)]);
    await until(() => rows.length >= 3, 30_000, 'rows after the publisher started');
    assert.equal(typeof rows[0].n, 'bigint');
    await running(s, `zl${id}`);
  } finally {
    c();
    await s.dispose();
    if (pub) await stop(pub.proc);
  }
});

test('zmq sink binds a PUB socket that a libzmq subscriber receives [topic, payload] from', async () => {
  const port = await freePort();
  const s = await startTestServer();
  const id = uid();
  const sub = python(SUBSCRIBER, [String(port), 'out']);
  try {
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM zin${id} () WITH (TYPE="memory", DATASOURCE="zmq/${id}/in")`,
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `zk${id}`,
          sql: `SELECT a, b FROM zin${id}`,
          actions: [{ zmq: { server: `tcp://127.0.0.1:${port}`, topic: 'out/1', sendSingle: true } }],
        })
      ).status,
      201,
    );
    await running(s, `zk${id}`);
    // a subscriber joins late (ZeroMQ drops what is published before it subscribed): publish until it receives
    let i = 0;
    const end = Date.now() + 30_000;
    while (sub.lines.length < 2 && Date.now() < end) {
      s.app.connectors.memory.publish({ topic: `zmq/${id}/in`, row: { a: BigInt(i++), b: 'x<y' } as ValueObject });
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(sub.lines.length >= 2, 'the subscriber received messages');
    const [topic, payload] = JSON.parse(sub.lines[0]) as string[];
    assert.equal(topic, 'out/1');
    const row = JSON.parse(payload) as { a: number; b: string };
    assert.equal(row.b, 'x<y');
    assert.equal(typeof row.a, 'number');

    // an occupied port fails the rule's sink with the bind error
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `zb${id}`,
          sql: `SELECT a FROM zin${id}`,
          actions: [{ zmq: { server: `tcp://127.0.0.1:${port}` } }],
        })
      ).status,
      201,
    );
    let text = '';
    const end2 = Date.now() + 15_000;
    while (!/EADDRINUSE/.test(text) && Date.now() < end2) {
      text = (await s.req('GET', `/rules/zb${id}/status`)).text;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(text, /EADDRINUSE/);
    // the failed rule goes first: its restart strategy could otherwise take the port the moment it is free
    assert.equal((await s.req('DELETE', `/rules/zb${id}`)).status, 200);
    // a restarted sink binds its port again at once (the old socket let it go) and its subscriber gets what follows
    assert.equal((await s.req('POST', `/rules/zk${id}/restart`)).status, 200);
    await running(s, `zk${id}`);
    const end3 = Date.now() + 30_000;
    while (!sub.lines.some((l) => l.includes('after')) && Date.now() < end3) {
      s.app.connectors.memory.publish({ topic: `zmq/${id}/in`, row: { a: BigInt(i++), b: 'after' } as ValueObject });
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(
      sub.lines.some((l) => l.includes('after')),
      'the subscriber receives from the restarted sink',
    );
    assert.doesNotMatch((await s.req('GET', `/rules/zk${id}/status`)).text, /EADDRINUSE/);
    const noServer = await s.req('POST', '/rules', {
      id: `zn${id}`,
      sql: `SELECT a FROM zin${id}`,
      actions: [{ zmq: {} }],
    });
    assert.equal(noServer.status, 400);
    assert.match(noServer.text, /zmq sink is missing property server/);
  } finally {
    await s.dispose();
    await stop(sub.proc);
  }
});

test('a zmq rule runs on a worker while its socket stays on the main thread: the worker crashing does not end the process, and the rule sends again from its replacement', async () => {
  const port = await freePort();
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const id = uid();
  const sub = python(SUBSCRIBER, [String(port), '']);
  try {
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM zw${id} () WITH (TYPE="memory", DATASOURCE="zmq/${id}/w")`,
        })
      ).status,
      201,
    );
    const rid = `zw${id}`;
    const r = await s.req('POST', '/rules', {
      id: rid,
      sql: `SELECT a, b FROM zw${id}`,
      actions: [{ zmq: { server: `tcp://127.0.0.1:${port}`, sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    await running(s, rid);
    const worker = s.app.workers?.place(rid);
    const st = (await s.req('GET', `/rules/${rid}/status`)).json() as Record<string, unknown>;
    assert.equal(st.worker, worker, `the rule runs on its worker: ${JSON.stringify(st)}`);
    let i = 0;
    const sendUntil = async (b: string): Promise<void> => {
      const end = Date.now() + 30_000;
      while (!sub.lines.some((l) => l.includes(b)) && Date.now() < end) {
        s.app.connectors.memory.publish({ topic: `zmq/${id}/w`, row: { a: BigInt(i++), b } as ValueObject });
        await new Promise((res) => setTimeout(res, 100));
      }
      assert.ok(
        sub.lines.some((l) => l.includes(b)),
        `the subscriber received "${b}"`,
      );
    };
    await sendUntil('before');
    // the worker ends as a crash would: zeromq would abort the whole process if the socket lived on that thread
    s.app.workers!.crash(worker!);
    await new Promise((res) => setTimeout(res, 500));
    assert.equal((await s.req('GET', '/ping')).status, 200, 'the server still answers');
    await running(s, rid);
    await sendUntil('after');
  } finally {
    await stop(sub.proc);
    await s.dispose();
  }
});
