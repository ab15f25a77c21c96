import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import type { ValueObject } from '../../../src/values/value.js';
import { until } from '../helpers.js';

const uid = (): string => Math.random().toString(36).slice(2, 8);

/** Polls a rule's status until its text matches `re`; returns the text. */
async function statusMatching(s: TestServer, ruleId: string, re: RegExp): Promise<string> {
  let text = '';
  const end = Date.now() + 15_000;
  while (!re.test(text)) {
    if (Date.now() > end) throw new Error(`rule ${ruleId} status never matched ${re}: ${text}`);
    text = (await s.req('GET', `/rules/${ruleId}/status`)).text;
    await new Promise((r) => setTimeout(r, 50));
  }
  return text;
}

test('random source: pattern values plus random integers below seed, deduplicated, with its shipped keys', async () => {
  const s = await startTestServer();
  const id = uid();
  const rows: ValueObject[] = [];
  const dedup: ValueObject[] = [];
  const close1 = s.app.connectors.memory.subscribe(`rnd/${id}/a`, (m) => rows.push(m.row));
  const close2 = s.app.connectors.memory.subscribe(`rnd/${id}/b`, (m) => dedup.push(m.row));
  try {
    const shipped = (await s.req('GET', '/metadata/sources/yaml/random')).json() as Record<
      string,
      Record<string, unknown>
    >;
    assert.deepEqual(shipped.default, { interval: 1000, seed: 1, pattern: { count: 50 }, deduplicate: 0 });
    assert.deepEqual(Object.keys(shipped).sort(), ['dedup', 'default', 'ext']);
    const meta = (await s.req('GET', '/metadata/sources/random')).json() as {
      properties: { default: Array<{ name: string }> };
    };
    assert.deepEqual(
      meta.properties.default.map((p) => p.name),
      ['interval', 'seed', 'pattern', 'deduplicate'],
    );

    assert.equal(
      (
        await s.req('PUT', `/metadata/sources/random/confKeys/k${id}`, {
          interval: 10,
          seed: 5,
          pattern: { a: 10, b: 100 },
        })
      ).status,
      200,
    );
    // one field with two possible values, never repeated: at most two rows ever
    assert.equal(
      (
        await s.req('PUT', `/metadata/sources/random/confKeys/d${id}`, {
          interval: 10,
          seed: 2,
          pattern: { a: 7 },
          deduplicate: -1,
        })
      ).status,
      200,
    );
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM rnda${id} () WITH (TYPE="random", CONF_KEY="k${id}")` }))
        .status,
      201,
    );
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM rndd${id} () WITH (TYPE="random", CONF_KEY="d${id}")` }))
        .status,
      201,
    );
    const rule = (rid: string, sql: string, topic: string) =>
      s.req('POST', '/rules', { id: rid, sql, actions: [{ memory: { topic, sendSingle: true } }] });
    // integers stay integers: a / 2 divides as an integer
    assert.equal((await rule(`ra${id}`, `SELECT a, b, a / 2 AS h FROM rnda${id}`, `rnd/${id}/a`)).status, 201);
    assert.equal((await rule(`rd${id}`, `SELECT a FROM rndd${id}`, `rnd/${id}/b`)).status, 201);
    await until(() => rows.length >= 30 && dedup.length >= 1, 15_000, 'random rows');
    for (const r of rows) {
      assert.equal(typeof r.a, 'bigint');
      assert.ok((r.a as bigint) >= 10n && (r.a as bigint) < 15n, `a=${r.a}`);
      assert.ok((r.b as bigint) >= 100n && (r.b as bigint) < 105n, `b=${r.b}`);
      assert.equal(r.h, (r.a as bigint) / 2n);
    }
    assert.ok(new Set(rows.map((r) => r.a)).size > 1, 'values vary');
    const seenAfter = rows.length;
    await until(() => rows.length >= seenAfter + 20, 15_000, 'more rows');
    assert.ok(dedup.length <= 2, `deduplicated rows: ${JSON.stringify(dedup.map((r) => String(r.a)))}`);
    assert.equal(new Set(dedup.map((r) => r.a)).size, dedup.length);

    // bad properties fail the rule with eKuiper's message
    assert.equal(
      (await s.req('PUT', `/metadata/sources/random/confKeys/bad${id}`, { interval: 0, seed: 1, pattern: { a: 1 } }))
        .status,
      200,
    );
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM rndbad${id} () WITH (TYPE="random", CONF_KEY="bad${id}")`,
        })
      ).status,
      201,
    );
    await s.req('POST', '/rules', { id: `rb${id}`, sql: `SELECT * FROM rndbad${id}`, actions: [{ nop: {} }] });
    await statusMatching(s, `rb${id}`, /source `random` property `interval` must be a positive integer but got 0/);
  } finally {
    close1();
    close2();
    await s.dispose();
  }
});

test('nexmark source: bid, auction and person events with the Nexmark stream shapes; separate streams join on ids', async () => {
  const s = await startTestServer();
  const id = uid();
  const bids: ValueObject[] = [];
  const auctions: ValueObject[] = [];
  const joined: ValueObject[] = [];
  const closers = [
    s.app.connectors.memory.subscribe(`nx/${id}/bid`, (m) => bids.push(m.row)),
    s.app.connectors.memory.subscribe(`nx/${id}/auction`, (m) => auctions.push(m.row)),
    s.app.connectors.memory.subscribe(`nx/${id}/q8`, (m) => joined.push(m.row)),
  ];
  try {
    const key = (name: string, props: Record<string, unknown>) =>
      s.req('PUT', `/metadata/sources/nexmark/confKeys/${name}${id}`, { qps: 2000, ...props });
    assert.equal((await key('bid', { excludePerson: true, excludeAuction: true })).status, 200);
    assert.equal((await key('auction', { excludePerson: true, excludeBid: true })).status, 200);
    assert.equal((await key('person', { excludeAuction: true, excludeBid: true })).status, 200);
    const ddl = [
      `create stream bid${id} (auction bigint,bidder bigint,price bigint,channel string,url string,datetime bigint,extra string) WITH (TYPE="nexmark", CONF_KEY="bid${id}")`,
      `create stream person${id} (id bigint,name string,emailAddress string,creditCard string,city string,state string,datetime bigint,extra string) WITH (TYPE="nexmark", CONF_KEY="person${id}")`,
      `create stream auction${id} (id bigint,itemName string,description string,initialBid bigint,reserve bigint,datetime bigint,expires bigint,seller bigint,category bigint,extra string) WITH (TYPE="nexmark", CONF_KEY="auction${id}")`,
    ];
    for (const sql of ddl) assert.equal((await s.req('POST', '/streams', { sql })).status, 201);
    const rule = (rid: string, sql: string, topic: string) =>
      s.req('POST', '/rules', {
        id: rid + id,
        sql,
        actions: [{ memory: { topic: `nx/${id}/${topic}`, sendSingle: true } }],
      });
    assert.equal((await rule('q2', `SELECT * FROM bid${id}`, 'bid')).status, 201);
    assert.equal((await rule('qa', `SELECT * FROM auction${id}`, 'auction')).status, 201);
    assert.equal(
      (
        await rule(
          'q8',
          `select person${id}.id, person${id}.name, window_start() as ws from person${id} inner join auction${id} on person${id}.id = auction${id}.seller group by TUMBLINGWINDOW(ss, 1)`,
          'q8',
        )
      ).status,
      201,
    );
    await until(
      () => bids.length >= 200 && auctions.length >= 10 && joined.length >= 1,
      20_000,
      'nexmark events and a join result',
    );
    assert.deepEqual(Object.keys(bids[0]).sort(), [
      'auction',
      'bidder',
      'channel',
      'datetime',
      'extra',
      'price',
      'url',
    ]);
    assert.deepEqual(Object.keys(auctions[0]).sort(), [
      'category',
      'datetime',
      'description',
      'expires',
      'extra',
      'id',
      'initialBid',
      'itemName',
      'reserve',
      'seller',
    ]);
    for (const b of bids.slice(0, 200)) {
      assert.equal(typeof b.price, 'bigint');
      assert.ok((b.auction as bigint) >= 1000n);
    }
    for (const a of auctions) {
      assert.ok((a.expires as bigint) > (a.datetime as bigint));
      assert.ok((a.category as bigint) >= 0n && (a.category as bigint) < 5n);
    }
    // bids refer to auctions the auction stream has produced
    const auctionIds = new Set(auctions.map((a) => a.id));
    assert.ok(
      bids.slice(0, 200).some((b) => auctionIds.has(b.auction)),
      'bids refer to generated auctions',
    );
    assert.equal(typeof joined[0].name, 'string');
    // auctions are about 6% of the sequence, bids 92%: the bid stream is much busier
    assert.ok(bids.length > auctions.length * 5, `${bids.length} bids, ${auctions.length} auctions`);

    assert.equal(
      (
        await s.req('PUT', `/metadata/sources/nexmark/confKeys/none${id}`, {
          excludePerson: true,
          excludeAuction: true,
          excludeBid: true,
        })
      ).status,
      200,
    );
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM nxnone${id} () WITH (TYPE="nexmark", CONF_KEY="none${id}")`,
        })
      ).status,
      201,
    );
    await s.req('POST', '/rules', { id: `nxbad${id}`, sql: `SELECT * FROM nxnone${id}`, actions: [{ nop: {} }] });
    await statusMatching(s, `nxbad${id}`, /nexmark excludes every event kind/);
  } finally {
    for (const c of closers) c();
    await s.dispose();
  }
});
