import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { connectorsService, ctx, sinkNode, waitFor, freePort } from '../e2-helpers.js';
import { EddyError } from '../../../src/core/errors.js';

const uid = (): string => 'eddy-e2-' + Math.random().toString(36).slice(2);

async function redisDb(db: number): Promise<Redis> {
  const r = new Redis({ host: '127.0.0.1', port: 6379, db, lazyConnect: true });
  await r.connect();
  return r;
}

test('redis lookup (string and list) reads the key of the probe value from the DATASOURCE database', async () => {
  const r3 = await redisDb(3);
  const r0 = await redisDb(0);
  const k = uid();
  await r3.set(k + '-1', '{"id":1,"name":"a"}');
  await r3.rpush(k + '-L', '{"v":1}', '{"v":2}');
  const { conns, close } = await connectorsService();
  const str = conns.registry.lookup('redis')!();
  str.provision(ctx(), '3', { addr: '127.0.0.1:6379', dataType: 'string' });
  await str.connect(ctx());
  // the key is the probe value as text
  assert.deepEqual(await str.lookup(ctx(), ['id', 'name'], ['id'], [k + '-1']), [{ id: 1, name: 'a' }]);
  assert.deepEqual(await str.lookup(ctx(), ['id'], ['id'], [k + '-none']), []);
  const list = conns.registry.lookup('redis')!();
  list.provision(ctx(), '3', { addr: '127.0.0.1:6379', dataType: 'list' });
  await list.connect(ctx());
  assert.deepEqual(await list.lookup(ctx(), ['v'], ['k'], [k + '-L']), [{ v: 1 }, { v: 2 }]);
  // db 0 does not have the key
  const db0 = conns.registry.lookup('redis')!();
  db0.provision(ctx(), '0', { addr: '127.0.0.1:6379', dataType: 'string' });
  await db0.connect(ctx());
  assert.deepEqual(await db0.lookup(ctx(), ['id'], ['id'], [k + '-1']), []);
  // a value that is not a JSON object fails the lookup
  await r3.set(k + '-bad', 'not json');
  await assert.rejects(str.lookup(ctx(), ['id'], ['id'], [k + '-bad']));
  for (const l of [str, list, db0]) await l.close(ctx());
  await r3.del(k + '-1', k + '-L', k + '-bad');
  r3.disconnect();
  r0.disconnect();
  await close();
});

test('redis lookup: bad database, unreachable server and bad credentials fail with the reason', async () => {
  const { conns, close } = await connectorsService();
  const mk = () => conns.registry.lookup('redis')!();
  assert.throws(
    () => mk().provision(ctx(), '16', { addr: '127.0.0.1:6379', dataType: 'string' }),
    (e: unknown) => e instanceof EddyError && /0-15/.test(e.message),
  );
  assert.throws(
    () => mk().provision(ctx(), '0', { addr: '127.0.0.1:6379', dataType: 'hash' }),
    /dataType must be string or list/,
  );
  const port = await freePort();
  const down = mk();
  down.provision(ctx(), '0', { addr: `127.0.0.1:${port}`, dataType: 'string' });
  await assert.rejects(down.connect(ctx()), /ECONNREFUSED/);
  const badAuth = mk();
  badAuth.provision(ctx(), '0', { addr: '127.0.0.1:6379', dataType: 'string', username: 'nobody', password: 'wrong' });
  await assert.rejects(badAuth.connect(ctx()), /WRONGPASS|invalid username-password/);
  const check = conns.registry.connectionCheck('lookup', 'redis')!;
  await check({ addr: '127.0.0.1:6379', dataType: 'string', DATASOURCE: '1' });
  await assert.rejects(check({ addr: `127.0.0.1:${port}`, dataType: 'string' }), /ECONNREFUSED/);
  await close();
});

test('redis sink writes rows as JSON under key or field, lists, expiration, row kinds and multiple keys', async () => {
  const r = await redisDb(2);
  const k = uid();
  const { conns, close } = await connectorsService();
  const base = { addr: '127.0.0.1:6379', db: 2 };
  const byKey = sinkNode(conns, 'redis', {
    ...base,
    key: k + '-static',
    expiration: 100,
    sendSingle: true,
    dataTemplate: '{"t":{{.temp}}}',
  });
  const byField = sinkNode(conns, 'redis', { ...base, field: 'id', rowkindField: 'op' });
  const list = sinkNode(conns, 'redis', { ...base, key: k + '-list', dataType: 'list' });
  const multi = sinkNode(conns, 'redis', { ...base, keyType: 'multiple', sendSingle: true });
  for (const n of [byKey, byField, list, multi]) await n.open();
  byKey.push([{ temp: 20.5 }]);
  byField.push([
    { id: k + '-f1', v: 1, op: 'insert' },
    { id: k + '-f2', v: 2 },
  ]);
  list.push([{ a: 1 }]);
  list.push([{ a: 2 }]);
  multi.push([{ [k + '-m1']: 'x', [k + '-m2']: 2.5 }]);
  await waitFor(
    () => [byKey, byField, list, multi].every((n) => n.metrics.recordsOut >= (n === list ? 2 : 1)),
    'writes',
  );
  assert.equal(await r.get(k + '-static'), '{"t":20.5}');
  const ttl = await r.ttl(k + '-static');
  assert.ok(ttl > 0 && ttl <= 100, `ttl ${ttl}`);
  assert.equal(await r.get(k + '-f1'), '{"id":"' + k + '-f1","op":"insert","v":1}');
  assert.equal(await r.get(k + '-f2'), '{"id":"' + k + '-f2","v":2}');
  // each row of a list is pushed as its own JSON object (LPUSH: newest first)
  assert.deepEqual(await r.lrange(k + '-list', 0, -1), ['{"a":2}', '{"a":1}']);
  assert.equal(await r.get(k + '-m1'), 'x');
  assert.equal(await r.get(k + '-m2'), '2.5');
  // a delete row removes its key
  byField.push([{ id: k + '-f1', op: 'delete' }]);
  await waitFor(() => byField.metrics.recordsOut >= 2, 'delete');
  assert.equal(await r.exists(k + '-f1'), 0);
  // an unknown row kind is an exception
  byField.push([{ id: k + '-f3', op: 'merge' }]);
  await waitFor(() => byField.metrics.exceptions === 1, 'bad rowkind');
  assert.match(byField.metrics.lastException, /invalid rowkind merge/);
  for (const n of [byKey, byField, list, multi]) await n.close();
  await r.del(k + '-static', k + '-f2', k + '-list', k + '-m1', k + '-m2');
  r.disconnect();
  await close();
});

test('redis sink: properties are checked, connection check pings', async () => {
  const { conns, close } = await connectorsService();
  assert.throws(
    () => sinkNode(conns, 'redis', { addr: '127.0.0.1:6379' }),
    /must have key or field when KeyType is single/,
  );
  assert.throws(
    () => sinkNode(conns, 'redis', { addr: '127.0.0.1:6379', key: 'k', dataType: 'set' }),
    /dataType must be string or list/,
  );
  assert.throws(() => sinkNode(conns, 'redis', { addr: '127.0.0.1:6379', key: 'k', db: 20 }), /0-15/);
  const check = conns.registry.connectionCheck('sink', 'redis')!;
  await check({ addr: '127.0.0.1:6379' });
  await assert.rejects(check({ addr: `127.0.0.1:${await freePort()}` }), /ECONNREFUSED/);
  await close();
});

/** A TCP proxy to the real Redis that the test can cut and restore. */
async function cuttableProxy(): Promise<{
  port: number;
  cut: () => void;
  restore: () => Promise<void>;
  close: () => Promise<void>;
}> {
  const sockets = new Set<Socket>();
  let port = 0;
  const make = () =>
    createServer((client) => {
      const upstream = connect(6379, '127.0.0.1');
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const end = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
  let server = make();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  const closeServer = () => new Promise<void>((r) => server.close(() => r()));
  return {
    port,
    cut: () => {
      void closeServer();
      for (const s of sockets) s.destroy();
    },
    restore: async () => {
      server = make();
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await closeServer().catch(() => undefined);
    },
  };
}

test('redis sink with the cache: writes made while the connection is lost are resent once it is back', async () => {
  const proxy = await cuttableProxy();
  const r = await redisDb(4);
  const k = uid();
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'redis', {
    addr: `127.0.0.1:${proxy.port}`,
    db: 4,
    key: k,
    dataType: 'list',
    sendSingle: true,
    enableCache: true,
  });
  await node.open();
  node.push([{ n: 1 }]);
  await waitFor(() => node.metrics.recordsOut === 1, 'first write');
  proxy.cut();
  await new Promise((res) => setTimeout(res, 100));
  node.push([{ n: 2 }, { n: 3 }]);
  await waitFor(() => node.metrics.exceptions >= 1, 'failure while down');
  await proxy.restore();
  await waitFor(() => node.metrics.recordsOut >= 3, 'resent after reconnect', 10000);
  assert.deepEqual(await r.lrange(k, 0, -1), ['{"n":3}', '{"n":2}', '{"n":1}']);
  await node.close();
  await r.del(k);
  r.disconnect();
  await proxy.close();
  await close();
});

test('redis lookup: lookups fail while the connection is lost and work again once it is back', async () => {
  const proxy = await cuttableProxy();
  const r = await redisDb(6);
  const k = uid();
  await r.set(k, '{"id":"x","v":1}');
  const { conns, close } = await connectorsService();
  const lk = conns.registry.lookup('redis')!();
  lk.provision(ctx(), '6', { addr: `127.0.0.1:${proxy.port}`, dataType: 'string' });
  await lk.connect(ctx());
  assert.deepEqual(await lk.lookup(ctx(), ['v'], ['id'], [k]), [{ id: 'x', v: 1 }]);
  proxy.cut();
  await new Promise((res) => setTimeout(res, 100));
  await assert.rejects(lk.lookup(ctx(), ['v'], ['id'], [k]));
  await proxy.restore();
  let rows: unknown[] = [];
  const end = Date.now() + 10000;
  while (rows.length === 0 && Date.now() < end) {
    rows = await lk.lookup(ctx(), ['v'], ['id'], [k]).catch(() => []);
    if (rows.length === 0) await new Promise((res) => setTimeout(res, 100));
  }
  assert.deepEqual(rows, [{ id: 'x', v: 1 }]);
  await lk.close(ctx());
  await r.del(k);
  r.disconnect();
  await proxy.close();
  await close();
});
