/**
 * Bounded input (src/core/limits.ts): the request body limit, one id length limit that the router also accepts, JSON
 * nesting bounded for request bodies and for decoded messages, and large statements parsed in linear time and memory.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.js';
import { MAX_ID_LENGTH, MAX_JSON_DEPTH } from '../../src/core/limits.js';
import { publisher, uniqueTopic } from '../connectors/helpers.js';

const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

test('a body over basic.maxBodySize is answered 413 with an error body; the server keeps serving', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__MAXBODYSIZE: '4096' } });
  try {
    assert.equal(s.app.config.basic.maxBodySize, 4096);
    const r = await s.req('POST', '/streams', { sql: `CREATE STREAM big () WITH (DATASOURCE="${'x'.repeat(5000)}")` });
    assert.equal(r.status, 413);
    assert.deepEqual(r.json(), {
      error: 1000,
      message: 'request body is too large: the limit is 4096 bytes (basic.maxBodySize)',
    });
    // chunked (no content-length) is cut off the same way
    const chunks = new ReadableStream({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('x'.repeat(1000)));
        c.close();
      },
    });
    const res = await fetch(`${s.url}/rules`, { method: 'POST', body: chunks, duplex: 'half' } as RequestInit);
    assert.equal(res.status, 413);
    await res.text();
    assert.equal((await s.req('GET', '/ping')).status, 200);
    const ok = await s.req('POST', '/streams', { sql: 'CREATE STREAM small () WITH (DATASOURCE="x")' });
    assert.equal(ok.status, 201, ok.text);
    // an uploaded file is held to the same limit, and nothing of it is kept
    const upload = async (size: number) => {
      const form = new FormData();
      form.append('uploadFile', new Blob(['y'.repeat(size)]), 'big.txt');
      const res = await fetch(`${s.url}/config/uploads`, { method: 'POST', body: form });
      return { status: res.status, text: await res.text() };
    };
    const big = await upload(8000);
    assert.equal(big.status, 413, big.text);
    assert.equal(JSON.parse(big.text).error, 1000);
    assert.deepEqual(readdirSync(join(s.app.home.data, 'uploads')), []);
    assert.equal((await upload(1000)).status, 201);
  } finally {
    await s.dispose();
  }
});

test('the default body limit is 32 MB', async () => {
  const s = await startTestServer();
  try {
    assert.equal(s.app.config.basic.maxBodySize, 32 * 1024 * 1024);
  } finally {
    await s.dispose();
  }
});

test('an id at the limit can be created and managed; one character more is refused at creation', async () => {
  const s = await startTestServer();
  try {
    const long = 'r'.repeat(MAX_ID_LENGTH);
    // the 150-character rule id of the issue, and the longest allowed
    for (const id of ['r'.repeat(150), long]) {
      assert.equal(
        (
          await s.req('POST', '/streams', {
            sql: `CREATE STREAM s${id.length} () WITH (DATASOURCE="t", TYPE="memory")`,
          })
        ).status,
        201,
      );
      const c = await s.req('POST', '/rules', { id, sql: `SELECT * FROM s${id.length}`, actions: [{ nop: {} }] });
      assert.equal(c.status, 201, c.text);
      assert.equal((await s.req('GET', `/rules/${id}`)).status, 200);
      assert.equal((await s.req('GET', `/rules/${id}/status`)).status, 200);
      assert.equal((await s.req('POST', `/rules/${id}/stop`)).status, 200);
      assert.equal((await s.req('DELETE', `/rules/${id}`)).status, 200);
    }
    const tooLong = 'x'.repeat(MAX_ID_LENGTH + 1);
    const refusals: Array<[string, string, unknown]> = [
      ['POST', '/rules', { id: tooLong, sql: 'SELECT * FROM s150', actions: [{ nop: {} }] }],
      ['POST', '/streams', { sql: `CREATE STREAM ${tooLong} () WITH (DATASOURCE="t", TYPE="memory")` }],
      [
        'POST',
        '/tables',
        { sql: `CREATE TABLE ${tooLong} () WITH (DATASOURCE="t", TYPE="memory", KIND="lookup", KEY="id")` },
      ],
      ['POST', '/schemas/protobuf', { name: tooLong, content: 'syntax = "proto3"; message M { string a = 1; }' }],
      ['POST', '/udf/javascript', { id: tooLong, script: `function ${tooLong}() { return 1; }` }],
      ['POST', '/config/uploads', { name: tooLong, content: 'x' }],
      ['POST', '/services', { name: tooLong, file: 'file:///nowhere.zip' }],
      ['POST', '/plugins/portables', { name: tooLong, file: 'file:///nowhere.zip' }],
      ['POST', '/plugins/sources', { name: tooLong, file: 'file:///nowhere.zip' }],
      // a trial run's id names its websocket endpoint and its later /ruletest/{id} requests
      ['POST', '/ruletest', { id: tooLong, sql: 'SELECT * FROM s150', mockSource: {}, sinkProps: {} }],
      ['POST', '/ruletest', { id: 'y'.repeat(10_000), sql: 'SELECT * FROM s150', mockSource: {}, sinkProps: {} }],
    ];
    for (const [method, path, body] of refusals) {
      const res = await fetch(s.url + path, {
        method,
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      const r = { status: res.status, text: await res.text(), json: () => JSON.parse(r.text) as unknown };
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.match(
        String((r.json() as { message: string }).message),
        new RegExp(`limited to ${MAX_ID_LENGTH} characters`),
        path,
      );
    }
    const unreachable = await s.req('GET', `/rules/${tooLong}`);
    assert.equal(unreachable.status, 414, 'the router refuses what creation refuses');
    assert.deepEqual(unreachable.json(), {
      error: 1000,
      message: `a path segment is longer than the ${MAX_ID_LENGTH} characters an id may have`,
    });
    const badEscape = await s.req('GET', '/rules/%zz');
    assert.equal(badEscape.status, 400);
    assert.equal((badEscape.json() as { error: number }).error, 1000);
    assert.deepEqual((await s.req('GET', '/streams')).json(), ['s150', `s${MAX_ID_LENGTH}`]);
  } finally {
    await s.dispose();
  }
});

test('request bodies nested deeper than the limit are refused before any route reads them', async () => {
  const s = await startTestServer();
  try {
    for (const path of [
      '/rules',
      '/streams',
      '/data/import',
      '/rules/validate',
      '/udf/javascript',
      '/metadata/sources/mqtt/confKeys/x',
    ]) {
      const method = path.startsWith('/metadata') ? 'PUT' : 'POST';
      const r = await s.req(method, path, deep(MAX_JSON_DEPTH + 1));
      assert.equal(r.status, 400, path);
      assert.deepEqual(r.json(), {
        error: 1000,
        message: `Invalid body: exceeded max depth (JSON nesting is limited to ${MAX_JSON_DEPTH} levels)`,
      });
    }
    // brackets inside strings do not count
    const sqlWithBrackets = `CREATE STREAM br () WITH (DATASOURCE="${'['.repeat(2000)}", TYPE="memory")`;
    assert.equal((await s.req('POST', '/streams', { sql: sqlWithBrackets })).status, 201);
    // at the limit a body is read as usual
    const r = await s.req('POST', '/rules/validate', deep(MAX_JSON_DEPTH));
    assert.notEqual(r.status, 500);
    assert.doesNotMatch(r.text, /exceeded max depth/);
  } finally {
    await s.dispose();
  }
});

test('a message nested deeper than the limit is an exception of its rule, which keeps running', async () => {
  const s = await startTestServer();
  const pub = await publisher();
  try {
    const topic = uniqueTopic('deep');
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM deep () WITH (DATASOURCE="${topic}", FORMAT="json")` }))
        .status,
      201,
    );
    const out = uniqueTopic('deep-out');
    const c = await s.req('POST', '/rules', {
      id: 'deep',
      sql: 'SELECT a FROM deep',
      actions: [{ memory: { topic: out } }],
      options: { sendError: false },
    });
    assert.equal(c.status, 201, c.text);
    const status = async () => (await s.req('GET', '/rules/deep/status')).json() as Record<string, unknown>;
    let st = await status();
    const deadline = Date.now() + 20_000;
    while (st.status !== 'running' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      st = await status();
    }
    assert.equal(st.status, 'running', JSON.stringify(st));
    // the subscription may be established a little after the status says running: publish until a message counts
    const decodeErrors = (x: Record<string, unknown>) =>
      Object.entries(x)
        .filter(([k]) => k.endsWith('_decoder_0_exceptions_total'))
        .reduce((n, [, v]) => n + Number(v), 0);
    const records = (x: Record<string, unknown>) => Number(x.source_deep_0_records_in_total ?? 0);
    while (decodeErrors(st) === 0 && Date.now() < deadline) {
      await pub.publishAsync(topic, deep(MAX_JSON_DEPTH + 10), { qos: 1 });
      await new Promise((r) => setTimeout(r, 200));
      st = await status();
    }
    assert.ok(decodeErrors(st) >= 1, JSON.stringify(st));
    const lastException = Object.entries(st).find(([k]) => k.endsWith('_decoder_0_last_exception'))?.[1];
    assert.match(String(lastException), /exceeded max depth/);
    const before = Number(st.sink_memory_0_0_records_in_total ?? 0);
    await pub.publishAsync(topic, '{"a":1}', { qos: 1 });
    while (Number(st.sink_memory_0_0_records_in_total ?? 0) <= before && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      st = await status();
    }
    assert.equal(st.status, 'running');
    assert.ok(Number(st.sink_memory_0_0_records_in_total) > before, JSON.stringify(st));
    assert.ok(records(st) >= 1);
  } finally {
    await pub.endAsync(true);
    await s.dispose();
  }
});

test('a 10 MB statement is parsed and stored, and described back unchanged', async () => {
  const s = await startTestServer();
  try {
    const source = 'x'.repeat(10 * 1024 * 1024);
    const r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM huge (a BIGINT) WITH (DATASOURCE="${source}", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text.slice(0, 200));
    const d = (await s.req('GET', '/streams/huge')).json() as { Options: Record<string, string> };
    assert.equal(d.Options.DATASOURCE.length, source.length);
  } finally {
    await s.dispose();
  }
});
