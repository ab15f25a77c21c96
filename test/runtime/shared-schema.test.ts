/**
 * Rules sharing one SHARED MQTT stream decode each message once with the merge of their schemas: every rule sees the
 * fields it reads, whether it was created first or later, and after another rule left.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { publisher, subscriber, uniqueTopic } from '../connectors/helpers.js';

type Row = Record<string, unknown>;

async function rule(s: TestServer, id: string, sql: string, out: string): Promise<void> {
  const r = await s.req('POST', '/rules', {
    id,
    sql,
    actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: out, sendSingle: true } }],
  });
  assert.equal(r.status, 201, r.text);
}

test('rules on a shared stream each get the fields they read, as rules come and go', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '1' } });
  const topic = uniqueTopic('shschema');
  const outs = await Promise.all(['a', 'b', 'x'].map((k) => subscriber(`${topic}/out/${k}`)));
  const pub = await publisher();
  const rows = (i: number) => outs[i].messages.map((m) => JSON.parse(m.text) as Row);
  // publishes until rule outputs `i` has `n` rows (a message may arrive before every subscription is in place)
  const feed = async (i: number, n: number, seq: { v: number }) => {
    const end = Date.now() + 30_000;
    while (outs[i].messages.length < n) {
      if (Date.now() > end) assert.fail(`output ${i}: only ${outs[i].messages.length} of ${n}`);
      const v = seq.v++;
      await pub.publishAsync(
        `${topic}/in`,
        JSON.stringify({ a: v, b: v * 10, c: { x: v * 100, y: v * 1000 }, z: 'zz' }),
      );
      await new Promise((r) => setTimeout(r, 30));
    }
  };
  const seq = { v: 1 };
  try {
    const r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM sh (a BIGINT, b BIGINT, c STRUCT(x BIGINT, y BIGINT), z STRING) WITH (DATASOURCE="${topic}/in", FORMAT="json", SHARED="true")`,
    });
    assert.equal(r.status, 201, r.text);
    await rule(s, 'ra', 'SELECT a FROM sh', `${topic}/out/a`);
    await feed(0, 1, seq);
    // a rule reading other fields (one of them inside a struct) joins the running shared source
    await rule(s, 'rb', 'SELECT b, c.y AS y FROM sh', `${topic}/out/b`);
    await feed(1, 2, seq);
    const b = rows(1).at(-1)!;
    assert.deepEqual(Object.keys(b).sort(), ['b', 'y']);
    assert.equal(b.b, (b.y as number) / 100);
    // rule ra still gets its field
    const a = rows(0).at(-1)!;
    assert.deepEqual(Object.keys(a), ['a']);
    assert.equal(typeof a.a, 'number');
    // rb leaves, rx (another struct member) comes: what each reads is still decoded
    assert.equal((await s.req('DELETE', '/rules/rb')).status, 200);
    await rule(s, 'rx', 'SELECT c.x AS x, a FROM sh', `${topic}/out/x`);
    await feed(2, 2, seq);
    const x = rows(2).at(-1)!;
    assert.equal(x.x, (x.a as number) * 100);
    const before = outs[0].messages.length;
    await feed(0, before + 2, seq);
    assert.equal(typeof rows(0).at(-1)!.a, 'number');
  } finally {
    await pub.endAsync();
    for (const o of outs) await o.close();
    await s.dispose();
  }
});
