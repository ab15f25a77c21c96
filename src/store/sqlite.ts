import Database from 'better-sqlite3';
import type { KVOp, KVStore } from './kv.js';

/** SQLite store: one table holding every namespace, ordered by an insertion sequence. */
export class SqliteStore implements KVStore {
  private readonly db: Database.Database;
  private readonly stmts: {
    get: Database.Statement<[string, string], { val: string }>;
    upsert: Database.Statement<[string, string, string]>;
    insert: Database.Statement<[string, string, string]>;
    del: Database.Statement<[string, string]>;
    entries: Database.Statement<[string], { key: string; val: string }>;
    clear: Database.Statement<[string]>;
  };

  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(
      `CREATE TABLE IF NOT EXISTS kv (
         seq INTEGER PRIMARY KEY AUTOINCREMENT,
         ns TEXT NOT NULL,
         key TEXT NOT NULL,
         val TEXT NOT NULL,
         UNIQUE (ns, key)
       )`,
    );
    this.stmts = {
      get: this.db.prepare('SELECT val FROM kv WHERE ns = ? AND key = ?'),
      upsert: this.db.prepare(
        'INSERT INTO kv (ns, key, val) VALUES (?, ?, ?) ON CONFLICT (ns, key) DO UPDATE SET val = excluded.val',
      ),
      insert: this.db.prepare('INSERT OR IGNORE INTO kv (ns, key, val) VALUES (?, ?, ?)'),
      del: this.db.prepare('DELETE FROM kv WHERE ns = ? AND key = ?'),
      entries: this.db.prepare('SELECT key, val FROM kv WHERE ns = ? ORDER BY seq'),
      clear: this.db.prepare('DELETE FROM kv WHERE ns = ?'),
    };
  }

  async get(ns: string, key: string): Promise<string | undefined> {
    return this.stmts.get.get(ns, key)?.val;
  }

  async set(ns: string, key: string, value: string): Promise<void> {
    this.stmts.upsert.run(ns, key, value);
  }

  async setIfAbsent(ns: string, key: string, value: string): Promise<boolean> {
    return this.stmts.insert.run(ns, key, value).changes > 0;
  }

  async delete(ns: string, key: string): Promise<boolean> {
    return this.stmts.del.run(ns, key).changes > 0;
  }

  async keys(ns: string): Promise<string[]> {
    return this.stmts.entries.all(ns).map((r) => r.key);
  }

  async entries(ns: string): Promise<Array<[string, string]>> {
    return this.stmts.entries.all(ns).map((r) => [r.key, r.val]);
  }

  async clear(ns: string): Promise<void> {
    this.stmts.clear.run(ns);
  }

  async batch(ops: readonly KVOp[]): Promise<void> {
    this.db.transaction((list: readonly KVOp[]) => {
      for (const op of list) {
        if (op.value === null) this.stmts.del.run(op.ns, op.key);
        else this.stmts.upsert.run(op.ns, op.key, op.value);
      }
    })(ops);
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    // one connection: a transaction already open (an outer call) simply takes these writes too
    if (this.db.inTransaction) return fn();
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = await fn();
      this.db.exec('COMMIT');
      return result;
    } catch (e) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw e;
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
