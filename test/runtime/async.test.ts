/**
 * Asynchronous calls (docs/runtime.md §6.3): a rule whose external-service calls are pending holds back neither the
 * REST API nor other rules, its results keep their input order, calls run concurrently up to the node's bound, and a
 * call that times out is an exception of the rule's `op_<N>_async` node and an error record. The service is a real
 * HTTP server in this process that answers only when the test says so (an event loop blocked by a call would never
 * let it answer).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { ValueObject } from '../../src/values/index.js';
import { ArchiveDir, HELLO_PROTO } from '../extensions/services-fixture.js';
import { planQuery } from '../../src/plan/planner.js';
import { EddyError } from '../../src/core/errors.js';
import { catalogOf, deps as planDeps } from '../plan/helpers.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

/** Requests of the held service: `/echo` answers at once, `/held` when released, `/never` not at all. */
interface Held {
  i: number;
  res: ServerResponse;
}

let http: Server;
let baseUrl: string;
const held: Held[] = [];
const never: ServerResponse[] = [];
let zips: ArchiveDir;

function answer(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

before(async () => {
  zips = new ArchiveDir();
  http = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const i = Number(JSON.parse(body || 'null'));
      if (req.url === '/echo') answer(res, { i });
      else if (req.url === '/held') held.push({ i, res });
      else never.push(res);
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});

after(async () => {
  for (const h of held) h.res.destroy();
  for (const r of never) r.destroy();
  http.closeAllConnections();
  await new Promise<void>((r) => http.close(() => r()));
  zips.dispose();
});

async function until<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
    last = await fn();
  }
  return last;
}

/** Installs a schemaless REST service whose function is named `fn`. */
async function installService(s: TestServer, fn: string): Promise<void> {
  const def = {
    about: { author: { name: 'Ops' } },
    interfaces: { [fn]: { address: baseUrl, protocol: 'rest', schemaless: true } },
  };
  const name = uid('svc');
  const r = await s.req('POST', '/services', {
    name,
    file: zips.zip({ [`${name}.json`]: JSON.stringify(def), 'schemas/hello.proto': HELLO_PROTO }),
  });
  assert.equal(r.status, 201, r.text);
}

async function memoryStream(s: TestServer): Promise<string> {
  const name = uid('st');
  const r = await s.req('POST', '/streams', {
    sql: `CREATE STREAM ${name} () WITH (DATASOURCE="${name}/in", FORMAT="json", TYPE="memory")`,
  });
  assert.equal(r.status, 201, r.text);
  return name;
}

async function rule(s: TestServer, id: string, sql: string, stream: string): Promise<void> {
  const r = await s.req('POST', '/rules', { id, sql, actions: [{ memory: { topic: `${stream}/out` } }] });
  assert.equal(r.status, 201, r.text);
}

test('pending service calls hold back neither the REST API nor another rule; results keep their order', async () => {
  const s = await startTestServer();
  try {
    const fn = uid('slow');
    await installService(s, fn);
    const slowStream = await memoryStream(s);
    const fastStream = await memoryStream(s);
    const slowOut: ValueObject[] = [];
    const fastOut: ValueObject[] = [];
    const closeSlow = s.app.connectors.memory.subscribe(`${slowStream}/out`, (m) => slowOut.push(m.row));
    const closeFast = s.app.connectors.memory.subscribe(`${fastStream}/out`, (m) => fastOut.push(m.row));
    const slowRule = uid('slow');
    const fastRule = uid('fast');
    await rule(s, slowRule, `SELECT i, ${fn}("post", path, i)->i AS got FROM ${slowStream}`, slowStream);
    await rule(s, fastRule, `SELECT v FROM ${fastStream}`, fastStream);

    // warm up: the source has subscribed once an answered call comes back
    await until(
      () => {
        if (slowOut.length === 0)
          s.app.connectors.memory.publish({ topic: `${slowStream}/in`, row: { i: 0, path: '/echo' } });
        return slowOut.length;
      },
      (n) => n > 0,
      'the first answered call',
    );
    // warm-up rows still in flight arrive before anything else (the rule keeps its input order)
    await until(
      () => held.length,
      (n) => n === 0,
      'no held call',
    );
    const warm = () => slowOut.filter((r) => r.i === 0).length;

    for (const i of [1, 2, 3])
      s.app.connectors.memory.publish({ topic: `${slowStream}/in`, row: { i, path: '/held' } });
    // all three calls are in flight together: the node does not wait for one reply before sending the next call
    await until(
      () => held.length,
      (n) => n === 3,
      'three pending calls',
    );

    // while they are pending the control plane answers and the other rule delivers
    assert.equal((await s.req('GET', '/ping')).status, 200);
    const st = await s.req('GET', `/rules/${slowRule}/status`);
    assert.equal(st.status, 200);
    assert.equal((st.json() as Record<string, unknown>).status, 'running');
    await until(
      () => {
        if (fastOut.length === 0) s.app.connectors.memory.publish({ topic: `${fastStream}/in`, row: { v: 'quick' } });
        return fastOut.length;
      },
      (n) => n > 0,
      'the other rule',
    );
    assert.deepEqual(fastOut[0], { v: 'quick' });
    assert.ok(
      slowOut.every((r) => r.i === 0),
      'nothing of the slow rule came out while its calls were pending',
    );

    // answered last to first: the rule still emits in input order
    for (const h of held.splice(0).reverse()) answer(h.res, { i: h.i * 10 });
    await until(
      () => slowOut.length,
      (n) => n >= warm() + 3,
      'the three results',
    );
    assert.deepEqual(slowOut.slice(warm()), [
      { i: 1, got: 10 },
      { i: 2, got: 20 },
      { i: 3, got: 30 },
    ]);
    closeSlow();
    closeFast();
    for (const id of [slowRule, fastRule]) assert.equal((await s.req('DELETE', `/rules/${id}`)).status, 200);
  } finally {
    await s.dispose();
  }
});

test('a call that times out is an exception of the async node and an error record; later rows go on', async () => {
  const s = await startTestServer();
  try {
    const fn = uid('never');
    await installService(s, fn);
    const stream = await memoryStream(s);
    const out: ValueObject[] = [];
    const close = s.app.connectors.memory.subscribe(`${stream}/out`, (m) => out.push(m.row));
    const id = uid('rule');
    await rule(s, id, `SELECT i, ${fn}("post", path, i)->i AS got FROM ${stream}`, stream);
    await until(
      () => {
        if (out.length === 0) s.app.connectors.memory.publish({ topic: `${stream}/in`, row: { i: 0, path: '/echo' } });
        return out.length;
      },
      (n) => n > 0,
      'the first answered call',
    );
    s.app.connectors.memory.publish({ topic: `${stream}/in`, row: { i: 1, path: '/never' } });
    s.app.connectors.memory.publish({ topic: `${stream}/in`, row: { i: 2, path: '/echo' } });
    // warm-up rows still in flight come first (the rule keeps its input order)
    const later = () => out.filter((r) => r.i !== 0);
    await until(
      () => later().length,
      (n) => n >= 2,
      'the error record and the next result',
    );
    const [failed, next] = later();
    assert.match(
      String(failed.error),
      new RegExp(`call func ${fn} error: rest call to .* failed: timeout after 5000ms`),
    );
    assert.deepEqual(next, { i: 2, got: 2 });
    // a rule on a worker thread reports its counters every 100 ms (docs/runtime.md §1.10)
    const exceptions = (st: Record<string, unknown>) =>
      Object.keys(st).find((k) => /^op_\d+_async_0_exceptions_total$/.test(k));
    const status = await until(
      async () => (await s.req('GET', `/rules/${id}/status`)).json() as Record<string, unknown>,
      (st) => {
        const key = exceptions(st);
        return key !== undefined && st[key] === 1;
      },
      'the async node counting the timed-out call',
    );
    const asyncKey = exceptions(status);
    assert.ok(asyncKey, `an async node in ${Object.keys(status).join(', ')}`);
    assert.equal(status[asyncKey], 1);
    assert.match(String(status[asyncKey.replace('exceptions_total', 'last_exception')]), /timeout after 5000ms/);
    close();
    assert.equal((await s.req('DELETE', `/rules/${id}`)).status, 200);
  } finally {
    await s.dispose();
  }
});

test('asynchronous calls are planned ahead of the stage that reads them, and refused where they cannot be', () => {
  const deps = planDeps(catalogOf('CREATE STREAM demo () WITH (TYPE="memory", DATASOURCE="x", FORMAT="json")'));
  const kinds = (sql: string) => planQuery(sql, deps).nodes.map((n) => n.kind);
  assert.deepEqual(kinds('SELECT delay(1, a) AS d FROM demo'), ['source', 'async', 'project']);
  assert.deepEqual(kinds('SELECT a FROM demo WHERE delay(1, a) > 2'), ['source', 'async', 'filter', 'project']);
  // a call nested in another one's arguments is computed first, in the same node
  const nested = planQuery('SELECT delay(1, delay(1, a)) AS d FROM demo', deps).nodes.find((n) => n.kind === 'async');
  assert.deepEqual(
    nested?.stage.levels.map((l) => l.length),
    [1, 1],
  );
  assert.throws(
    () => planQuery('SELECT count(*) FROM demo GROUP BY delay(1, a), TumblingWindow(ss, 1)', deps),
    (e: unknown) =>
      e instanceof EddyError &&
      /function delay calls out asynchronously and can only be used in SELECT, WHERE, HAVING and ORDER BY/.test(
        e.message,
      ),
  );
});
