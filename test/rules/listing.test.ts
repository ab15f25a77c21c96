/**
 * `GET /rules` and `GET /rules/status/all` kept as text and patched as rules change (src/rules/listing.ts): the text is
 * always what serialising every rule gives, a listing reads again only the rules that changed, and the rows of rules on
 * worker threads follow what changes there with no word from the rule (a worker that stops answering, a sink failing
 * for long enough).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite.js';
import { RuleService } from '../../src/rules/service.js';
import { ListingIndex, type RowRead } from '../../src/rules/listing.js';
import { SINK_FAILING_MS } from '../../src/rules/health.js';
import { startTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/process.js';
import { publisher, uniqueTopic } from '../connectors/helpers.js';
import { DEFAULTS, TestEngine, silent, until } from './fixtures.js';

type J = Record<string, unknown>;

const body = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, sql: 'SELECT * FROM s1', actions: [{ log: {} }], ...extra });

test('the listings kept as text follow every change: new, renamed, stopped, failing and deleted rules', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-listing-'));
  const store = new SqliteStore(join(dir, 'kv.db'));
  const engine = new TestEngine();
  const svc = new RuleService({ store, logger: silent, defaults: DEFAULTS, engine, cpuSampleMs: 50 });
  // the text must always be what serialising the listing objects gives
  const same = () => {
    assert.equal(svc.listJson().toString(), JSON.stringify(svc.list()));
    assert.equal(svc.statusAllJson().toString(), JSON.stringify(svc.statusAll()));
  };
  try {
    same();
    for (const id of ['r3', 'r1', 'r2']) await svc.create(body(id));
    same();
    assert.deepEqual(
      (JSON.parse(svc.listJson().toString()) as Array<{ id: string }>).map((r) => r.id),
      ['r1', 'r2', 'r3'],
    );
    await svc.stop('r2');
    same();
    assert.match(svc.listJson().toString(), /"id":"r2","name":"r2","status":"Stopped: canceled manually\."/);
    await svc.update('r3', body('r3', { name: 'third' }));
    await until(() => svc.statusText('r3') === 'Running', 10_000, 'r3 running again');
    same();
    assert.match(svc.listJson().toString(), /"id":"r3","name":"third"/);
    // a run-time failure: the row of r1 shows the error, though nothing was created or deleted
    const r1 = engine.builderScript.built[1]; // built in creation order: r3, r1, r2
    r1.metrics[0].exceptions = 1;
    r1.metrics[0].lastException = 'broken pipe';
    r1.metrics[0].lastExceptionTime = Date.now();
    same();
    assert.equal(
      (JSON.parse(svc.statusAllJson().toString()) as Record<string, { exceptions_total: number }>).r1.exceptions_total,
      1,
    );
    await svc.delete('r1');
    same();
    assert.doesNotMatch(svc.listJson().toString(), /"r1"/);
  } finally {
    await svc.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a listing reads again only the rows of rules that changed, that change by themselves, or that tell nothing', () => {
  const index = new ListingIndex('[', ']');
  const rows = new Map<string, RowRead>([
    ['a', { json: '"a"', volatile: false, changesAt: 0 }],
    ['b', { json: '"b"', volatile: false, changesAt: 0 }],
    ['c', { json: '"c"', volatile: true, changesAt: 0 }],
    ['d', { json: '"d"', volatile: false, changesAt: 5000 }],
  ]);
  const reads: string[] = [];
  const list = (now: number) =>
    index
      .json(
        now,
        () => [...rows.keys()].sort(),
        (id) => {
          reads.push(id);
          return rows.get(id);
        },
      )
      .toString();
  const readsOf = (now: number) => {
    reads.length = 0;
    const text = list(now);
    return { text, reads: [...reads].sort() };
  };
  // the first listing reads every rule, announced or not
  assert.deepEqual(readsOf(1000), { text: '["a","b","c","d"]', reads: ['a', 'b', 'c', 'd'] });
  // nothing changed: only the rule whose counters change without telling is read
  assert.deepEqual(readsOf(1000), { text: '["a","b","c","d"]', reads: ['c'] });
  // a rule that says its row changed is read, and the text follows it
  rows.set('b', { json: '"B"', volatile: false, changesAt: 0 });
  index.touch('b');
  assert.deepEqual(readsOf(2000), { text: '["a","B","c","d"]', reads: ['b', 'c'] });
  // a row that changes at a known time is read from then on
  rows.set('d', { json: '"D"', volatile: false, changesAt: 0 });
  assert.deepEqual(readsOf(5000), { text: '["a","B","c","D"]', reads: ['c', 'd'] });
  assert.deepEqual(readsOf(6000).reads, ['c']);
  // created and deleted rules
  rows.delete('a');
  index.touch('a');
  rows.set('e', { json: '"e"', volatile: false, changesAt: 0 });
  index.touch('e');
  assert.deepEqual(readsOf(7000), { text: '["B","c","D","e"]', reads: ['a', 'c', 'e'] });
});

test('on worker threads the lists follow a sink failing for long enough and a worker that stops answering', async () => {
  const target = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(400).end('refused'));
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const addr = target.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('listing');
  const client = await publisher();
  const listed = async (): Promise<J | undefined> =>
    ((await s.req('GET', '/rules')).json() as J[]).find((r) => r.id === 'lst');
  try {
    let r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM lst () WITH (DATASOURCE="${topic}", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    const sink = { rest: { url: `http://127.0.0.1:${port}/`, method: 'post', sendSingle: true } };
    r = await s.req('POST', '/rules', { id: 'lst', sql: 'SELECT * FROM lst', actions: [sink] });
    assert.equal(r.status, 201, r.text);
    await waitFor(async () => (await listed())?.state === 'running', 30_000, 'the rule running');
    const worker = ((await s.req('GET', '/rules/lst/status')).json() as J).worker;
    assert.equal(typeof worker, 'number', 'the rule runs on a worker thread');

    // one failed send: its exception reaches the status list when the worker reports it
    await client.publishAsync(topic, JSON.stringify({ a: 1 }));
    const failedAt = Date.now();
    await waitFor(
      async () => {
        const row = ((await s.req('GET', '/rules/status/all')).json() as Record<string, J>).lst;
        return row.exceptions_total === 1;
      },
      30_000,
      'the exception in the status list',
    );
    // nothing more happens, yet once the sink has failed for long enough the rule is listed degraded
    assert.equal((await listed())?.state, 'running', (await s.req('GET', '/rules/lst/status')).text);
    await waitFor(async () => (await listed())?.state === 'degraded', 30_000, 'the rule listed degraded');
    assert.ok(Date.now() - failedAt >= SINK_FAILING_MS - 100, 'degraded once the failing spell was long enough');

    // a worker busy for longer than two heartbeats: its rules are listed degraded meanwhile, then running again
    r = await s.req('POST', '/rules/lst/restart');
    assert.equal(r.status, 200, r.text);
    await waitFor(async () => (await listed())?.state === 'running', 30_000, 'the rule running again');
    s.app.workers!.stall(worker as number, 3000);
    await waitFor(async () => (await listed())?.state === 'degraded', 10_000, 'the rule listed degraded');
    await waitFor(async () => (await listed())?.state === 'running', 20_000, 'the rule listed running again');
  } finally {
    await client.endAsync();
    await s.dispose();
    await new Promise<void>((resolve) => target.close(() => resolve()));
  }
});
