/**
 * The binary format end to end through Mosquitto: `SELECT *` of a stream with one BYTEA field puts the payload in
 * that field; a stream without fields puts it in `self`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectAsync } from 'mqtt';
import { startTestServer } from '../../helpers/server.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

test('binary stream SELECT *: the payload lands in the single declared field, or in self without one', async () => {
  const s = await startTestServer();
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_bin'), reconnectPeriod: 0 });
  const got = new Map<string, Array<Record<string, unknown>>>();
  client.on('message', (topic, p) =>
    got.set(topic, [...(got.get(topic) ?? []), JSON.parse(p.toString()) as Record<string, unknown>]),
  );
  try {
    const payload = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]);
    const cases = [
      { fields: '(image BYTEA)', key: 'image' },
      { fields: '()', key: 'self' },
    ];
    for (const c of cases) {
      const st = uid('bin');
      const inTopic = `eddy/bin/${st}`;
      const outTopic = `${inTopic}/out`;
      await client.subscribeAsync(outTopic, { qos: 1 });
      const r1 = await s.req('POST', '/streams', {
        sql: `CREATE STREAM ${st} ${c.fields} WITH (DATASOURCE="${inTopic}", FORMAT="BINARY")`,
      });
      assert.equal(r1.status, 201, r1.text);
      const r2 = await s.req('POST', '/rules', {
        id: st,
        sql: `SELECT * FROM ${st}`,
        actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: outTopic, sendSingle: true } }],
      });
      assert.equal(r2.status, 201, r2.text);
      for (const end = Date.now() + 20_000; !got.has(outTopic);) {
        if (Date.now() > end) assert.fail(`no result for ${c.fields}`);
        await client.publishAsync(inTopic, payload, { qos: 1 });
        await new Promise((r) => setTimeout(r, 100));
      }
      // bytes are encoded as base64 in JSON
      assert.deepEqual(got.get(outTopic)![0], { [c.key]: payload.toString('base64') }, c.fields);
    }
  } finally {
    await client.endAsync();
    await s.dispose();
  }
});
