/**
 * Arbitrary bundles and request bodies never crash, hang or fail the server with a 500 (a bug, src/api/server.ts):
 * every answer is 200 or a 400/404 error object, and the server keeps answering.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { startTestServer } from '../helpers/server.js';
import { call } from './helpers.js';
import { unexpectedErrorCount } from '../../src/api/server.js';

const KEYS = [
  'streams',
  'tables',
  'rules',
  'nativePlugins',
  'sourceConfig',
  'sinkConfig',
  'connectionConfig',
  'Schema',
  'uploads',
  'scripts',
];

const fragment = fc.oneof(
  fc.string(),
  fc.constantFrom(
    'CREATE STREAM fz () WITH (DATASOURCE="fz")',
    'CREATE TABLE fzt (a BIGINT) WITH (DATASOURCE="fzt")',
    'DROP STREAM fz',
    '{"id":"fr","sql":"SELECT * FROM fz","actions":[{"log":{}}]}',
    '{"sql":"SELECT","actions":[]}',
    '{"k":{"server":"tcp://127.0.0.1:1"}}',
    '{"name":"u.txt","content":"x"}',
    '{"name":"../u","content":"x"}',
    '{"type":"protobuf","name":"p","content":"syntax = \\"proto3\\"; message M { int64 a = 1; }"}',
    '{"type":"protobuf","name":"q","content":"message {"}',
    'null',
    '[]',
  ),
);

const bundle = fc.dictionary(
  fc.oneof(fc.constantFrom(...KEYS), fc.string()),
  fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), fragment, { maxKeys: 4 }), fc.jsonValue({ maxDepth: 2 })),
  { maxKeys: 5 },
);

test('random bundles and bodies get 200 or a 400 error object, never a crash', async () => {
  const s = await startTestServer();
  try {
    await fc.assert(
      fc.asyncProperty(bundle, fc.constantFrom('', '?partial=1', '?stop=0'), fc.boolean(), async (b, query, asText) => {
        const body = asText ? { content: JSON.stringify(b) } : { content: JSON.stringify(b).slice(0, 40) };
        const r = await call(s, 'POST', `/data/import${query}`, body);
        assert.ok(r.status === 200 || r.status === 400, `${r.status} ${r.text}`);
        const parsed = r.json();
        if (r.status === 400) assert.equal(typeof parsed.message, 'string');
        const rs = await call(s, 'POST', '/ruleset/import', body);
        assert.ok(rs.status === 200 || rs.status === 400, `${rs.status} ${rs.text}`);
      }),
      { numRuns: 60 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue({ maxDepth: 2 }),
        fc.constantFrom(
          '/data/import',
          '/async/data/import',
          '/data/export',
          '/config/uploads',
          '/schemas/protobuf',
          '/ruleset/import',
        ),
        async (v, path) => {
          const r = await call(s, 'POST', path, v);
          assert.ok(r.status < 500, `${path} ${r.status} ${r.text}`);
        },
      ),
      { numRuns: 60 },
    );
    assert.equal((await call(s, 'GET', '/ping')).status, 200);
    // whatever happened, the state can be exported, and importing that export either succeeds or (when the server
    // holds rules that cannot be planned) is refused without any change
    const exported = await call(s, 'GET', '/data/export');
    assert.equal(exported.status, 200);
    const again = await call(s, 'POST', '/data/import', { content: exported.text });
    assert.ok(again.status === 200 || again.status === 400, again.text);
    assert.deepEqual((await call(s, 'GET', '/data/export')).json(), exported.json());
    // no request met a bug (a defect is answered 500 and counted, src/api/server.ts)
    assert.equal(unexpectedErrorCount(s.app.http), 0);
  } finally {
    await s.dispose();
  }
});
