/**
 * The sql connectors end to end over the REST API, on the real databases: a PostgreSQL table polled as a stream,
 * joined with a MariaDB lookup table (cached by the rule), written by the sql sink into another PostgreSQL table;
 * the connection checks of docs/rest-api.md §6.1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../helpers/server.js';
import { admin, cuttableProxy, MY_URL, PG_URL, uniqueTable } from './sql-helpers.js';

async function until<T>(probe: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 10000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('sql stream (postgres) → lookup join on a sql table (mariadb) → sql sink (postgres), over the REST API', async () => {
  const s = await startTestServer();
  const pgdb = await admin('postgres');
  const mydb = await admin('mysql');
  const readings = uniqueTable('readings');
  const out = uniqueTable('out');
  const rooms = uniqueTable('rooms');
  const id = Math.random().toString(36).slice(2, 8);
  const [stream, table, rule] = [`sqlstream_${id}`, `sqlrooms_${id}`, `sqlrule_${id}`];
  await pgdb.run(`CREATE TABLE ${readings} (id INT PRIMARY KEY, room VARCHAR(10), temp DOUBLE PRECISION)`);
  await pgdb.run(`CREATE TABLE ${out} (id BIGINT, room VARCHAR(10), t2 DOUBLE PRECISION, label VARCHAR(40))`);
  await mydb.run(`CREATE TABLE ${rooms} (id VARCHAR(10), label VARCHAR(40))`);
  await mydb.run(`INSERT INTO ${rooms} VALUES ('a', 'kitchen'), ('b', 'hall')`);
  try {
    let r = await s.req('PUT', `/metadata/sources/sql/confKeys/pg_${id}`, {
      url: PG_URL,
      interval: 100,
      internalSqlQueryCfg: { table: readings, indexField: 'id', indexValue: 0, limit: 100 },
    });
    assert.equal(r.status, 200, r.text);
    r = await s.req('PUT', `/metadata/sources/sql/confKeys/my_${id}`, {
      url: MY_URL,
      lookup: { cache: true, cacheTtl: 600 },
    });
    assert.equal(r.status, 200, r.text);
    r = await s.req('POST', '/streams', { sql: `CREATE STREAM ${stream} () WITH (TYPE="sql", CONF_KEY="pg_${id}")` });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/tables', {
      sql: `CREATE TABLE ${table} () WITH (TYPE="sql", DATASOURCE="${rooms}", KIND="lookup", CONF_KEY="my_${id}")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: rule,
      sql: `SELECT ${stream}.id, ${stream}.room, temp * 2 AS t2, ${table}.label FROM ${stream} INNER JOIN ${table} ON ${stream}.room = ${table}.id`,
      actions: [{ sql: { url: PG_URL, table: out, fields: ['id', 'room', 't2', 'label'] } }],
    });
    assert.equal(r.status, 201, r.text);
    await pgdb.run(`INSERT INTO ${readings} VALUES (1, 'a', 20.5), (2, 'z', 1), (3, 'b', 7)`);
    const rows = () => pgdb.run(`SELECT id, room, t2, label FROM ${out} ORDER BY id`);
    assert.deepEqual(await until(rows, (v) => v.length >= 2, 'joined rows'), [
      { id: '1', room: 'a', t2: 41, label: 'kitchen' },
      { id: '3', room: 'b', t2: 14, label: 'hall' },
    ]);
    // the lookup of room a is cached by the rule (cacheTtl 600 s): a changed label is not read again
    await mydb.run(`UPDATE ${rooms} SET label = 'KITCHEN' WHERE id = 'a'`);
    await mydb.run(`INSERT INTO ${rooms} VALUES ('c', 'attic')`);
    await pgdb.run(`INSERT INTO ${readings} VALUES (4, 'a', 1), (5, 'c', 2)`);
    const all = await until(rows, (v) => v.length >= 4, 'later rows');
    assert.deepEqual(all.slice(2), [
      { id: '4', room: 'a', t2: 2, label: 'kitchen' },
      { id: '5', room: 'c', t2: 4, label: 'attic' },
    ]);
    // a rule on a worker thread reports its counters every 100 ms (docs/runtime.md §1.10)
    const st = await until(
      async () => (await s.req('GET', `/rules/${rule}/status`)).json() as Record<string, unknown>,
      (v) => v.sink_sql_0_0_records_out_total === 4,
      'the counters of the five readings',
    );
    assert.equal(st.status, 'running');
    assert.equal(st[`source_${stream}_0_records_in_total`], 5);
    assert.equal(st.sink_sql_0_0_records_in_total, 4);
    assert.equal(st.sink_sql_0_0_records_out_total, 4);
    // a lookup table whose database refuses the credentials is refused with the reason
    r = await s.req('PUT', `/metadata/sources/sql/confKeys/bad_${id}`, {
      url: 'mysql://root:wrong@127.0.0.1:3306/test',
    });
    assert.equal(r.status, 200, r.text);
    r = await s.req('POST', '/tables', {
      sql: `CREATE TABLE bad_${id} () WITH (TYPE="sql", DATASOURCE="${rooms}", KIND="lookup", CONF_KEY="bad_${id}")`,
    });
    assert.equal(r.status, 400);
    assert.match(r.text, /Access denied for user 'root'/);
    assert.doesNotMatch(r.text, /wrong/);
  } finally {
    await s.req('DELETE', `/rules/${rule}`);
    await s.dispose();
    await pgdb.run(`DROP TABLE IF EXISTS ${readings}`);
    await pgdb.run(`DROP TABLE IF EXISTS ${out}`);
    await mydb.run(`DROP TABLE IF EXISTS ${rooms}`);
    await pgdb.close();
    await mydb.close();
  }
});

test('sql connection checks over the REST API: {url} for sources and lookups, {url, table, fields} for sinks', async () => {
  const s = await startTestServer();
  try {
    for (const url of [PG_URL, MY_URL]) {
      let r = await s.req('POST', '/metadata/sources/connection/sql', { url });
      assert.deepEqual([r.status, r.text], [200, '']);
      r = await s.req('POST', '/metadata/lookups/connection/sql', { url, DATASOURCE: 'anything' });
      assert.deepEqual([r.status, r.text], [200, '']);
      r = await s.req('POST', '/metadata/sinks/connection/sql', { url, table: 'readings', fields: ['id', 't'] });
      assert.deepEqual([r.status, r.text], [200, '']);
    }
    let r = await s.req('POST', '/metadata/sinks/connection/sql', {
      url: 'mysql://root:wrong@127.0.0.1:3306/test',
      table: 'readings',
    });
    assert.equal(r.status, 400);
    const body = r.json() as { error: number; message: string };
    assert.equal(body.error, 1000);
    assert.match(
      body.message,
      /^cannot connect to mysql:\/\/root:\*\*\*\*\*\*@127\.0\.0\.1:3306\/test: Access denied for user 'root'@'127\.0\.0\.1'/,
    );
    // a url shown masked by the config-key API is checked with the stored password (resourceId)
    r = await s.req('PUT', '/metadata/sources/sql/confKeys/masked', { url: 'mysql://root:@127.0.0.1:3306/test' });
    assert.equal(r.status, 200, r.text);
    const shown = ((await s.req('GET', '/metadata/sources/yaml/sql')).json() as Record<string, { url: string }>).masked
      .url;
    assert.equal(shown, 'mysql://root:******@127.0.0.1:3306/test');
    // the shipped config keys of etc/sources/sql.yaml are listed next to the user's, passwords masked
    const keys = (await s.req('GET', '/metadata/sources/yaml/sql')).json() as Record<string, { url: string }>;
    assert.deepEqual(Object.keys(keys), [
      'default',
      'masked',
      'mysql_config',
      'oracle_config',
      'postgresql_config',
      'sqlite_config',
      'sqlserver_config',
    ]);
    assert.equal(keys.postgresql_config.url, 'postgres://username:******@127.0.0.1:5432/testdb?sslmode=disable');
    r = await s.req('POST', '/metadata/sources/connection/sql', { url: shown, resourceId: 'masked' });
    assert.deepEqual([r.status, r.text], [200, '']);
    r = await s.req('POST', '/metadata/sources/connection/sql', { url: shown });
    assert.equal(r.status, 400);
    r = await s.req('POST', '/metadata/sources/connection/sql', { url: 'sqlserver://sa:pw@127.0.0.1:1433/db' });
    assert.equal(r.status, 400);
    assert.match((r.json() as { message: string }).message, /unsupported driver sqlserver/);
    r = await s.req('POST', '/metadata/sinks/connection/sql', { url: PG_URL });
    assert.equal(r.status, 400);
    assert.match((r.json() as { message: string }).message, /table is required/);
  } finally {
    await s.dispose();
  }
});

test('a sql rule survives outages of its databases: the source polls again, the sink cache resends', async () => {
  const s = await startTestServer();
  const srcProxy = await cuttableProxy(3306);
  const sinkProxy = await cuttableProxy(5432);
  const mydb = await admin('mysql');
  const pgdb = await admin('postgres');
  const input = uniqueTable('in');
  const output = uniqueTable('out');
  const id = Math.random().toString(36).slice(2, 8);
  const [stream, rule] = [`sqlout_${id}`, `sqloutrule_${id}`];
  await mydb.run(`CREATE TABLE ${input} (id INT, v VARCHAR(10))`);
  await pgdb.run(`CREATE TABLE ${output} (id INT, v VARCHAR(10))`);
  try {
    let r = await s.req('PUT', `/metadata/sources/sql/confKeys/in_${id}`, {
      url: `mysql://root@127.0.0.1:${srcProxy.port}/test`,
      interval: 100,
      internalSqlQueryCfg: { table: input, indexField: 'id', indexValue: 0 },
    });
    assert.equal(r.status, 200, r.text);
    r = await s.req('POST', '/streams', { sql: `CREATE STREAM ${stream} () WITH (TYPE="sql", CONF_KEY="in_${id}")` });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: rule,
      sql: `SELECT id, v FROM ${stream}`,
      actions: [
        { sql: { url: `postgres://postgres@127.0.0.1:${sinkProxy.port}/test`, table: output, enableCache: true } },
      ],
    });
    assert.equal(r.status, 201, r.text);
    const rows = () => pgdb.run(`SELECT id, v FROM ${output} ORDER BY id`);
    const status = async () => (await s.req('GET', `/rules/${rule}/status`)).json() as Record<string, unknown>;
    await mydb.run(`INSERT INTO ${input} VALUES (1, 'before')`);
    await until(rows, (v) => v.length === 1, 'first row');
    srcProxy.cut();
    sinkProxy.cut();
    await mydb.run(`INSERT INTO ${input} VALUES (2, 'during')`);
    const st = await until(status, (v) => Number(v[`source_${stream}_0_exceptions_total`]) >= 1, 'source failure');
    assert.equal(st.status, 'running');
    assert.match(String(st[`source_${stream}_0_last_exception`]), /^sql source query failed: /);
    await srcProxy.restore();
    await until(status, (v) => Number(v.sink_sql_0_0_exceptions_total) >= 1, 'sink failure while its database is down');
    await sinkProxy.restore();
    assert.deepEqual(await until(rows, (v) => v.length === 2, 'row resent after the outage', 20000), [
      { id: 1, v: 'before' },
      { id: 2, v: 'during' },
    ]);
    assert.equal((await status()).status, 'running');
  } finally {
    await s.req('DELETE', `/rules/${rule}`);
    await s.dispose();
    await srcProxy.close();
    await sinkProxy.close();
    await mydb.run(`DROP TABLE IF EXISTS ${input}`);
    await pgdb.run(`DROP TABLE IF EXISTS ${output}`);
    await mydb.close();
    await pgdb.close();
  }
});
