/**
 * Reading a metadata store that eKuiper 1.14 wrote to SQLite (`data/sqliteKV.db`, docs/migrating.md): one table per
 * namespace (`rule`, `stream`, `schema`, …) with a `key` text column and a `val` blob holding the value in Go's gob
 * encoding (core/gob.ts; a text value is taken as it is). Eddy's own store lives in a table `kv` that eKuiper never
 * has, so the two can share the file; this module only reads eKuiper's tables, never writes.
 */
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { gobDecodeString } from '../core/gob.js';

/** One namespace as read: entries whose value is a text, and the keys of values that are not (Go structures). */
export interface EkuiperNamespace {
  entries: Array<[string, string]>;
  unreadable: string[];
}

/** What an eKuiper store holds, counted for the start-up notice. */
export interface EkuiperStoreSummary {
  streams: number;
  tables: number;
  rules: number;
  /** entries of the other namespaces an import carries (schemas, services, plugins, uploads, config keys, scripts) */
  others: number;
}

/** Namespaces `eddy import ekuiper` reads besides `stream` and `rule`. */
const OTHER_NAMESPACES = [
  'schema',
  'serviceInstall',
  'portablePlugin',
  'nativePlugin',
  'uploads',
  'script',
  'confKVStorage',
] as const;

/** An SQL identifier in double quotes (namespace names are eKuiper's, but a file may come from anywhere). */
const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** A value of an eKuiper namespace as text: a gob string, or a value stored as text; undefined when neither. */
function valueText(val: unknown): string | undefined {
  if (typeof val === 'string') return val;
  if (!(val instanceof Uint8Array)) return undefined;
  try {
    return gobDecodeString(val);
  } catch {
    return undefined;
  }
}

export class EkuiperSqliteStore {
  private readonly db: Database.Database;
  private readonly tables: Set<string>;

  private constructor(path: string) {
    this.db = new Database(path, { readonly: true, fileMustExist: true });
    const rows = this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{
      name: string;
    }>;
    // a namespace is a table of exactly eKuiper's two columns
    this.tables = new Set(
      rows
        .map((r) => r.name)
        .filter((name) => {
          const cols = (this.db.pragma(`table_info(${quoted(name)})`) as Array<{ name: string }>).map((c) => c.name);
          return cols.length === 2 && cols.includes('key') && cols.includes('val');
        }),
    );
  }

  /** Opens the file when it exists and has at least eKuiper's `stream` or `rule` namespace; undefined otherwise. */
  static open(path: string): EkuiperSqliteStore | undefined {
    if (!existsSync(path)) return undefined;
    let store: EkuiperSqliteStore;
    try {
      store = new EkuiperSqliteStore(path);
    } catch {
      return undefined;
    }
    if (store.tables.has('stream') || store.tables.has('rule')) return store;
    store.close();
    return undefined;
  }

  has(namespace: string): boolean {
    return this.tables.has(namespace);
  }

  /** Every entry of a namespace, in the table's order; an absent namespace is empty. */
  namespace(name: string): EkuiperNamespace {
    const out: EkuiperNamespace = { entries: [], unreadable: [] };
    if (!this.tables.has(name)) return out;
    const rows = this.db.prepare(`SELECT key, val FROM ${quoted(name)}`).all() as Array<{
      key: string;
      val: unknown;
    }>;
    for (const { key, val } of rows) {
      const text = valueText(val);
      if (text === undefined) out.unreadable.push(String(key));
      else out.entries.push([String(key), text]);
    }
    return out;
  }

  summary(): EkuiperStoreSummary {
    let streams = 0;
    let tables = 0;
    for (const [, text] of this.namespace('stream').entries) {
      if (streamInfo(text)?.streamType === 1) tables++;
      else streams++;
    }
    const others = OTHER_NAMESPACES.reduce((n, ns) => n + this.namespace(ns).entries.length, 0);
    return { streams, tables, rules: this.namespace('rule').entries.length, others };
  }

  close(): void {
    this.db.close();
  }
}

/** eKuiper's record of a stream or table: `{"streamType": 0|1, "streamKind": "", "statement": "CREATE …"}`. */
export function streamInfo(text: string): { streamType: number; statement: string } | undefined {
  try {
    const v = JSON.parse(text) as { streamType?: unknown; statement?: unknown };
    if (typeof v.statement !== 'string') return undefined;
    return { streamType: Number(v.streamType ?? 0), statement: v.statement };
  } catch {
    return undefined;
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * The start-up notice for a home whose SQLite file holds an eKuiper store while Eddy's own store has no stream and
 * no rule yet: Eddy does not read eKuiper's tables in place, `eddy import ekuiper` brings them over.
 */
export async function ekuiperStoreNotice(
  path: string,
  own: { keys(ns: string): Promise<string[]> },
  home: string,
): Promise<string | undefined> {
  const found = EkuiperSqliteStore.open(path);
  if (!found) return undefined;
  let s: EkuiperStoreSummary;
  try {
    s = found.summary();
  } finally {
    found.close();
  }
  if (s.streams + s.tables + s.rules + s.others === 0) return undefined;
  if ((await own.keys('stream')).length > 0 || (await own.keys('rule')).length > 0) return undefined;
  const what = [plural(s.streams, 'stream'), plural(s.tables, 'table'), plural(s.rules, 'rule')];
  if (s.others > 0) what.push(plural(s.others, 'other record'));
  return (
    `${path} holds an eKuiper 1.14 store (${what.join(', ')}) that Eddy does not read in place; ` +
    `import it with: eddy import ekuiper ${home} (docs/migrating.md)`
  );
}
