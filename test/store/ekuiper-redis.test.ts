/**
 * Taking over an eKuiper Redis store (docs/runtime.md §10.1): streams, tables and rules written in eKuiper's layout
 * (`KV:STORE:<table>:<key>`, gob-encoded strings) in a Redis database of their own show up in Eddy started on it,
 * and what Eddy writes there is in the same layout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startTestServer } from '../helpers/server.js';

const DB = 14;

/** Go's gob stream of one string (written independently of Eddy's codec). */
function gob(s: string): Buffer {
  const uint = (x: number): number[] => {
    if (x < 128) return [x];
    const b: number[] = [];
    for (let v = x; v > 0; v = Math.floor(v / 256)) b.unshift(v % 256);
    return [256 - b.length, ...b];
  };
  const text = Buffer.from(s);
  const body = [0x0c, 0x00, ...uint(text.length), ...text];
  return Buffer.from([...uint(body.length), ...body]);
}

test('an eKuiper Redis store is read as is: streams, tables and rules listed, rules running; new entries in its layout', async () => {
  const raw = new Redis({ host: '127.0.0.1', port: 6379, db: DB });
  await raw.flushdb();
  const rule1 = '{"id":"rule1","sql":"SELECT * FROM demo","actions":[{"nop":{}}],"triggered":true}';
  const rule2 =
    '{\n  "id": "rule2",\n  "sql": "SELECT d.id FROM demo AS d INNER JOIN lut ON d.id = lut.id",\n  "actions": [{"log": {}}],\n  "triggered": false\n}';
  await raw.set(
    'KV:STORE:stream:demo',
    gob(
      JSON.stringify({
        streamType: 0,
        streamKind: '',
        statement: 'CREATE STREAM demo (id BIGINT) WITH (DATASOURCE="demo", TYPE="memory", FORMAT="JSON")',
      }),
    ),
  );
  await raw.set(
    'KV:STORE:stream:lut',
    gob(
      JSON.stringify({
        streamType: 1,
        streamKind: 'lookup',
        statement: 'CREATE TABLE lut (id BIGINT) WITH (DATASOURCE="lut", TYPE="memory", KIND="lookup", KEY="id")',
      }),
    ),
  );
  await raw.set('KV:STORE:rule:rule1', gob(rule1));
  await raw.set('KV:STORE:rule:rule2', gob(rule2));
  const s = await startTestServer({ env: { KUIPER__STORE__TYPE: 'redis', KUIPER__STORE__REDIS__DB: String(DB) } });
  try {
    assert.deepEqual((await s.req('GET', '/streams')).json(), ['demo']);
    assert.deepEqual((await s.req('GET', '/tables')).json(), ['lut']);
    assert.deepEqual((await s.req('GET', '/rules')).json(), [
      { id: 'rule1', name: 'rule1', status: 'Running', state: 'running' },
      { id: 'rule2', name: 'rule2', status: 'Stopped: canceled manually.', state: 'stopped' },
    ]);
    assert.equal((await s.req('GET', '/rules/rule2')).text, rule2);

    const r = await s.req('POST', '/streams', {
      sql: 'CREATE STREAM fresh () WITH (DATASOURCE="fresh", TYPE="memory")',
    });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(
      await raw.getBuffer('KV:STORE:stream:fresh'),
      gob(
        JSON.stringify({
          streamType: 0,
          streamKind: '',
          statement: 'CREATE STREAM fresh () WITH (DATASOURCE="fresh", TYPE="memory")',
        }),
      ),
    );
    assert.equal((await s.req('POST', '/rules/rule1/stop')).status, 200);
    const bytes = (await raw.getBuffer('KV:STORE:rule:rule1'))!;
    const text = bytes.subarray(bytes.indexOf('{')).toString();
    assert.deepEqual(bytes, gob(text), 'one gob string');
    assert.equal((JSON.parse(text) as { triggered: boolean }).triggered, false);
  } finally {
    await s.dispose();
    await raw.flushdb();
    await raw.quit();
  }
});
