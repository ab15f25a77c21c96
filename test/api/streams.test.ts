import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.dispose();
});

interface ErrBody {
  error: number;
  message: string;
}

async function expectError(
  method: string,
  path: string,
  body: unknown,
  status: number,
  code: number,
  message: RegExp | string,
): Promise<void> {
  const r = await s.req(method, path, body);
  assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
  const e = r.json() as ErrBody;
  assert.deepEqual(Object.keys(e).sort(), ['error', 'message']);
  assert.equal(e.error, code, r.text);
  if (typeof message === 'string') assert.equal(e.message, message);
  else assert.match(e.message, message);
}

test('create, list, describe, schema, replace and drop a stream', async () => {
  const sql =
    'CREATE STREAM demo (id BIGINT, name STRING, score FLOAT, ok BOOLEAN, raw BYTEA, at DATETIME, ' +
    'tags ARRAY(STRING), pos STRUCT(lat FLOAT, lng FLOAT), grid ARRAY(ARRAY(BIGINT)), ' +
    'items ARRAY(STRUCT(n STRING))) WITH (DATASOURCE="dev/+/data", FORMAT="JSON", KEY="id", SHARED="true")';
  const created = await s.req('POST', '/streams', { sql });
  assert.equal(created.status, 201);
  assert.equal(created.text, 'Stream demo is created.');
  assert.match(created.headers.get('content-type') ?? '', /^text\/plain/);

  assert.deepEqual((await s.req('GET', '/streams')).json(), ['demo']);

  const desc = await s.req('GET', '/streams/demo');
  assert.equal(desc.status, 200);
  assert.deepEqual(desc.json(), {
    Name: 'demo',
    StreamFields: [
      { Name: 'id', FieldType: { Type: 1 } },
      { Name: 'name', FieldType: { Type: 3 } },
      { Name: 'score', FieldType: { Type: 2 } },
      { Name: 'ok', FieldType: { Type: 6 } },
      { Name: 'raw', FieldType: { Type: 4 } },
      { Name: 'at', FieldType: { Type: 5 } },
      { Name: 'tags', FieldType: { Type: 7, ElementType: { Type: 3 } } },
      {
        Name: 'pos',
        FieldType: {
          Type: 8,
          Fields: [
            { Name: 'lat', FieldType: { Type: 2 } },
            { Name: 'lng', FieldType: { Type: 2 } },
          ],
        },
      },
      { Name: 'grid', FieldType: { Type: 7, ElementType: { Type: 7, ElementType: { Type: 1 } } } },
      {
        Name: 'items',
        FieldType: { Type: 7, ElementType: { Type: 8, Fields: [{ Name: 'n', FieldType: { Type: 3 } }] } },
      },
    ],
    Options: { DATASOURCE: 'dev/+/data', FORMAT: 'JSON', KEY: 'id', SHARED: 'true' },
    StreamType: 0,
  });

  const schema = await s.req('GET', '/streams/demo/schema');
  assert.equal(schema.status, 200);
  assert.deepEqual(schema.json(), {
    at: { type: 'datetime' },
    grid: { type: 'array', items: { type: 'array', items: { type: 'bigint' } } },
    id: { type: 'bigint' },
    items: { type: 'array', items: { type: 'struct', properties: { n: { type: 'string' } } } },
    name: { type: 'string' },
    ok: { type: 'boolean' },
    pos: { type: 'struct', properties: { lat: { type: 'float' }, lng: { type: 'float' } } },
    raw: { type: 'bytea' },
    score: { type: 'float' },
    tags: { type: 'array', items: { type: 'string' } },
  });

  const replaced = await s.req('PUT', '/streams/demo', {
    sql: 'CREATE STREAM demo () WITH (DATASOURCE="x", TYPE="memory")',
  });
  assert.equal(replaced.status, 200);
  assert.equal(replaced.text, 'Stream demo is replaced.');
  assert.deepEqual((await s.req('GET', '/streams/demo')).json(), {
    Name: 'demo',
    StreamFields: [],
    Options: { DATASOURCE: 'x', TYPE: 'memory' },
    StreamType: 0,
  });
  assert.deepEqual((await s.req('GET', '/streams/demo/schema')).json(), {});

  const dropped = await s.req('DELETE', '/streams/demo');
  assert.equal(dropped.status, 200);
  assert.equal(dropped.text, 'Stream demo is dropped.');
  assert.deepEqual((await s.req('GET', '/streams')).json(), []);
});

test('PUT is an upsert: it creates a missing stream', async () => {
  const r = await s.req('PUT', '/streams/upserted', { sql: 'CREATE STREAM upserted () WITH (DATASOURCE="u")' });
  assert.equal(r.status, 200);
  assert.equal((await s.req('GET', '/streams/upserted')).status, 200);
  await s.req('DELETE', '/streams/upserted');
});

test('tables: kinds, the kind filter, describe shape', async () => {
  assert.equal(
    (await s.req('POST', '/tables', { sql: 'CREATE TABLE scan1 (id BIGINT) WITH (DATASOURCE="t1", TYPE="mqtt")' }))
      .status,
    201,
  );
  const lk = await s.req('POST', '/tables', {
    sql: 'CREATE TABLE look1 () WITH (DATASOURCE="t2", TYPE="memory", KEY="id", KIND="LOOKUP")',
  });
  assert.equal(lk.status, 201);
  assert.equal(lk.text, 'Table look1 is created.');
  assert.deepEqual((await s.req('GET', '/tables')).json(), ['scan1', 'look1']);
  assert.deepEqual((await s.req('GET', '/tables?kind=scan')).json(), ['scan1']);
  assert.deepEqual((await s.req('GET', '/tables?kind=lookup')).json(), ['look1']);
  assert.deepEqual((await s.req('GET', '/tables?kind=SCAN')).json(), ['scan1', 'look1'], 'kind is case-sensitive');
  const desc = (await s.req('GET', '/tables/look1')).json() as { Options: Record<string, string>; StreamType: number };
  assert.deepEqual(desc.Options, { DATASOURCE: 't2', TYPE: 'memory', KEY: 'id', KIND: 'lookup' });
  assert.equal(desc.StreamType, 1);
  assert.deepEqual((await s.req('GET', '/streams')).json(), [], 'tables are not streams');
  await s.req('DELETE', '/tables/scan1');
  await s.req('DELETE', '/tables/look1');
});

test('POST accepts any statement of either kind and answers as eKuiper', async () => {
  assert.equal((await s.req('POST', '/streams', { sql: 'SHOW STREAMS' })).text, 'No stream definitions are found.');
  assert.equal((await s.req('POST', '/tables', { sql: 'show tables;' })).text, 'No table definitions are found.');
  const viaStreams = await s.req('POST', '/streams', { sql: 'CREATE TABLE t9 (a BIGINT) WITH (DATASOURCE="t9")' });
  assert.equal(viaStreams.status, 201);
  assert.equal(viaStreams.text, 'Table t9 is created.');
  await s.req('POST', '/streams', {
    sql: 'CREATE STREAM s9 (id bigint, tags array(string)) WITH (DATASOURCE="d1", FORMAT="JSON")',
  });
  await s.req('POST', '/streams', { sql: 'CREATE STREAM s10 () WITH (DATASOURCE="d2")' });
  const show = await s.req('POST', '/tables', { sql: 'SHOW STREAMS' });
  assert.equal(show.status, 201);
  assert.equal(show.text, 's9\ns10');
  const describe = await s.req('POST', '/streams', { sql: 'DESCRIBE STREAM s9' });
  assert.equal(
    describe.text,
    `Fields\n${'-'.repeat(80)}\nid\tbigint\ntags\tarray(string)\n\nDATASOURCE: d1\nFORMAT: JSON`,
  );
  assert.equal((await s.req('POST', '/streams', { sql: 'EXPLAIN STREAM s9' })).text, 'TO BE SUPPORTED');
  assert.equal((await s.req('POST', '/streams', { sql: 'DROP TABLE t9;' })).text, 'Table t9 is dropped.');
  assert.equal((await s.req('POST', '/streams', { sql: 'drop stream s9' })).text, 'Stream s9 is dropped.');
  await s.req('DELETE', '/streams/s10');
});

test('bad bodies: malformed JSON, not an object, missing sql', async () => {
  await expectError(
    'POST',
    '/streams',
    '{"sql": "CREATE',
    400,
    1000,
    /^Invalid body: Error decoding the statement descriptor: /,
  );
  await expectError('POST', '/tables', '[1,2]', 400, 1000, /^Invalid body: Error decoding the statement descriptor: /);
  await expectError('POST', '/streams', '"text"', 400, 1000, /^Invalid body/);
  await expectError('POST', '/streams', { sql: 42 }, 400, 1000, /^Invalid body/);
  await expectError('POST', '/streams', {}, 400, 3000, 'Stream command error: Invalid stream statement: ');
  await expectError('PUT', '/streams/x', '{sql:', 400, 1000, /^Invalid body/);
  assert.deepEqual((await s.req('GET', '/streams')).json(), [], 'nothing was saved');
});

test('SQL errors say what is wrong and where', async () => {
  await expectError(
    'POST',
    '/streams',
    { sql: 'CREATE STREEM s (a BIGINT) WITH ()' },
    400,
    3000,
    /^Stream command error: .*STREEM/,
  );
  await expectError(
    'POST',
    '/streams',
    { sql: 'SELECT * FROM demo' },
    400,
    3000,
    'Stream command error: Invalid stream statement: SELECT * FROM demo',
  );
  await expectError(
    'POST',
    '/streams',
    { sql: 'CREATE STREAM s (a INT) WITH (DATASOURCE="x")' },
    400,
    3000,
    /expect valid stream field types/,
  );
  await expectError(
    'POST',
    '/streams',
    { sql: 'CREATE STREAM s (a BIGINT) WITH (DATASOURCE="x", NOSUCH="1")' },
    400,
    3000,
    /unknown option keys/,
  );
  await expectError(
    'POST',
    '/streams',
    { sql: "CREATE STREAM s (a BIGINT) WITH (DATASOURCE='x')" },
    400,
    3000,
    /string/,
  );
  await expectError(
    'POST',
    '/streams',
    { sql: 'CREATE STREAM s (a BIGINT) WITH (FORMAT="xml")' },
    400,
    3000,
    "Stream command error: option 'format=xml' is invalid",
  );
  await expectError(
    'POST',
    '/streams',
    { sql: 'CREATE STREAM s (a BIGINT, b BYTEA) WITH (FORMAT="binary")' },
    400,
    3000,
    /binary/,
  );
  await expectError('POST', '/tables', { sql: 'CREATE TABLE t (a BYTEA) WITH (FORMAT="binary")' }, 400, 3000, /binary/);
  await expectError(
    'POST',
    '/tables',
    { sql: 'CREATE TABLE t () WITH (TYPE="memory", KIND="lookup")' },
    400,
    3000,
    'Table command error: Option "key" is required for memory lookup table.',
  );
  await expectError(
    'POST',
    '/streams',
    { sql: 'CREATE STREAM s (a BIGINT) WITH (RETAIN_SIZE="abc")' },
    400,
    3000,
    /RETAIN_SIZE|retain/i,
  );
  assert.deepEqual((await s.req('GET', '/streams')).json(), [], 'nothing was saved');
  assert.deepEqual((await s.req('GET', '/tables')).json(), []);
});

test('duplicate names are refused across streams and tables', async () => {
  await s.req('POST', '/streams', { sql: 'CREATE STREAM dup (a BIGINT) WITH (DATASOURCE="x")' });
  await expectError(
    'POST',
    '/streams',
    { sql: 'CREATE STREAM dup (a BIGINT) WITH (DATASOURCE="x")' },
    400,
    3000,
    'Stream command error: Create stream fails: Item dup already exists.',
  );
  await expectError(
    'POST',
    '/tables',
    { sql: 'CREATE TABLE dup (a BIGINT) WITH (DATASOURCE="x")' },
    400,
    3000,
    'Table command error: Create table fails: Item dup already exists.',
  );
  const d = (await s.req('GET', '/streams/dup')).json() as { StreamFields: unknown[] };
  assert.equal(d.StreamFields.length, 1, 'the first definition is untouched');
  await s.req('DELETE', '/streams/dup');
});

test('unknown names answer 404 with code 1002; a stream name used as a table too', async () => {
  await expectError(
    'GET',
    '/streams/nope',
    undefined,
    404,
    1002,
    'describe stream error: Describe stream fails, nope is not found.',
  );
  await expectError(
    'GET',
    '/tables/nope/schema',
    undefined,
    404,
    1002,
    'get schema of table error: Describe table fails, nope is not found.',
  );
  await expectError('DELETE', '/streams/nope', undefined, 404, 1002, 'delete stream error: nope is not found');
  await s.req('POST', '/streams', { sql: 'CREATE STREAM only_stream (a BIGINT) WITH (DATASOURCE="x")' });
  await expectError(
    'GET',
    '/tables/only_stream',
    undefined,
    404,
    1002,
    'describe table error: Describe table fails, table only_stream is not found.',
  );
  await expectError(
    'DELETE',
    '/tables/only_stream',
    undefined,
    404,
    1002,
    'delete table error: table only_stream is not found',
  );
  await expectError(
    'PUT',
    '/tables/only_stream',
    { sql: 'CREATE TABLE only_stream (a BIGINT) WITH (DATASOURCE="x")' },
    404,
    1002,
    /table only_stream is not found/,
  );
  await expectError(
    'PUT',
    '/streams/only_stream',
    { sql: 'CREATE TABLE only_stream (a BIGINT) WITH (DATASOURCE="x")' },
    404,
    1002,
    'Stream command error: stream only_stream is not found',
  );
  await expectError(
    'PUT',
    '/streams/only_stream',
    { sql: 'CREATE STREAM other (a BIGINT) WITH (DATASOURCE="x")' },
    400,
    3000,
    'Stream command error: Replace only_stream fails: the sql statement must update the only_stream source.',
  );
  await expectError(
    'PUT',
    '/streams/only_stream',
    { sql: 'SHOW STREAMS' },
    400,
    3000,
    'Stream command error: Invalid stream statement: SHOW STREAMS',
  );
  await expectError(
    'POST',
    '/streams',
    { sql: 'DESCRIBE TABLE only_stream' },
    400,
    3000,
    'Stream command error: Describe table fails, table only_stream is not found.',
  );
  await expectError(
    'POST',
    '/streams',
    { sql: 'DROP STREAM ghost' },
    400,
    3000,
    'Stream command error: Drop stream fails: ghost is not found.',
  );
  assert.equal(
    ((await s.req('GET', '/streams/only_stream')).json() as { StreamType: number }).StreamType,
    0,
    'still a stream',
  );
  await s.req('DELETE', '/streams/only_stream');
});

test('definitions survive a restart on the same home (SQLite)', async () => {
  const a = await startTestServer();
  try {
    await a.req('POST', '/streams', { sql: 'CREATE STREAM keep1 (a BIGINT) WITH (DATASOURCE="k1")' });
    await a.req('POST', '/tables', {
      sql: 'CREATE TABLE keep2 () WITH (DATASOURCE="k2", TYPE="memory", KEY="id", KIND="lookup")',
    });
    await a.req('POST', '/streams', { sql: 'CREATE STREAM keep3 () WITH (DATASOURCE="k3")' });
    await a.req('DELETE', '/streams/keep3');
    await a.stop();
    const b = await startTestServer({ home: a.homeDir });
    try {
      assert.deepEqual((await b.req('GET', '/streams')).json(), ['keep1']);
      assert.deepEqual((await b.req('GET', '/tables?kind=lookup')).json(), ['keep2']);
      assert.equal(((await b.req('GET', '/streams/keep1')).json() as { Name: string }).Name, 'keep1');
    } finally {
      await b.stop();
    }
  } finally {
    await a.dispose();
  }
});

test('definitions survive a restart on the same home (Redis store)', async () => {
  const redisPrefix = `eddy-test:${randomUUID()}:`;
  const a = await startTestServer({ redisPrefix });
  try {
    await a.req('POST', '/streams', { sql: 'CREATE STREAM r1 (a BIGINT) WITH (DATASOURCE="k1")' });
    await a.req('POST', '/tables', { sql: 'CREATE TABLE r2 (b STRING) WITH (DATASOURCE="k2")' });
    await a.stop();
    const b = await startTestServer({ home: a.homeDir, redisPrefix });
    try {
      assert.deepEqual((await b.req('GET', '/streams')).json(), ['r1']);
      assert.deepEqual((await b.req('GET', '/tables')).json(), ['r2']);
      await b.req('DELETE', '/streams/r1');
      await b.req('DELETE', '/tables/r2');
    } finally {
      await b.stop();
    }
  } finally {
    await a.dispose();
  }
});

test('GET /streamdetails and /tabledetails list names with lower-cased type and format', async () => {
  await s.req('POST', '/streams', { sql: 'CREATE STREAM det1 () WITH (DATASOURCE="a", FORMAT="JSON")' });
  await s.req('POST', '/tables', {
    sql: 'CREATE TABLE det2 () WITH (DATASOURCE="b", TYPE="Memory", KEY="id", KIND="lookup")',
  });
  assert.deepEqual((await s.req('GET', '/streamdetails')).json(), [{ name: 'det1', type: 'mqtt', format: 'json' }]);
  assert.deepEqual((await s.req('GET', '/tabledetails?kind=lookup')).json(), [
    { name: 'det2', type: 'memory', format: 'json' },
  ]);
  assert.deepEqual((await s.req('GET', '/tabledetails?kind=scan')).json(), []);
  await s.req('DELETE', '/streams/det1');
  await s.req('DELETE', '/tables/det2');
});

test("dropping what a rule reads: streams and stopped rules' tables go (eKuiper), a running rule's lookup table is refused", async () => {
  const u = randomUUID().slice(0, 8);
  const st = `drop_s_${u}`;
  const lt = `drop_t_${u}`;
  const rule = `drop_r_${u}`;
  assert.equal(
    (
      await s.req('POST', '/streams', {
        sql: `CREATE STREAM ${st} (id BIGINT) WITH (DATASOURCE="m/${u}", TYPE="memory")`,
      })
    ).status,
    201,
  );
  const t = await s.req('POST', '/tables', {
    sql: `CREATE TABLE ${lt} (id BIGINT, v STRING) WITH (DATASOURCE="l/${u}", TYPE="memory", KIND="lookup", KEY="id")`,
  });
  assert.equal(t.status, 201, t.text);
  const r = await s.req('POST', '/rules', {
    id: rule,
    sql: `SELECT * FROM ${st} INNER JOIN ${lt} ON ${st}.id = ${lt}.id`,
    actions: [{ nop: {} }],
  });
  assert.equal(r.status, 201, r.text);

  await expectError(
    'DELETE',
    `/tables/${lt}`,
    undefined,
    400,
    3000,
    `delete table error: lookup table ${lt} is still in use, stop all using rules before dropping it`,
  );
  await expectError(
    'POST',
    '/tables',
    { sql: `DROP TABLE ${lt}` },
    400,
    3000,
    `Table command error: Drop table fails: lookup table ${lt} is still in use, stop all using rules before dropping it.`,
  );
  const ds = await s.req('POST', '/streams', { sql: `DROP STREAM ${st}` });
  assert.equal(ds.status, 201, ds.text);
  assert.equal(ds.text, `Stream ${st} is dropped.`);
  assert.equal(
    ((await s.req('GET', `/rules/${rule}/status`)).json() as { status: string }).status,
    'running',
    'the rule keeps running',
  );
  assert.equal((await s.req('POST', `/rules/${rule}/stop`)).status, 200);
  const dropped = await s.req('DELETE', `/tables/${lt}`);
  assert.equal(dropped.status, 200, dropped.text);
  assert.equal(dropped.text, `Table ${lt} is dropped.`);
  await expectError(
    'POST',
    `/rules/${rule}/start`,
    undefined,
    400,
    2101,
    `start rule error: fail to get stream ${st}, please check if stream is created`,
  );
  assert.equal((await s.req('DELETE', `/rules/${rule}`)).status, 200);
});

test('PUT of a lookup table whose new source cannot open: 400 code 3000, the old definition and source stay', async () => {
  const u = randomUUID().slice(0, 8);
  const lt = `put_t_${u}`;
  const st = `put_s_${u}`;
  assert.equal(
    (
      await s.req('POST', '/tables', {
        sql: `CREATE TABLE ${lt} (id BIGINT) WITH (DATASOURCE="l/${u}", TYPE="memory", KIND="lookup", KEY="id")`,
      })
    ).status,
    201,
  );
  await expectError(
    'PUT',
    `/tables/${lt}`,
    { sql: `CREATE TABLE ${lt} (id BIGINT) WITH (DATASOURCE="nodb", TYPE="redis", KIND="lookup")` },
    400,
    3000,
    /^Table command error: Replace table fails: .+\.$/,
  );
  const desc = (await s.req('GET', `/tables/${lt}`)).json() as { Options: Record<string, string> };
  assert.equal(desc.Options.TYPE, 'memory');
  // the memory lookup still answers: a rule joining it plans and runs
  assert.equal(
    (
      await s.req('POST', '/streams', {
        sql: `CREATE STREAM ${st} (id BIGINT) WITH (DATASOURCE="m/${u}", TYPE="memory")`,
      })
    ).status,
    201,
  );
  const r = await s.req('POST', '/rules', {
    id: `put_r_${u}`,
    sql: `SELECT * FROM ${st} INNER JOIN ${lt} ON ${st}.id = ${lt}.id`,
    actions: [{ nop: {} }],
  });
  assert.equal(r.status, 201, r.text);
  assert.equal((await s.req('DELETE', `/rules/put_r_${u}`)).status, 200);
  assert.equal((await s.req('DELETE', `/tables/${lt}`)).status, 200);
  assert.equal((await s.req('DELETE', `/streams/${st}`)).status, 200);
});

test("body decoding follows Go's stream decoder: its messages, and text after the first value is ignored", async () => {
  await expectError('POST', '/streams', '', 400, 1000, 'Invalid body: Error decoding the statement descriptor: EOF');
  await expectError(
    'POST',
    '/streams',
    '{"sql": "CREATE',
    400,
    1000,
    'Invalid body: Error decoding the statement descriptor: unexpected EOF',
  );
  await expectError(
    'POST',
    '/streams',
    'nope',
    400,
    1000,
    "Invalid body: Error decoding the statement descriptor: invalid character 'o' in literal null (expecting 'u')",
  );
  const r = await s.req('POST', '/streams', '{"sql": "SHOW STREAMS"} trailing');
  assert.equal(r.status, 201, r.text);
});
