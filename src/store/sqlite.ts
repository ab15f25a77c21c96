import { TurnBatch } from '../core/turn-batch.js';
import Database from 'better-sqlite3';
import type { KVOp, KVStore } from './kv.js';

/** Pages written to the write-ahead log before SQLite folds it into the database (4 KB pages: 800 KB). */
const WAL_FOLD_PAGES = 200;
/** The size the write-ahead log file is cut back to after a fold (README "Production notes"). */
export const WAL_MAX_BYTES = 1024 * 1024;

/** A write waiting for the next group commit. */
interface QueuedWrite {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * SQLite store: one table holding every namespace, ordered by an insertion sequence.
 *
 * Writes are committed in groups: those asked for during one turn of the event loop (the stream and rule creations
 * of concurrent requests, the checkpoints of many rules) go to the database in one transaction at the end of the
 * turn, and each resolves only once that transaction committed, so a request answered after its write has it stored.
 * One transaction per write cost three times the CPU and made the main thread wait for the write-ahead log's folds.
 * Reads see every write asked for before them (the queue is committed first).
 */
export class SqliteStore implements KVStore {
  private readonly db: Database.Database;
  private readonly queue = new TurnBatch<QueuedWrite>((list) => this.commit(list));
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
    // A bounded write-ahead log: checkpoints save often, and a log left at SQLite's defaults (folded into the database
    // every 1,000 pages, the file never shrunk) grows to 4 MB and stays so, which fills a small data folder by itself.
    // Folded every WAL_FOLD_PAGES pages, cut back to WAL_MAX_BYTES after each fold, and folded whole at open (what a
    // kill -9 left behind).
    this.db.pragma(`wal_autocheckpoint = ${WAL_FOLD_PAGES}`);
    this.db.pragma(`journal_size_limit = ${WAL_MAX_BYTES}`);
    this.db.pragma('wal_checkpoint(TRUNCATE)');
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

  /**
   * Queues a write for the group commit. Inside an open {@link transaction} it runs at once: that transaction commits
   * or rolls it back.
   */
  private write<T>(run: () => T): Promise<T> {
    if (this.db.inTransaction) {
      try {
        return Promise.resolve(run());
      } catch (err) {
        return Promise.reject(err as Error);
      }
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.add({ run, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** Commits the queued writes in one transaction. */
  private commit(list: QueuedWrite[]): void {
    if (list.length > 1) {
      const results: unknown[] = [];
      try {
        this.db.transaction(() => {
          for (const w of list) results.push(w.run());
        })();
      } catch {
        // one write failed (and the transaction with it): each is tried alone, so each caller gets its own outcome
        results.length = 0;
      }
      if (results.length === list.length) {
        list.forEach((w, i) => w.resolve(results[i]));
        return;
      }
    }
    for (const w of list) {
      try {
        w.resolve(w.run());
      } catch (err) {
        w.reject(err);
      }
    }
  }

  /** Reads see the writes asked for before them. */
  private settled(): void {
    this.queue.flush();
  }

  async get(ns: string, key: string): Promise<string | undefined> {
    this.settled();
    return this.stmts.get.get(ns, key)?.val;
  }

  set(ns: string, key: string, value: string): Promise<void> {
    return this.write(() => void this.stmts.upsert.run(ns, key, value));
  }

  setIfAbsent(ns: string, key: string, value: string): Promise<boolean> {
    return this.write(() => this.stmts.insert.run(ns, key, value).changes > 0);
  }

  delete(ns: string, key: string): Promise<boolean> {
    return this.write(() => this.stmts.del.run(ns, key).changes > 0);
  }

  async keys(ns: string): Promise<string[]> {
    this.settled();
    return this.stmts.entries.all(ns).map((r) => r.key);
  }

  async entries(ns: string): Promise<Array<[string, string]>> {
    this.settled();
    return this.stmts.entries.all(ns).map((r) => [r.key, r.val]);
  }

  clear(ns: string): Promise<void> {
    return this.write(() => void this.stmts.clear.run(ns));
  }

  batch(ops: readonly KVOp[]): Promise<void> {
    // all or nothing: a savepoint of its own inside the group's transaction (better-sqlite3 nests them)
    return this.write(() =>
      this.db.transaction((list: readonly KVOp[]) => {
        for (const op of list) {
          if (op.value === null) this.stmts.del.run(op.ns, op.key);
          else this.stmts.upsert.run(op.ns, op.key, op.value);
        }
      })(ops),
    );
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    // one connection: a transaction already open (an outer call) simply takes these writes too
    if (this.db.inTransaction) return fn();
    // the writes asked for before it are not its own: committed first
    this.settled();
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
    if (!this.db.open) return;
    this.settled();
    this.db.close();
  }
}
