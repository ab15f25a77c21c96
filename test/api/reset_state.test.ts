/**
 * `PUT /rules/{id}/reset_state` (docs/rest-api.md §16.6) on a real server: a PostgreSQL sql stream read by a running
 * rule is moved back to an earlier offset and its rows come again through Mosquitto; eKuiper's error answers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectAsync } from 'mqtt';
import { startTestServer } from '../helpers/server.js';
import { admin, PG_URL, uniqueTable } from '../connectors/sql/sql-helpers.js';

async function until<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  const end = Date.now() + 20_000;
  let last = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await fn();
  }
  return last;
}

test('reset_state type 1 rewinds a running sql source; errors for other types, stopped rules, unknown streams and rules', async () => {
  const s = await startTestServer();
  const db = await admin('postgres');
  const table = uniqueTable('reset');
  const id = Math.random().toString(36).slice(2, 8);
  const stream = `rs_${id}`;
  const topic = `eddy/reset/${id}`;
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: `eddy_reset_${id}`, reconnectPeriod: 0 });
  const ids: number[] = [];
  client.on('message', (_t, p) => ids.push(Number((JSON.parse(p.toString()) as { id: number }).id)));
  await client.subscribeAsync(topic, { qos: 1 });
  await db.run(`CREATE TABLE ${table} (id INT PRIMARY KEY, v VARCHAR(10))`);
  try {
    await db.run(`INSERT INTO ${table} VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')`);
    let r = await s.req('PUT', `/metadata/sources/sql/confKeys/k_${id}`, {
      url: PG_URL,
      interval: 100,
      internalSqlQueryCfg: { table, indexField: 'id', indexValue: 0, limit: 10 },
    });
    assert.equal(r.status, 200, r.text);
    r = await s.req('POST', '/streams', { sql: `CREATE STREAM ${stream} () WITH (TYPE="sql", CONF_KEY="k_${id}")` });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'rr',
      sql: `SELECT id FROM ${stream}`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic, qos: 1, sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    await until(
      () => ids.length,
      (n) => n >= 4,
      'the four rows',
    );
    assert.deepEqual(ids, [1, 2, 3, 4]);

    r = await s.req('PUT', '/rules/rr/reset_state', { type: 1, params: { streamName: stream, input: { id: 2 } } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, 'success');
    await until(
      () => ids.length,
      (n) => n >= 6,
      'rows after id 2 again',
    );
    assert.deepEqual(ids, [1, 2, 3, 4, 3, 4]);

    const expectError = async (path: string, body: unknown, status: number, error: number, message: string) => {
      const res = await s.req('PUT', path, body);
      assert.equal(res.status, status, res.text);
      assert.deepEqual(res.json(), { error, message });
    };
    await expectError('/rules/rr/reset_state', { type: 0 }, 400, 1000, 'unknown stateType:0');
    await expectError(
      '/rules/rr/reset_state',
      { type: 1, params: { streamName: 'nosuch', input: {} } },
      400,
      1000,
      'stream nosuch not found in topo',
    );
    await expectError(
      '/rules/nosuch/reset_state',
      { type: 1, params: { streamName: stream, input: {} } },
      404,
      1002,
      'Rule nosuch is not found in registry',
    );
    assert.equal((await s.req('PUT', '/rules/rr/reset_state', '{')).status, 400);
    assert.equal((await s.req('POST', '/rules/rr/stop')).status, 200);
    await expectError(
      '/rules/rr/reset_state',
      { type: 1, params: { streamName: stream, input: { id: 0 } } },
      400,
      1000,
      'rule rr should be running when modify state',
    );
  } finally {
    await client.endAsync();
    await s.dispose();
    await db.run(`DROP TABLE IF EXISTS ${table}`);
    await db.close();
  }
});

test('reset_state on a source that cannot rewind answers 400', async () => {
  const s = await startTestServer();
  try {
    const st = `mem_${Math.random().toString(36).slice(2, 8)}`;
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM ${st} () WITH (DATASOURCE="${st}", TYPE="memory")` }))
        .status,
      201,
    );
    assert.equal(
      (await s.req('POST', '/rules', { id: 'm', sql: `SELECT * FROM ${st}`, actions: [{ nop: {} }] })).status,
      201,
    );
    const r = await s.req('PUT', '/rules/m/reset_state', { type: 1, params: { streamName: st, input: { offset: 0 } } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json(), { error: 1000, message: `stream ${st} does not support resetting its offset` });
  } finally {
    await s.dispose();
  }
});
