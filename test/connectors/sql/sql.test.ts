/**
 * The sql source, lookup table and sink against the real PostgreSQL (127.0.0.1:5432) and MariaDB (127.0.0.1:3306)
 * of the test machine. Each test creates its own tables and drops them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectorsService, ctx, sinkNode, waitFor, freePort } from '../e2-helpers.js';
import { EddyError } from '../../../src/core/errors.js';
import { DateTime, type ValueObject } from '../../../src/values/value.js';
import { parseSqlUrl } from '../../../src/connectors/sql/db.js';
import type { SourceEvent } from '../../../src/contracts/index.js';
import type { SqlSource } from '../../../src/connectors/sql/source.js';
import { admin, cuttableProxy, MY_URL, PG_URL, uniqueTable } from './sql-helpers.js';

const DRIVERS = [
  { name: 'postgres', url: PG_URL, port: 5432 },
  { name: 'mysql', url: MY_URL, port: 3306 },
] as const;

test('sql urls: drivers by scheme with aliases, default ports, masked passwords, unsupported drivers refused', () => {
  const p = parseSqlUrl('postgres://app:s%40cret@db.local/plant?sslmode=disable');
  assert.deepEqual(
    [p.driver, p.host, p.port, p.user, p.password, p.database, p.tls],
    ['postgres', 'db.local', 5432, 'app', 's@cret', 'plant', false],
  );
  assert.equal(p.display, 'postgres://app:******@db.local/plant?sslmode=disable');
  assert.deepEqual(parseSqlUrl('postgresql://u@h:6000/d?sslmode=require').tls, { verify: false });
  const m = parseSqlUrl('mysql://username:password@127.0.0.1:3306/testdb?parseTime=true');
  assert.deepEqual(
    [m.driver, m.host, m.port, m.user, m.password, m.database],
    ['mysql', '127.0.0.1', 3306, 'username', 'password', 'testdb'],
  );
  assert.equal(parseSqlUrl('mariadb://root@h/x').driver, 'mysql');
  assert.equal(parseSqlUrl('mysql://root@h/x').port, 3306);
  assert.throws(() => parseSqlUrl('sqlserver://sa:pw@127.0.0.1:1433/db'), /unsupported driver sqlserver/);
  assert.throws(() => parseSqlUrl('sqlite:/tmp/test.db'), /unsupported driver sqlite/);
  assert.throws(() => parseSqlUrl('127.0.0.1:3306/db'), /invalid sql url.*missing the driver scheme/);
  assert.throws(() => parseSqlUrl(''), /sql url is required/);
  const at = parseSqlUrl('mysql://root:top@secret@h:1/d');
  assert.deepEqual([at.password, at.host, at.display], ['top@secret', 'h', 'mysql://root:******@h:1/d']);
});

for (const d of DRIVERS) {
  test(`sql source (${d.name}): internal query reads new rows only, in index order, with typed values`, async () => {
    const db = await admin(d.name);
    const t = uniqueTable('src');
    await db.run(
      `CREATE TABLE ${t} (id INT PRIMARY KEY, name VARCHAR(20), temp DOUBLE PRECISION, amount DECIMAL(10,2), ts TIMESTAMP NULL)`,
    );
    await db.run(
      `INSERT INTO ${t} VALUES (1, 'a', 20.5, 1.25, '2024-03-01 10:00:00'), (3, 'c', 22, 3, NULL), (2, 'b''q', 21, 2, NULL)`,
    );
    const { conns, close } = await connectorsService();
    const src = conns.registry.source('sql')!() as SqlSource;
    src.provision(ctx(), '', {
      url: d.url,
      interval: 100,
      internalSqlQueryCfg: { table: t, limit: 2, indexField: 'id', indexValue: 1 },
    });
    const got: ValueObject[] = [];
    const errors: Error[] = [];
    try {
      await src.connect(
        ctx(),
        (ev: SourceEvent) => got.push(ev.payload as ValueObject),
        (e) => errors.push(e),
      );
      await waitFor(() => got.length >= 2, 'rows 2 and 3');
      assert.deepEqual(got, [
        { id: 2n, name: "b'q", temp: 21, amount: 2, ts: null },
        { id: 3n, name: 'c', temp: 22, amount: 3, ts: null },
      ]);
      assert.deepEqual(src.offset(), { id: 3n });
      assert.equal(src.statement(), `select * from ${t} where id > 3 order by id ASC limit 2`);
      // later rows arrive on later polls, at most `limit` per poll, each once
      await db.run(
        `INSERT INTO ${t} VALUES (4, 'd', 1, 4, '2024-03-02 11:30:00'), (5, 'e', 2, 5, NULL), (6, 'f', 3, 6, NULL)`,
      );
      await waitFor(() => got.length >= 5, 'rows 4 to 6');
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        got.slice(2).map((r) => r.id),
        [4n, 5n, 6n],
      );
      assert.deepEqual(got[2].ts, new DateTime(Date.UTC(2024, 2, 2, 11, 30), 'UTC'));
      assert.deepEqual(errors, []);
      // a rewound offset re-reads from there
      src.rewind({ id: 4n });
      await waitFor(() => got.length >= 7, 'rows 5 and 6 again');
      assert.deepEqual(
        got.slice(5).map((r) => r.id),
        [5n, 6n],
      );
    } finally {
      await src.close(ctx());
      await db.run(`DROP TABLE ${t}`);
      await db.close();
      await close();
    }
  });

  test(`sql lookup (${d.name}): rows by one or two keys, needed columns, no match, quoted strings`, async () => {
    const db = await admin(d.name);
    const t = uniqueTable('lk');
    await db.run(`CREATE TABLE ${t} (id INT, zone VARCHAR(20), label VARCHAR(40))`);
    await db.run(`INSERT INTO ${t} VALUES (1, 'n', 'kitchen'), (1, 's', 'hall'), (2, 'n', 'it''s'), (3, 'n', NULL)`);
    const { conns, close } = await connectorsService();
    const lk = conns.registry.lookup('sql')!();
    try {
      lk.provision(ctx(), t, { url: d.url });
      await lk.connect(ctx());
      const rows = await lk.lookup(ctx(), [], ['id'], [1n]);
      assert.deepEqual(
        rows.sort((a, b) => String(a.zone).localeCompare(String(b.zone))),
        [
          { id: 1n, zone: 'n', label: 'kitchen' },
          { id: 1n, zone: 's', label: 'hall' },
        ],
      );
      // a float key from a schemaless stream compares like a literal; only the needed columns are read
      assert.deepEqual(await lk.lookup(ctx(), ['label'], ['id', 'zone'], [1, 's']), [{ label: 'hall' }]);
      assert.deepEqual(await lk.lookup(ctx(), ['label'], ['label'], ["it's"]), [{ label: "it's" }]);
      assert.deepEqual(await lk.lookup(ctx(), ['label'], ['id'], [3n]), [{ label: null }]);
      assert.deepEqual(await lk.lookup(ctx(), [], ['id'], [99n]), []);
      // an unknown column is the database's error
      await assert.rejects(lk.lookup(ctx(), [], ['nosuch'], [1n]), /nosuch/);
      // connectors of one database share its pool: closing one leaves the other working
      const other = conns.registry.lookup('sql')!();
      other.provision(ctx(), t, { url: d.url });
      await other.connect(ctx());
      await other.close(ctx());
      assert.deepEqual(await lk.lookup(ctx(), ['label'], ['id', 'zone'], [2n, 'n']), [{ label: "it's" }]);
    } finally {
      await lk.close(ctx());
      await db.run(`DROP TABLE ${t}`);
      await db.close();
      await close();
    }
  });

  test(`sql sink (${d.name}): batch insert in fields order, NULL for missing values, row kinds, dynamic table`, async () => {
    const db = await admin(d.name);
    const t = uniqueTable('snk');
    const t2 = uniqueTable('snk2');
    await db.run(`CREATE TABLE ${t} (id INT PRIMARY KEY, name VARCHAR(40), temp DOUBLE PRECISION, flag BOOLEAN)`);
    await db.run(`CREATE TABLE ${t2} (id INT, name VARCHAR(40))`);
    const { conns, close } = await connectorsService();
    const batch = sinkNode(conns, 'sql', { url: d.url, table: t, fields: ['id', 'name', 'temp'] });
    const kinds = sinkNode(conns, 'sql', { url: d.url, table: t, rowkindField: 'action', keyField: 'id' });
    const dyn = sinkNode(conns, 'sql', { url: d.url, table: '{{.tbl}}', fields: ['id', 'name'] });
    try {
      for (const n of [batch, kinds, dyn]) await n.open();
      batch.push([
        { id: 1, name: "o'hara \\ x", temp: 20.5, extra: 'dropped' },
        { id: 2, temp: 21 },
        { id: 3n, name: 'c', temp: null },
      ]);
      await waitFor(() => batch.metrics.recordsOut >= 1, 'batch insert');
      assert.deepEqual(await db.run(`SELECT id, name, temp FROM ${t} ORDER BY id`), [
        { id: 1, name: "o'hara \\ x", temp: 20.5 },
        { id: 2, name: null, temp: 21 },
        { id: 3, name: 'c', temp: null },
      ]);
      kinds.push([
        { action: 'insert', id: 4, name: 'd', temp: 1, flag: true },
        { action: 'update', id: 1, name: 'one', temp: 0, flag: false },
        { action: 'delete', id: 2 },
        { id: 5, name: 'no kind is an insert', temp: 2, flag: null },
      ]);
      await waitFor(() => kinds.metrics.recordsOut >= 1, 'row kinds');
      const rows = await db.run(`SELECT id, name, temp, flag FROM ${t} ORDER BY id`);
      const truthy = (v: unknown) => (v === null ? null : v === true || v === 1);
      assert.deepEqual(
        rows.map((r) => [r.id, r.name, r.temp, truthy(r.flag)]),
        [
          [1, 'one', 0, false],
          [3, 'c', null, null],
          [4, 'd', 1, true],
          [5, 'no kind is an insert', 2, null],
        ],
      );
      // with `fields`, only those columns are written; the row kind and key are still read from the row
      const narrow = sinkNode(conns, 'sql', {
        url: d.url,
        table: t,
        rowkindField: 'action',
        keyField: 'id',
        fields: ['name'],
      });
      await narrow.open();
      narrow.push([{ action: 'update', id: 3, name: 'C', temp: 99 }]);
      await waitFor(() => narrow.metrics.recordsOut >= 1, 'narrow update');
      await narrow.close();
      assert.deepEqual(await db.run(`SELECT id, name, temp FROM ${t} WHERE id = 3`), [
        { id: 3, name: 'C', temp: null },
      ]);
      // an unknown row kind and a statement the database rejects are exceptions, not retried
      kinds.push([{ action: 'merge', id: 9 }]);
      await waitFor(() => kinds.metrics.exceptions >= 1, 'bad row kind');
      assert.match(kinds.metrics.lastException, /invalid rowkind merge/);
      batch.push([{ id: 1, name: 'duplicate key' }]);
      await waitFor(() => batch.metrics.exceptions >= 1, 'duplicate key');
      assert.match(batch.metrics.lastException, /duplicate|Duplicate/);
      dyn.push([{ tbl: t2, id: 7, name: 'x' }]);
      await waitFor(() => dyn.metrics.recordsOut >= 1, 'dynamic table');
      assert.deepEqual(await db.run(`SELECT id, name FROM ${t2}`), [{ id: 7, name: 'x' }]);
      // a rendered table name that is not an identifier is refused rather than written into the statement
      dyn.push([{ tbl: `${t2}; DROP TABLE ${t}`, id: 8, name: 'y' }]);
      await waitFor(() => dyn.metrics.exceptions >= 1, 'injected table name');
      assert.match(dyn.metrics.lastException, /invalid table name/);
      assert.equal((await db.run(`SELECT id FROM ${t}`)).length, 4);
    } finally {
      for (const n of [batch, kinds, dyn]) await n.close();
      await db.run(`DROP TABLE ${t}`);
      await db.run(`DROP TABLE ${t2}`);
      await db.close();
      await close();
    }
  });
}

test('sql source (postgres): template query with a DATETIME index in dateTimeFormat, and two index fields', async () => {
  const db = await admin('postgres');
  const t = uniqueTable('tpl');
  await db.run(`CREATE TABLE ${t} (id INT, seq INT, ts TIMESTAMP)`);
  await db.run(
    `INSERT INTO ${t} VALUES (1, 1, '2024-01-01 00:00:01'), (2, 2, '2024-01-01 00:00:02'), (3, 3, '2024-01-01 00:00:03')`,
  );
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('sql')!() as SqlSource;
  const multi = conns.registry.source('sql')!() as SqlSource;
  src.provision(ctx(), '', {
    url: PG_URL,
    interval: 100,
    templateSqlQueryCfg: {
      templateSql: `select id, ts from ${t} where ts > '{{.ts}}' order by ts limit 1`,
      indexField: 'ts',
      indexValue: '2024-01-01 00:00:01',
      indexFieldType: 'DATETIME',
      dateTimeFormat: 'YYYY-MM-dd HH:mm:ss',
    },
  });
  multi.provision(ctx(), '', {
    url: PG_URL,
    interval: 100,
    internalSqlQueryCfg: {
      table: t,
      indexFields: [
        { indexField: 'id', indexValue: 1 },
        { indexField: 'seq', indexValue: 0 },
      ],
    },
  });
  const got: ValueObject[] = [];
  try {
    await src.connect(
      ctx(),
      (ev) => got.push(ev.payload as ValueObject),
      () => {},
    );
    await waitFor(() => got.length >= 2, 'two rows, one per poll');
    assert.deepEqual(
      got.map((r) => r.id),
      [2n, 3n],
    );
    assert.equal(src.statement(), `select id, ts from ${t} where ts > '2024-01-01 00:00:03' order by ts limit 1`);
    // without dateTimeFormat a time index keeps its microseconds: rows apart by 1 µs are each read once
    await db.run(`INSERT INTO ${t} VALUES (4, 4, '2024-01-01 00:00:04.000001'), (5, 5, '2024-01-01 00:00:04.000002')`);
    const fine = conns.registry.source('sql')!() as SqlSource;
    fine.provision(ctx(), '', {
      url: PG_URL,
      interval: 50,
      templateSqlQueryCfg: {
        templateSql: `select id, ts from ${t} where ts > '{{.ts}}' order by ts limit 1`,
        indexField: 'ts',
        indexValue: '2024-01-01 00:00:03',
        indexFieldType: 'DATETIME',
      },
    });
    const fineRows: ValueObject[] = [];
    await fine.connect(
      ctx(),
      (ev) => fineRows.push(ev.payload as ValueObject),
      () => {},
    );
    await waitFor(() => fineRows.length >= 2, 'two rows 1 µs apart');
    await new Promise((r) => setTimeout(r, 200));
    await fine.close(ctx());
    assert.deepEqual(
      fineRows.map((r) => r.id),
      [4n, 5n],
    );
    assert.deepEqual(fineRows[1].ts, new DateTime(Date.UTC(2024, 0, 1, 0, 0, 4), 'UTC', 2000));
    await multi.connect(
      ctx(),
      () => {},
      () => {},
    );
    assert.match(
      multi.statement(),
      new RegExp(`^select \\* from ${t} where id > \\d AND seq > \\d order by id ASC, seq ASC$`),
    );
  } finally {
    await src.close(ctx());
    await multi.close(ctx());
    await db.run(`DROP TABLE ${t}`);
    await db.close();
    await close();
  }
});

test('sql connectors: bad properties, bad credentials and unreachable databases fail with the reason', async () => {
  const { conns, close } = await connectorsService();
  try {
    const src = () => conns.registry.source('sql')!();
    const isExec = (re: RegExp) => (e: unknown) => e instanceof EddyError && e.code === 2201 && re.test(e.message);
    assert.throws(
      () => src().provision(ctx(), '', { interval: 100, internalSqlQueryCfg: { table: 't' } }),
      isExec(/sql url is required/),
    );
    assert.throws(
      () => src().provision(ctx(), '', { url: 'oracle://u:p@h/x', interval: 100, internalSqlQueryCfg: { table: 't' } }),
      isExec(/unsupported driver oracle/),
    );
    assert.throws(
      () => src().provision(ctx(), '', { url: PG_URL, internalSqlQueryCfg: { table: 't' } }),
      isExec(/interval is required/),
    );
    assert.throws(
      () => src().provision(ctx(), '', { url: PG_URL, interval: 100 }),
      isExec(/one of internalSqlQueryCfg and templateSqlQueryCfg is required/),
    );
    assert.throws(
      () =>
        src().provision(ctx(), '', { url: PG_URL, interval: 100, internalSqlQueryCfg: { table: 't; drop table x' } }),
      isExec(/invalid table name/),
    );
    assert.throws(
      () =>
        src().provision(ctx(), '', { url: PG_URL, interval: 100, templateSqlQueryCfg: { templateSql: 'select {{.a' } }),
      isExec(/templateSql/),
    );
    assert.throws(() => conns.registry.lookup('sql')!().provision(ctx(), '', { url: PG_URL }), /DATASOURCE/);
    assert.throws(() => sinkNode(conns, 'sql', { url: PG_URL }), /table is required/);
    assert.throws(
      () => sinkNode(conns, 'sql', { url: PG_URL, table: 't', rowkindField: 'op' }),
      /keyField is required/,
    );
    assert.throws(() => sinkNode(conns, 'sql', { url: 'ftp://x/y', table: 't' }), /unsupported driver ftp/);

    // wrong password (MariaDB), unknown role and database (PostgreSQL), nothing listening
    const port = await freePort();
    const cases: Array<[string, RegExp]> = [
      [
        'mysql://root:wrong@127.0.0.1:3306/test',
        /cannot connect to mysql:\/\/root:\*\*\*\*\*\*@127\.0\.0\.1:3306\/test: Access denied for user 'root'/,
      ],
      ['postgres://nosuchrole@127.0.0.1:5432/test', /role "nosuchrole" does not exist/],
      ['postgres://postgres@127.0.0.1:5432/nosuchdb', /database "nosuchdb" does not exist/],
      [`postgres://postgres@127.0.0.1:${port}/test`, /ECONNREFUSED/],
      [`mysql://root@127.0.0.1:${port}/test`, /ECONNREFUSED/],
    ];
    for (const [url, re] of cases) {
      const lk = conns.registry.lookup('sql')!();
      lk.provision(ctx(), 'anytable', { url });
      await assert.rejects(lk.connect(ctx()), re, url);
      const s = src();
      s.provision(ctx(), '', { url, interval: 1000, internalSqlQueryCfg: { table: 't' } });
      await assert.rejects(
        s.connect(
          ctx(),
          () => {},
          () => {},
        ),
        re,
        url,
      );
      await s.close(ctx());
      await assert.rejects(conns.registry.connectionCheck('source', 'sql')!({ url }), re, url);
      await assert.rejects(conns.registry.connectionCheck('lookup', 'sql')!({ url }), re, url);
      await assert.rejects(conns.registry.connectionCheck('sink', 'sql')!({ url, table: 't' }), re, url);
    }
    // the checks pass against the live databases; the source check needs only the url
    for (const d of DRIVERS) {
      await conns.registry.connectionCheck('source', 'sql')!({ url: d.url });
      await conns.registry.connectionCheck('lookup', 'sql')!({ url: d.url, DATASOURCE: 'x' });
      await conns.registry.connectionCheck('sink', 'sql')!({ url: d.url, table: 'readings', fields: ['id', 't'] });
    }
    await assert.rejects(conns.registry.connectionCheck('sink', 'sql')!({ url: PG_URL }), /table is required/);
  } finally {
    await close();
  }
});

test('sql sink with the cache (postgres): rows written while the database is unreachable are resent once it is back', async () => {
  const proxy = await cuttableProxy(5432);
  const db = await admin('postgres');
  const t = uniqueTable('cache');
  await db.run(`CREATE TABLE ${t} (n INT)`);
  const { conns, close } = await connectorsService();
  const node = sinkNode(conns, 'sql', {
    url: `postgres://postgres@127.0.0.1:${proxy.port}/test`,
    table: t,
    enableCache: true,
  });
  try {
    await node.open();
    node.push([{ n: 1 }]);
    await waitFor(() => node.metrics.recordsOut === 1, 'first write');
    proxy.cut();
    await new Promise((r) => setTimeout(r, 100));
    node.push([{ n: 2 }, { n: 3 }]);
    node.push([{ n: 4 }]);
    await waitFor(() => node.metrics.exceptions >= 1, 'failure while down');
    await proxy.restore();
    await waitFor(() => node.metrics.recordsOut >= 3, 'resent after the database is back', 15000);
    assert.deepEqual(await db.run(`SELECT n FROM ${t} ORDER BY n`), [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
  } finally {
    await node.close();
    await db.run(`DROP TABLE ${t}`);
    await db.close();
    await proxy.close();
    await close();
  }
});

test('sql source (mysql): a poll failing while the database is unreachable is reported, polling resumes after', async () => {
  const proxy = await cuttableProxy(3306);
  const db = await admin('mysql');
  const t = uniqueTable('outage');
  await db.run(`CREATE TABLE ${t} (id INT)`);
  await db.run(`INSERT INTO ${t} VALUES (1)`);
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('sql')!();
  src.provision(ctx(), '', {
    url: `mysql://root@127.0.0.1:${proxy.port}/test`,
    interval: 100,
    internalSqlQueryCfg: { table: t, indexField: 'id' },
  });
  const got: ValueObject[] = [];
  const errors: Error[] = [];
  try {
    await src.connect(
      ctx(),
      (ev) => got.push(ev.payload as ValueObject),
      (e) => errors.push(e),
    );
    await waitFor(() => got.length === 1, 'first row');
    proxy.cut();
    await waitFor(() => errors.length >= 1, 'poll failure', 10000);
    assert.equal((errors[0] as Error & { transient?: boolean }).transient, true);
    assert.match(errors[0].message, /^sql source query failed: /);
    await db.run(`INSERT INTO ${t} VALUES (2)`);
    await proxy.restore();
    await waitFor(() => got.length === 2, 'row written during the outage', 15000);
    assert.deepEqual(got, [{ id: 1n }, { id: 2n }]);
  } finally {
    await src.close(ctx());
    await db.run(`DROP TABLE ${t}`);
    await db.close();
    await proxy.close();
    await close();
  }
});

test('sql lookup (postgres): probes fail while the database is unreachable and work again once it is back', async () => {
  const proxy = await cuttableProxy(5432);
  const db = await admin('postgres');
  const t = uniqueTable('lkout');
  await db.run(`CREATE TABLE ${t} (id INT, label TEXT)`);
  await db.run(`INSERT INTO ${t} VALUES (1, 'kitchen')`);
  const { conns, close } = await connectorsService();
  const lk = conns.registry.lookup('sql')!();
  try {
    lk.provision(ctx(), t, { url: `postgres://postgres@127.0.0.1:${proxy.port}/test` });
    await lk.connect(ctx());
    assert.deepEqual(await lk.lookup(ctx(), ['label'], ['id'], [1n]), [{ label: 'kitchen' }]);
    proxy.cut();
    await new Promise((r) => setTimeout(r, 100));
    await assert.rejects(lk.lookup(ctx(), ['label'], ['id'], [1n]), /terminated|ECONNREFUSED/);
    await proxy.restore();
    let rows: unknown[] = [];
    const end = Date.now() + 10000;
    while (rows.length === 0 && Date.now() < end) {
      rows = await lk.lookup(ctx(), ['label'], ['id'], [1n]).catch(() => []);
      if (rows.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(rows, [{ label: 'kitchen' }]);
  } finally {
    await lk.close(ctx());
    await db.run(`DROP TABLE ${t}`);
    await db.close();
    await proxy.close();
    await close();
  }
});
