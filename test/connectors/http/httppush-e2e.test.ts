/**
 * End to end over the REST API: an httppush stream feeds a rule whose rest sink posts templated rows; a redis
 * lookup table enriches them; connection checks answer over HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startTestServer } from '../../helpers/server.js';
import { recordingServer, waitFor } from '../e2-helpers.js';

test('httppush stream → SQL rule with a redis lookup join → rest sink, over the REST API', async () => {
  const s = await startTestServer();
  const srv = await recordingServer();
  const redis = new Redis({ host: '127.0.0.1', port: 6379, db: 5, lazyConnect: true });
  await redis.connect();
  const key = 'eddy-e2e-' + Math.random().toString(36).slice(2);
  await redis.set(key, JSON.stringify({ id: key, label: 'kitchen' }));
  try {
    let r = await s.req('POST', '/streams', {
      sql: 'CREATE STREAM e2epush () WITH (TYPE="httppush", DATASOURCE="/e2e/in")',
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/tables', {
      sql: 'CREATE TABLE e2erooms () WITH (TYPE="redis", DATASOURCE="5", KIND="lookup", KEY="id")',
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'e2e_push_rest',
      sql: 'SELECT e2epush.room, temp * 2 AS t2, e2erooms.label FROM e2epush INNER JOIN e2erooms ON e2epush.room = e2erooms.id WHERE temp > 10',
      actions: [
        {
          rest: {
            url: `${srv.url}/out/{{.label}}`,
            method: 'post',
            sendSingle: true,
            dataTemplate: '{"label":"{{.label}}","t2":{{.t2}}}',
          },
        },
      ],
    });
    assert.equal(r.status, 201, r.text);
    await waitFor(() => s.app.connectors.dataServer.port !== undefined, 'data server');
    const url = `http://127.0.0.1:${s.app.connectors.dataServer.port}/e2e/in`;
    for (const body of [
      `{"room":"${key}","temp":21}`,
      `{"room":"${key}","temp":5}`,
      `{"room":"${key}","temp":1e6}`,
      `{"room":"other","temp":50}`,
    ]) {
      const res = await fetch(url, { method: 'POST', body });
      assert.equal(res.status, 200);
    }
    await waitFor(() => srv.received.length >= 2, 'two posts');
    assert.deepEqual(
      srv.received.map((x) => [x.url, x.body]),
      [
        ['/out/kitchen', '{"label":"kitchen","t2":42}'],
        // a float of 2 million prints in Go's %v form inside a template
        ['/out/kitchen', '{"label":"kitchen","t2":2e+06}'],
      ],
    );
    // malformed bodies are answered 400 and counted as source exceptions; the rule keeps running
    for (const body of ['[{"room":"x"}]', '{"room":'])
      assert.equal((await fetch(url, { method: 'POST', body })).status, 400);
    // a rule on a worker thread reports its counters every 100 ms (docs/runtime.md §1.10)
    let st: Record<string, unknown> = {};
    const counted = Date.now() + 10_000;
    do {
      if (Date.now() > counted) assert.fail(`the two decode errors counted: ${JSON.stringify(st)}`);
      await new Promise((res) => setTimeout(res, 50));
      st = (await s.req('GET', '/rules/e2e_push_rest/status')).json() as Record<string, unknown>;
    } while (st.source_e2epush_0_exceptions_total !== 2);
    assert.equal(st.status, 'running');
    assert.equal(st.source_e2epush_0_last_exception, 'Fail to decode data: unexpected end of JSON input');
    // bad credentials: the rule stops with Redis' reason; a lookup table is refused with it
    r = await s.req('POST', '/rules', {
      id: 'e2e_bad_redis',
      sql: 'SELECT * FROM e2epush',
      actions: [{ redis: { addr: '127.0.0.1:6379', key: 'k', username: 'nobody', password: 'wrong' } }],
    });
    assert.equal(r.status, 201, r.text);
    let bad: Record<string, unknown> = {};
    const end = Date.now() + 15_000;
    while (Date.now() < end) {
      bad = (await s.req('GET', '/rules/e2e_bad_redis/status')).json() as Record<string, unknown>;
      if (bad.status === 'stopped') break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(bad.status, 'stopped');
    assert.match(String(bad.message), /WRONGPASS/);
    r = await s.req('PUT', '/metadata/sources/redis/confKeys/e2ebadauth', {
      addr: '127.0.0.1:6379',
      dataType: 'string',
      username: 'x',
      password: 'y',
    });
    assert.equal(r.status, 200, r.text);
    r = await s.req('POST', '/tables', {
      sql: 'CREATE TABLE e2ebad () WITH (TYPE="redis", DATASOURCE="0", KIND="lookup", KEY="id", CONF_KEY="e2ebadauth")',
    });
    assert.equal(r.status, 400);
    assert.match(r.text, /Create table fails: redis 127\.0\.0\.1:6379: WRONGPASS/);
    r = await s.req('POST', '/metadata/sinks/connection/redis', { addr: '127.0.0.1:6379' });
    assert.equal(r.status, 200);
    r = await s.req('POST', '/metadata/sinks/connection/rest', { url: srv.url });
    assert.equal(r.status, 400);
    assert.match(r.text, /sink rest doesn't support ping connection/);
  } finally {
    await s.req('DELETE', '/rules/e2e_push_rest');
    await s.req('DELETE', '/rules/e2e_bad_redis');
    await redis.del(key);
    redis.disconnect();
    await srv.close();
    await s.dispose();
  }
});

test('a file scan table joined with an httppush stream, over the REST API', async () => {
  const s = await startTestServer();
  const srv = await recordingServer();
  try {
    const dir = join(s.homeDir, 'data', 'e2e-lookup');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'rooms.json'), '[{"id":"a","label":"kitchen"},{"id":"b","label":"hall"}]');
    let r = await s.req('POST', '/streams', {
      sql: 'CREATE STREAM e2esp () WITH (TYPE="httppush", DATASOURCE="/e2e/scan")',
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('PUT', '/metadata/sources/file/confKeys/e2efile', { path: dir, fileType: 'json' });
    assert.equal(r.status, 200, r.text);
    // TYPE defaults to file for a scan table
    r = await s.req('POST', '/tables', {
      sql: 'CREATE TABLE e2escan () WITH (DATASOURCE="rooms.json", CONF_KEY="e2efile")',
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'e2e_scan',
      sql: 'SELECT e2esp.id, e2escan.label FROM e2esp INNER JOIN e2escan ON e2esp.id = e2escan.id',
      actions: [{ rest: { url: srv.url, method: 'post', sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    await waitFor(() => s.app.connectors.dataServer.port !== undefined, 'data server');
    // the table is read when the rule starts: the stream events are sent once its source has emitted the rows
    const tableRead = async () =>
      ((await s.req('GET', '/rules/e2e_scan/status')).json() as Record<string, unknown>)
        .source_e2escan_0_records_out_total === 1;
    for (const end = Date.now() + 10_000; !(await tableRead()) && Date.now() < end;)
      await new Promise((res) => setTimeout(res, 50));
    assert.ok(await tableRead(), 'the scan table was read');
    const url = `http://127.0.0.1:${s.app.connectors.dataServer.port}/e2e/scan`;
    for (const body of ['{"id":"a"}', '{"id":"b"}', '{"id":"z"}']) await fetch(url, { method: 'POST', body });
    await waitFor(() => srv.received.length >= 2, 'two joined rows');
    assert.deepEqual(
      srv.received.map((x) => x.body),
      ['{"id":"a","label":"kitchen"}', '{"id":"b","label":"hall"}'],
    );
  } finally {
    await s.req('DELETE', '/rules/e2e_scan');
    await srv.close();
    await s.dispose();
  }
});
