/**
 * The one interface a cluster backend implements (docs/cluster.md §2): a few tables of text values with revisions,
 * compare-and-set by revision, an atomic batch, the server's timestamp of every write and a change feed. Everything
 * the cluster does — the shared metadata store, node heartbeats, rule leases with their epochs, fenced checkpoints,
 * published rule status — is built on it in backend-independent modules, and one test suite runs against both
 * implementations (NATS JetStream KV in `nats-backend.ts`, Redis in `redis-backend.ts`).
 *
 * Keys are dot-separated tokens that {@link keyOf} encodes, so that a table lists and watches the keys under a prefix
 * of whole tokens (NATS subjects; Redis hash fields).
 */

/** The tables of a cluster (each a KV bucket on NATS, a hash with a change log on Redis). */
export const TABLES = ['meta', 'nodes', 'leases', 'state', 'status'] as const;
export type TableName = (typeof TABLES)[number];

/** One stored value. */
export interface Entry {
  key: string;
  value: string;
  /** grows with every write to the table: CAS compares it; a lease's epoch is its revision */
  revision: number;
  /** the backend server's clock when the value was written, Unix ms (never the writer's clock) */
  time: number;
}

/** One change a watch reports: `value` is undefined for a deleted key. */
export interface Change {
  key: string;
  value: string | undefined;
  revision: number;
  time: number;
}

/** One write of an atomic batch; `value: null` deletes the key. */
export interface TableOp {
  key: string;
  value: string | null;
}

export interface Watch {
  /** resolves once the current entries (when asked for) have been reported */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

export interface Table {
  get(key: string): Promise<Entry | undefined>;
  /** every entry whose key starts with the tokens of `prefix` (all entries for ''), in no particular order */
  list(prefix: string): Promise<Entry[]>;
  /** writes unconditionally; resolves with the new revision */
  put(key: string, value: string): Promise<number>;
  /** writes only when the key is absent (or deleted); undefined when it exists */
  create(key: string, value: string): Promise<number | undefined>;
  /** writes only when the key's revision is still `revision`; undefined when it moved on (or is gone) */
  update(key: string, value: string, revision: number): Promise<number | undefined>;
  /** deletes (only at `revision` when given); resolves with the revision of the delete, 0 when the key was absent or had moved on */
  delete(key: string, revision?: number): Promise<number>;
  /**
   * Applies every write or none, even when the writer dies half-way (a crash leaves the table as before, or — where
   * the backend has no multi-key transaction — the batch is finished by the next node that looks); resolves with the
   * revision of each write in order (0 for a delete of an absent key).
   */
  batch(ops: readonly TableOp[]): Promise<number[]>;
  /**
   * Reports every change of the keys under `prefix`, in revision order, first (with `initial`) every current entry as
   * a change. The feed survives reconnections: what changed meanwhile is reported when the connection is back.
   */
  watch(prefix: string, onChange: (c: Change) => void, opts?: { initial?: boolean }): Watch;
}

export interface ClusterBackend {
  readonly kind: 'nats' | 'redis';
  table(name: TableName): Table;
  /** whether the backend is reachable now (the client is connected) */
  connected(): boolean;
  close(): Promise<void>;
}

/** Characters a key token keeps as they are (NATS subject tokens allow them; Redis globs need no escape for them). */
const PLAIN = /^[A-Za-z0-9_-]$/;

/**
 * One key token: letters, digits, `_` and `-` as they are, every other UTF-8 byte as `=XX`, the empty text as a lone
 * `=` — so rule ids and stream names of any characters make valid NATS subject tokens and keep prefix listings exact.
 */
export function encodeToken(text: string): string {
  if (text === '') return '=';
  let out = '';
  for (const ch of text) {
    if (PLAIN.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodeToken(token: string): string {
  if (token === '=') return '';
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    if (token[i] === '=') {
      bytes.push(parseInt(token.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(token.charCodeAt(i));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A key of encoded tokens. */
export function keyOf(...parts: string[]): string {
  return parts.map(encodeToken).join('.');
}

/** The decoded tokens of a key. */
export function partsOf(key: string): string[] {
  return key.split('.').map(decodeToken);
}
