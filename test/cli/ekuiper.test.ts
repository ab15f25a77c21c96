/**
 * Moving from eKuiper (docs/migrating.md): a home holding a store written the way eKuiper 1.14 writes its SQLite store —
 * one table per namespace, `key` text and `val` a gob-encoded string — is noticed at start, and `eddy import ekuiper`
 * brings its streams, tables, rules, schemas, uploads and config keys over through the server's import.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { gobEncodeString } from '../../src/core/gob.js';
import { startTestServer } from '../helpers/server.js';
import { buildOnce, eddy } from './helpers.js';

before(buildOnce);

/** A namespace table as eKuiper's SQLite KV creates it, filled with gob-encoded strings. */
function namespace(db: Database.Database, name: string, rows: Record<string, string | Buffer>): void {
  db.exec(`CREATE TABLE IF NOT EXISTS '${name}'('key' VARCHAR(255) PRIMARY KEY, 'val' BLOB);`);
  const put = db.prepare(`REPLACE INTO '${name}'(key,val) values(?,?);`);
  for (const [k, v] of Object.entries(rows)) put.run(k, typeof v === 'string' ? gobEncodeString(v) : v);
}

const PROTO = 'syntax = "proto3";\nmessage Reading {\n  int64 id = 1;\n  double temperature = 2;\n}\n';

/** An eKuiper 1.14 home: its store, a schema file, an uploaded file and user config keys. */
function ekuiperHome(tag: string): string {
  const home = mkdtempSync(join(tmpdir(), 'ekuiper-home-'));
  const data = join(home, 'data');
  for (const d of ['schemas/protobuf', 'uploads', 'sources', 'connections'])
    mkdirSync(join(data, d), { recursive: true });
  writeFileSync(join(data, 'schemas', 'protobuf', 'ekproto.proto'), PROTO);
  writeFileSync(join(data, 'uploads', 'plain.txt'), 'uploaded as a file\n');
  writeFileSync(join(data, 'sources', 'mqtt.yaml'), 'plant2:\n  server: tcp://127.0.0.1:1883\n  qos: 1\n');
  writeFileSync(join(data, 'connections', 'connection.yaml'), 'mqtt:\n  conn1:\n    server: tcp://127.0.0.1:1883\n');
  const db = new Database(join(data, 'sqliteKV.db'));
  try {
    const stream = (type: number, statement: string) =>
      JSON.stringify({ streamType: type, streamKind: type === 1 ? 'lookup' : '', statement });
    namespace(db, 'stream', {
      [`ekdemo${tag}`]: stream(
        0,
        `CREATE STREAM ekdemo${tag} (temperature FLOAT) WITH (DATASOURCE="ek/${tag}", FORMAT="json", CONF_KEY="plant2")`,
      ),
      [`ekmem${tag}`]: stream(0, `CREATE STREAM ekmem${tag} () WITH (TYPE="memory", DATASOURCE="ek/mem/${tag}")`),
      [`eklook${tag}`]: stream(
        1,
        `CREATE TABLE eklook${tag} (id BIGINT) WITH (TYPE="memory", DATASOURCE="ek/look/${tag}", KIND="lookup", KEY="id")`,
      ),
    });
    namespace(db, 'rule', {
      [`ekhot${tag}`]: JSON.stringify({
        id: `ekhot${tag}`,
        sql: `SELECT temperature FROM ekdemo${tag} WHERE temperature > 50`,
        actions: [{ nop: {} }],
      }),
      [`ekmemrule${tag}`]: JSON.stringify({
        id: `ekmemrule${tag}`,
        sql: `SELECT * FROM ekmem${tag}`,
        actions: [{ nop: {} }],
        triggered: false,
      }),
    });
    // the record of a schema installed from a file on the eKuiper machine, and an upload made as JSON
    namespace(db, 'schema', {
      protobuf_ekproto: JSON.stringify({ name: 'ekproto', file: 'file:///opt/kuiper/ekproto.proto' }),
    });
    namespace(db, 'uploads', { 'ek.json': JSON.stringify({ name: 'ek.json', content: '{"a":1}', file: '' }) });
    // eKuiper's other namespaces and a rule's checkpoint table are present too, and ignored
    namespace(db, 'ruleStatus', {});
    db.exec(`CREATE TABLE IF NOT EXISTS 'checkpoint_ekhot${tag}'('key' INTEGER PRIMARY KEY, 'val' BLOB);`);
  } finally {
    db.close();
  }
  return home;
}

test('an eKuiper home is noticed at start and eddy import ekuiper brings its store over', async () => {
  const tag = String(process.pid);
  const home = ekuiperHome(tag);
  try {
    let s = await startTestServer({ home });
    try {
      assert.deepEqual(
        s.app.notices,
        [
          `${join(home, 'data', 'sqliteKV.db')} holds an eKuiper 1.14 store (2 streams, 1 table, 2 rules, 2 other records) ` +
            `that Eddy does not read in place; import it with: eddy import ekuiper ${home} (docs/migrating.md)`,
        ],
        'the start-up names the store and the command',
      );
      assert.deepEqual((await s.req('GET', '/streams')).json(), []);

      const r = await eddy(s, ['import', 'ekuiper', home]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(
        r.stdout,
        /sqliteKV\.db: streams 2, tables 1, rules 2, sourceConfig 1, connectionConfig 1, Schema 1, uploads 2\n/,
      );
      assert.match(r.stderr, /importing the eKuiper store \[#{30}\] 10\/10 imported\n/);

      assert.deepEqual(((await s.req('GET', '/streams')).json() as string[]).sort(), [`ekdemo${tag}`, `ekmem${tag}`]);
      assert.deepEqual((await s.req('GET', '/tables')).json(), [`eklook${tag}`]);
      const rules = (await s.req('GET', '/rules')).json() as Array<{ id: string; status: string }>;
      assert.deepEqual(
        rules.map((x) => [x.id, x.status]).sort(),
        [
          [`ekhot${tag}`, 'Running'],
          [`ekmemrule${tag}`, 'Stopped: canceled manually.'],
        ].sort(),
      );
      const schema = (await s.req('GET', '/schemas/protobuf/ekproto')).json() as { content: string };
      assert.equal(schema.content, PROTO, 'the schema text is taken from the data folder');
      const uploaded = (await s.req('GET', '/config/uploads')).json() as string[];
      assert.ok(uploaded.some((f) => f.endsWith('ek.json')) && uploaded.some((f) => f.endsWith('plain.txt')));
      const keys = (await s.req('GET', '/metadata/sources/yaml/mqtt')).json() as Record<string, { server: string }>;
      assert.equal(keys.plant2.server, 'tcp://127.0.0.1:1883');
      const conns = (await s.req('GET', '/metadata/connections/yaml/mqtt')).json() as Record<string, unknown>;
      assert.ok(conns.conn1, JSON.stringify(conns));
    } finally {
      await s.stop();
    }
    // once Eddy has streams of its own, the notice is gone
    s = await startTestServer({ home });
    try {
      assert.deepEqual(s.app.notices, []);
    } finally {
      await s.stop();
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('eddy import ekuiper lists what it could not carry over and what the server refused, and ends with 1', async () => {
  const tag = `x${process.pid}`;
  const home = ekuiperHome(tag);
  const db = new Database(join(home, 'data', 'sqliteKV.db'));
  try {
    // a config key kept as a Go map (cfgStorageType kv): a gob value other than a string (here an int, 5)
    namespace(db, 'confKVStorage', { 'sources.mqtt.gomap': Buffer.from([3, 4, 0, 10]) });
    // a portable plugin whose archive is not on this machine
    namespace(db, 'portablePlugin', {
      ghost: JSON.stringify({ name: 'ghost', file: 'file:///nonexistent/ghost.zip', shellParas: [] }),
    });
  } finally {
    db.close();
  }
  const s = await startTestServer();
  try {
    const r = await eddy(s, ['import', 'ekuiper', join(home, 'data')]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^portablePlugins +ghost +.+$/m);
    assert.match(r.stdout, /^not carried over:$/m);
    assert.match(r.stdout, /^confKVStorage +sources\.mqtt\.gomap +a Go structure, not a text the import can read$/m);
    assert.match(r.stderr, /1 of 11 items could not be imported; 1 stored item was not carried over/);
    // the rest is there
    assert.equal((await s.req('GET', `/rules/ekhot${tag}`)).status, 200);

    const none = await eddy(s, ['import', 'ekuiper', tmpdir()]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /no eKuiper store under/);
  } finally {
    await s.dispose();
    rmSync(home, { recursive: true, force: true });
  }
});
