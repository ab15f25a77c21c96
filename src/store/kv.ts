/**
 * The metadata store: a namespaced key-value store of text values (JSON), listed in insertion order.
 * Two implementations: SQLite (default, a file under data/) and Redis (`store.type: redis`).
 */

/** One write of an atomic batch: `value: null` deletes the key. */
export interface KVOp {
  ns: string;
  key: string;
  value: string | null;
}

export interface KVStore {
  get(ns: string, key: string): Promise<string | undefined>;
  /** Inserts or replaces; a replaced key keeps its position in the listing order. */
  set(ns: string, key: string, value: string): Promise<void>;
  /** Inserts only when absent; resolves false when the key already exists. */
  setIfAbsent(ns: string, key: string, value: string): Promise<boolean>;
  /** Resolves false when the key did not exist. */
  delete(ns: string, key: string): Promise<boolean>;
  /** Keys of a namespace in insertion order. */
  keys(ns: string): Promise<string[]>;
  /** Entries of a namespace in insertion order. */
  entries(ns: string): Promise<Array<[string, string]>>;
  /** Deletes every key of a namespace. */
  clear(ns: string): Promise<void>;
  /** Applies every write or none. */
  batch(ops: readonly KVOp[]): Promise<void>;
  /**
   * Runs `fn` with every write it (or anything else meanwhile) makes held in one transaction: committed when `fn`
   * resolves, rolled back when it rejects or the process dies first (both stores have it).
   */
  transaction?<T>(fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
