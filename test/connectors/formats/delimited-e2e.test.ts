/**
 * Typed decoding of text cells (docs/runtime.md §2.2) end to end: a `delimited` stream over Mosquitto and a `file`
 * stream of CSV with a header, both declaring `seq BIGINT`, deliver `seq` as an integer, `temp` as a float and `ok` as
 * a boolean, whatever the rule selects; a cell that is not of its declared type makes the event an error row.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectAsync } from 'mqtt';
import { startTestServer } from '../../helpers/server.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

test('typed delimited and CSV streams deliver declared fields in their types', async () => {
  const s = await startTestServer();
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_csv'), reconnectPeriod: 0 });
  const got = new Map<string, string[]>();
  client.on('message', (topic, p) => got.set(topic, [...(got.get(topic) ?? []), p.toString()]));
  const until = async (cond: () => boolean, what: string, poke?: () => Promise<unknown>) => {
    for (const end = Date.now() + 20_000; !cond();) {
      if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
      await poke?.();
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  try {
    const schema = '(seq BIGINT, name STRING, temp FLOAT, ok BOOLEAN)';
    // over MQTT: cells in declared order
    const st = uid('dl');
    const inTopic = `eddy/csv/${st}`;
    let r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM ${st} ${schema} WITH (DATASOURCE="${inTopic}", FORMAT="delimited")`,
    });
    assert.equal(r.status, 201, r.text);
    for (const [suffix, sql] of [
      ['star', `SELECT * FROM ${st}`],
      ['some', `SELECT seq, temp FROM ${st}`],
    ]) {
      const out = `${inTopic}/${suffix}`;
      await client.subscribeAsync(out, { qos: 1 });
      r = await s.req('POST', '/rules', {
        id: `${st}_${suffix}`,
        sql,
        actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: out, sendSingle: true } }],
      });
      assert.equal(r.status, 201, r.text);
    }
    const star = `${inTopic}/star`;
    const some = `${inTopic}/some`;
    await until(
      () => got.has(star) && got.has(some),
      'the delimited rules',
      () => client.publishAsync(inTopic, '7,seven,21.5,true', { qos: 1 }),
    );
    assert.deepEqual(JSON.parse(got.get(star)![0]), { seq: 7, name: 'seven', temp: 21.5, ok: true });
    assert.deepEqual(JSON.parse(got.get(some)![0]), { seq: 7, temp: 21.5 });
    // 2^53 + 1 stays exact: an integer, not a float
    await client.publishAsync(inTopic, '9007199254740993,big,1,false', { qos: 1 });
    await until(() => got.get(star)!.some((m) => m.includes('big')), 'the large integer');
    assert.match(
      got.get(star)!.find((m) => m.includes('big'))!,
      /"seq":9007199254740993,/,
    );
    await client.publishAsync(inTopic, 'x1,bad,1,true', { qos: 1 });
    await until(() => got.get(star)!.some((m) => m.includes('error')), 'the error row');
    assert.deepEqual(JSON.parse(got.get(star)!.find((m) => m.includes('error'))!), {
      error: 'seq has wrong type:string, expect:bigint',
    });

    // a CSV file with a header, read once
    const dir = join(s.app.home.data, 'csv');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'rows.csv'), 'seq,name,temp,ok\n1,a,2.5,true\n2,b,3,false\n');
    r = await s.req('PUT', '/metadata/sources/file/confKeys/csvrows', { fileType: 'csv', hasHeader: true, path: dir });
    assert.ok(r.status < 300, r.text);
    const fs = uid('fcsv');
    r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM ${fs} ${schema} WITH (TYPE="file", CONF_KEY="csvrows", DATASOURCE="rows.csv")`,
    });
    assert.equal(r.status, 201, r.text);
    const fout = `eddy/csv/${fs}`;
    await client.subscribeAsync(fout, { qos: 1 });
    r = await s.req('POST', '/rules', {
      id: fs,
      sql: `SELECT * FROM ${fs}`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: fout, sendSingle: true, qos: 1 } }],
    });
    assert.equal(r.status, 201, r.text);
    await until(() => (got.get(fout)?.length ?? 0) === 2, 'the CSV rows');
    assert.deepEqual(
      got.get(fout)!.map((m) => JSON.parse(m) as unknown),
      [
        { seq: 1, name: 'a', temp: 2.5, ok: true },
        { seq: 2, name: 'b', temp: 3, ok: false },
      ],
    );
  } finally {
    await client.endAsync();
    await s.dispose();
  }
});
