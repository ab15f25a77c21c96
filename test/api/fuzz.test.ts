/**
 * Property-based fuzzing of every REST route (fast-check, through fastify's inject): whatever the method, path, query
 * and body, the answer is below 500, no route fails with an error it did not anticipate, and the server keeps
 * serving. The request generator is shared with bench/fuzz.ts, which sends 100,000 of them to a server process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { requestArbitrary, routesOf, type FuzzRequest } from '../helpers/rest-fuzz.js';
import { unexpectedErrorCount } from '../../src/api/server.js';

const RUNS = Number(process.env.EDDY_FUZZ_RUNS ?? 3000);

async function seed(s: TestServer): Promise<void> {
  const ok = async (method: string, path: string, body: unknown) => {
    const r = await s.req(method, path, body);
    assert.ok(r.status < 300, `${path}: ${r.text}`);
  };
  await ok('POST', '/streams', { sql: 'CREATE STREAM fz () WITH (DATASOURCE="fz", TYPE="memory")' });
  await ok('POST', '/tables', {
    sql: 'CREATE TABLE fzt () WITH (DATASOURCE="fzt", TYPE="memory", KIND="lookup", KEY="id")',
  });
  await ok('POST', '/rules', { id: 'fzr', sql: 'SELECT * FROM fz', actions: [{ nop: {} }] });
  await ok('POST', '/udf/javascript', { id: 'fzf', script: 'function fzf(a) { return a; }' });
  await ok('PUT', '/metadata/sources/mqtt/confKeys/fzk', { server: 'tcp://127.0.0.1:1883' });
}

function describe(r: FuzzRequest): string {
  const body = r.body === undefined ? '' : ` body(${r.body.length}): ${r.body.slice(0, 200)}`;
  return `${r.method} ${r.url.slice(0, 300)} ${JSON.stringify(r.headers)}${body}`;
}

test('fuzzed requests to every REST route: no answer ≥ 500, no unanticipated error, the server keeps serving', async () => {
  const s = await startTestServer();
  try {
    await seed(s);
    const routes = routesOf(s.app.http);
    assert.ok(routes.length > 50, `the route tree was read (${routes.length} routes)`);
    const ids = ['fz', 'fzt', 'fzr', 'fzf', 'fzk', 'mqtt', 'memory', 'protobuf', 'file', 'json'];
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(requestArbitrary(routes, ids), async (r) => {
        const before = unexpectedErrorCount(s.app.http);
        const res = await s.app.http.inject({
          method: r.method as 'GET',
          url: r.url,
          headers: r.headers,
          payload: r.body,
        });
        sent++;
        assert.ok(res.statusCode < 500, `${res.statusCode} for ${describe(r)}: ${res.body.slice(0, 300)}`);
        assert.equal(
          unexpectedErrorCount(s.app.http),
          before,
          `unanticipated error for ${describe(r)}: ${res.statusCode} ${res.body.slice(0, 300)}`,
        );
      }),
      { numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
    );
    assert.ok(sent >= RUNS);
    assert.equal((await s.req('GET', '/ping')).status, 200);
    assert.equal((await s.req('GET', '/rules')).status, 200);
  } finally {
    await s.dispose();
  }
});
