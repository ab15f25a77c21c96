/**
 * Eddy's own operator routes under /eddy/ and the import progress of async tasks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';

test('GET /eddy/rules pages and filters the rules with their summed records in and out', async () => {
  const s = await startTestServer();
  try {
    await s.req('POST', '/streams', {
      sql: 'CREATE STREAM opsmem (a BIGINT) WITH (TYPE="memory", DATASOURCE="ops/mem", FORMAT="json")',
    });
    for (let i = 0; i < 7; i++) {
      const r = await s.req('POST', '/rules', {
        id: `ops${i}`,
        sql: 'SELECT a FROM opsmem',
        actions: [{ memory: { topic: `ops/out${i}` } }],
      });
      assert.equal(r.status, 201, r.text);
    }
    const page = (await s.req('GET', '/eddy/rules?offset=5&limit=5')).json() as {
      total: number;
      offset: number;
      rules: Array<{ id: string; status: string }>;
    };
    assert.equal(page.total, 7);
    assert.deepEqual(
      page.rules.map((r) => r.id),
      ['ops5', 'ops6'],
    );
    assert.equal(page.rules[0].status, 'Running');
    const filtered = (await s.req('GET', '/eddy/rules?filter=OPS3')).json() as {
      total: number;
      rules: Array<{ id: string }>;
    };
    assert.deepEqual(
      filtered.rules.map((r) => r.id),
      ['ops3'],
    );
    // a message through every rule: each counts it in and out
    const deadline = Date.now() + 60_000;
    let first: { recordsIn: number; recordsOut: number } | undefined;
    while (Date.now() < deadline) {
      s.app.connectors.memory.publish({ topic: 'ops/mem', row: { a: 1n } });
      const p = (await s.req('GET', '/eddy/rules?limit=1')).json() as {
        rules: Array<{ recordsIn: number; recordsOut: number }>;
      };
      first = p.rules[0];
      if (first.recordsIn > 0 && first.recordsOut > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(first!.recordsIn > 0 && first!.recordsOut > 0, JSON.stringify(first));
  } finally {
    await s.dispose();
  }
});

test('POST /eddy/sql/check gives the line and column of a syntax error', async () => {
  const s = await startTestServer();
  try {
    const ok = (await s.req('POST', '/eddy/sql/check', { sql: 'SELECT a FROM demo' })).json();
    assert.deepEqual(ok, { ok: true, kind: 'select' });
    const bad = (await s.req('POST', '/eddy/sql/check', { sql: 'SELECT a\nFRM demo' })).json() as {
      ok: boolean;
      line: number;
      column: number;
      message: string;
    };
    assert.equal(bad.ok, false);
    assert.equal(bad.line, 2);
    assert.equal(bad.column, 1);
    assert.match(bad.message, /found "FRM"/);
    const ddl = (await s.req('POST', '/eddy/sql/check', 'CREATE STREAM x (a BIGNT) WITH (TYPE="memory")')).json() as {
      ok: boolean;
      column: number;
    };
    assert.equal(ddl.ok, false);
    assert.equal(ddl.column, 20);
  } finally {
    await s.dispose();
  }
});

test('GET /eddy/server reports CPU, memory and the data server; async imports report their progress', async () => {
  const s = await startTestServer();
  try {
    const info = (await s.req('GET', '/eddy/server')).json() as {
      cpuPercent: number;
      memory: { rss: number };
      dataServer: { listening: boolean };
      rules: number;
    };
    assert.ok(info.memory.rss > 0);
    assert.equal(typeof info.cpuPercent, 'number');
    assert.equal(info.dataServer.listening, false);
    assert.equal(info.rules, 0);
    const rules: Record<string, string> = {};
    for (let i = 0; i < 30; i++)
      rules[`prog${i}`] = JSON.stringify({ sql: 'SELECT * FROM progs', actions: [{ nop: {} }] });
    const content = JSON.stringify({
      streams: { progs: 'CREATE STREAM progs (a BIGINT) WITH (TYPE="memory", DATASOURCE="ops/p", FORMAT="json")' },
      rules,
    });
    const { id } = (await s.req('POST', '/async/data/import', { content })).json() as { id: string };
    const seen: Array<{ done: number; total: number; status: string }> = [];
    for (;;) {
      const p = (await s.req('GET', `/async/task/${id}/progress`)).json() as {
        done: number;
        total: number;
        status: string;
      };
      seen.push(p);
      if (p.status !== 'register' && p.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(seen.at(-1)!.status, 'finish');
    for (const p of seen) if (p.total > 0) assert.equal(p.total, 31, 'one stream and 30 rules');
    // once ended, the task still says what it did (a fast import may end before its first progress request)
    const after = (await s.req('GET', `/async/task/${id}/progress`)).json() as { done: number; total: number };
    assert.deepEqual([after.done, after.total], [31, 31]);
    assert.equal(((await s.req('GET', '/rules')).json() as unknown[]).length, 30);
    assert.equal((await s.req('GET', '/async/task/nosuch/progress')).status, 404);
  } finally {
    await s.dispose();
  }
});
