import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../helpers/server.js';
import { influx } from './influxd.js';
import { freePort } from '../e2-helpers.js';

const uid = (): string => Math.random().toString(36).slice(2, 8);

test('influx sink writes rows as points (tags from templates, chosen fields, precision, tsFieldName) to a real InfluxDB 1.x', async () => {
  const db = await influx();
  const s = await startTestServer();
  const id = uid();
  const dbName = `eddy_${id}`;
  try {
    await db.query(`CREATE DATABASE ${dbName}`);
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM inf${id} (dev string, temp float, hum bigint, ts bigint, note string) WITH (TYPE="memory", DATASOURCE="inf/${id}")`,
        })
      ).status,
      201,
    );
    // a config key holds the connection; the action adds the rest
    assert.equal(
      (await s.req('PUT', `/metadata/sinks/influx/confKeys/k${id}`, { addr: db.url, database: dbName })).status,
      200,
    );
    const rule = (rid: string, props: Record<string, unknown>) =>
      s.req('POST', '/rules', {
        id: rid + id,
        sql: `SELECT * FROM inf${id}`,
        actions: [{ influx: { resourceId: `k${id}`, ...props } }],
      });
    assert.equal(
      (
        await rule('a', {
          measurement: 'climate',
          precision: 's',
          tsFieldName: 'ts',
          tags: { device: '{{.dev}}', site: 'north' },
          fields: ['temp', 'hum', 'note'],
        })
      ).status,
      201,
    );
    // batching: three rows gathered into one write
    assert.equal((await rule('b', { measurement: 'batched', batchSize: 3, tags: { device: '{{.dev}}' } })).status, 201);
    const running = async (rid: string) => {
      let text = '';
      const until = Date.now() + 15_000;
      while (!/"status":\s*"running"/.test(text) && Date.now() < until) {
        text = (await s.req('GET', `/rules/${rid}/status`)).text;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const publish = (row: Record<string, unknown>) =>
      s.app.connectors.memory.publish({ topic: `inf/${id}`, row: row as never });
    const base = 1_700_000_000;
    await running(`a${id}`);
    await running(`b${id}`);
    publish({ dev: 'd1', temp: 21.5, hum: 40n, ts: BigInt(base), note: 'a "quoted", text' });
    publish({ dev: 'd2', temp: 22, hum: 41n, ts: BigInt(base + 1), note: 'x=y' });
    publish({ dev: 'd 3', temp: 23.25, hum: 42n, ts: BigInt(base + 2), note: 'z' });

    let climate: unknown[][] = [];
    let batched: unknown[][] = [];
    const end = Date.now() + 20_000;
    while ((climate.length < 3 || batched.length < 3) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 200));
      climate =
        (await db.query('SELECT device, site, temp, hum, note FROM climate', dbName)).results[0].series?.[0]?.values ??
        [];
      batched = (await db.query('SELECT * FROM batched', dbName)).results[0].series?.[0]?.values ?? [];
    }
    // precision s with tsFieldName: the row's seconds become the point time (read back in ms)
    assert.deepEqual(climate, [
      [base * 1000, 'd1', 'north', 21.5, 40, 'a "quoted", text'],
      [(base + 1) * 1000, 'd2', 'north', 22, 41, 'x=y'],
      [(base + 2) * 1000, 'd 3', 'north', 23.25, 42, 'z'],
    ]);
    // hum is an integer field, temp a float field
    const types = (await db.query('SHOW FIELD KEYS FROM climate', dbName)).results[0].series![0].values;
    assert.deepEqual(Object.fromEntries(types), { hum: 'integer', note: 'string', temp: 'float' });
    // without fields every column is a field (dev also, as it is not consumed by the tag) and the time is now
    assert.equal(batched.length, 3);
    const cols = (await db.query('SELECT * FROM batched', dbName)).results[0].series![0].columns;
    assert.deepEqual([...cols].sort(), ['dev', 'device', 'hum', 'note', 'temp', 'time', 'ts']);
    assert.ok(Math.abs((batched[0][0] as number) - Date.now()) < 120_000);

    // connection check: /ping of a live server passes, a closed port fails
    assert.equal(
      (await s.req('POST', '/metadata/sinks/connection/influx', { addr: db.url, database: 'x', measurement: 'm' }))
        .status,
      200,
    );
    const down = await s.req('POST', '/metadata/sinks/connection/influx', {
      addr: `http://127.0.0.1:${await freePort()}`,
      database: 'x',
      measurement: 'm',
    });
    assert.equal(down.status, 400);
    assert.match(down.text, /error pinging InfluxDB/);

    // a missing measurement rejects the rule
    const bad = await s.req('POST', '/rules', {
      id: `bad${id}`,
      sql: `SELECT * FROM inf${id}`,
      actions: [{ influx: { addr: db.url, database: dbName } }],
    });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /measurement is required/);

    // a write InfluxDB refuses (unknown database) is counted as an exception with its reason
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `nodb${id}`,
          sql: `SELECT * FROM inf${id}`,
          actions: [{ influx: { addr: db.url, database: `missing_${id}`, measurement: 'm' } }],
        })
      ).status,
      201,
    );
    await running(`nodb${id}`);
    publish({ dev: 'd9', temp: 1.5, hum: 1n, ts: 1n, note: '' });
    let status = '';
    const end2 = Date.now() + 15_000;
    while (!/database not found/.test(status) && Date.now() < end2) {
      status = (await s.req('GET', `/rules/nodb${id}/status`)).text;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(status, /database not found/);
  } finally {
    await s.dispose();
    await db.query(`DROP DATABASE ${dbName}`).catch(() => undefined);
    await db.close();
  }
});
