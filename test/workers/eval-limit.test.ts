/**
 * The rule option `evalLimit` (docs/runtime.md §1.2, §1.10), against the real broker on loopback: a rule whose own
 * limit is shorter than the server's is stopped with an error naming the rule, the node and the expression it
 * evaluates, while a neighbour on the same worker under the server's limit runs on and delivers; bad values are
 * refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { subscriber, uniqueTopic } from '../connectors/helpers.js';
import { feed, publishUntilStopped, status, type J } from './helpers.js';

test("a rule's own evalLimit stops it, naming the rule, the node and its expression; a neighbour under the server's limit delivers", async () => {
  // the server's limit stays at its default (5000 ms)
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('evl');
  const sub = await subscriber(`${topic}/out`);
  try {
    const pool = s.app.workers!;
    await pool.ready();
    const heavy = `heavy_${topic.replace(/\W/g, '_')}`;
    let r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM st_${heavy} (s STRING) WITH (DATASOURCE="${topic}/heavy", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    // each term checksums a 50-million-character string: seconds of synchronous work for one record in WHERE (every
    // term is true, so AND evaluates them all)
    const terms = Array.from({ length: 30 }, (_, i) => `crc32(lpad(s, ${50_000_000 + i})) != 'x'`);
    r = await s.req('POST', '/rules', {
      id: heavy,
      sql: `SELECT s FROM st_${heavy} WHERE ${terms.join(' AND ')}`,
      actions: [{ nop: {} }],
      options: { evalLimit: 1000 },
    });
    assert.equal(r.status, 201, r.text);

    // a neighbour on the same worker, with no option of its own
    let light = '';
    for (let i = 0; light === ''; i++)
      if (pool.place(`light${i}_${heavy}`) === pool.place(heavy)) light = `light${i}_${heavy}`;
    r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM st_${light} (n BIGINT) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: light,
      sql: `SELECT n FROM st_${light}`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out`, sendSingle: true } }],
    });
    assert.equal(r.status, 201, r.text);
    await feed(topic, () => sub.messages.length, 1);
    assert.equal(pool.replaced[pool.place(heavy)] ?? 0, 0);

    const st = await publishUntilStopped(s, heavy, topic);
    assert.equal(st.status, 'stopped');
    const message = String(st.message);
    // the WHERE text is quoted from its start as the SQL printer writes it (strings in double quotes), cut at 200
    // characters
    const quoted = terms.join(' AND ').replaceAll("'x'", '"x"').slice(0, 199);
    assert.ok(
      message.startsWith(
        `Stopped: rule ${heavy} was stopped: evaluating one record in op_3_filter (the WHERE condition \`${quoted}…\`)`,
      ),
      message,
    );
    // the rule's own limit, not the server's 5000 ms, and the message says which setting it was
    assert.ok(message.endsWith(' took more than 1000 ms (the rule option evalLimit).'), message);
    assert.equal(pool.replaced[pool.place(heavy)], 1);

    // the neighbour opened again on the new worker and delivers
    const before = sub.messages.length;
    await feed(topic, () => sub.messages.length, before + 2);
    assert.equal((await status(s, light)).status, 'running');
  } finally {
    await sub.close();
    await s.dispose();
  }
});

test('evalLimit: a negative value or a duration string is refused with 400; a valid one is kept in the options', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  try {
    let r = await s.req('POST', '/streams', { sql: 'CREATE STREAM evl_s (a BIGINT) WITH (DATASOURCE="evl/x")' });
    assert.equal(r.status, 201, r.text);
    const rule = (options: unknown) => ({ id: 'evl_r', sql: 'SELECT a FROM evl_s', actions: [{ nop: {} }], options });
    r = await s.req('POST', '/rules', rule({ evalLimit: -1 }));
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json(), {
      error: 1000,
      message:
        'invalid rule json: Rule evl_r has invalid options: evalLimit must be greater than or equal to 0, got -1.',
    });
    r = await s.req('POST', '/rules', rule({ evalLimit: '5s' }));
    assert.equal(r.status, 400, r.text);
    assert.equal((r.json() as J).error, 1000);
    assert.match(
      String((r.json() as J).message),
      /cannot unmarshal string into Go struct field RuleOption\.options\.evalLimit of type int/,
    );
    assert.equal((await s.req('GET', '/rules')).text, '[]');

    r = await s.req('POST', '/rules', rule({ evalLimit: 250 }));
    assert.equal(r.status, 201, r.text);
    const described = (await s.req('GET', '/rules/evl_r')).json() as { options: J };
    assert.equal(described.options.evalLimit, 250);
  } finally {
    await s.dispose();
  }
});
