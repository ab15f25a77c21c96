/**
 * The writes of an open transaction, for stores that apply them together at its end (Redis in one MULTI/EXEC, the
 * cluster store in one atomic batch): a log to replay at commit, and the view the store's reads consult meanwhile, so
 * that what the transaction wrote is read back before it commits.
 */
import type { KVOp } from './kv.js';

/** What a transaction changed in one namespace, as its reads see it. */
export interface StagedNamespace {
  /** cleared by the transaction: what the store holds is hidden */
  cleared: boolean;
  /** the written values; null for a deleted key */
  values: Map<string, string | null>;
  /** keys that go to the end of the listing (new, or deleted and written again), in that order */
  moved: Set<string>;
}

export type StagedEntry = { kind: 'write'; op: KVOp } | { kind: 'clear'; ns: string };

/** The writes of an open transaction: a log to replay at commit, and the view the store's reads consult meanwhile. */
export class Staged {
  readonly log: StagedEntry[] = [];
  readonly view = new Map<string, StagedNamespace>();

  constructor(private readonly storedHas: (ns: string, key: string) => Promise<boolean>) {}

  private ns(ns: string): StagedNamespace {
    let st = this.view.get(ns);
    if (st === undefined) this.view.set(ns, (st = { cleared: false, values: new Map(), moved: new Set() }));
    return st;
  }

  /** Whether the key exists as the transaction sees it (a stored value that is no gob string counts). */
  async has(ns: string, key: string): Promise<boolean> {
    const st = this.view.get(ns);
    const v = st?.values.get(key);
    if (v !== undefined) return v !== null;
    return st?.cleared !== true && (await this.storedHas(ns, key));
  }

  /**
   * The value of a key as the transaction sees it: a text it wrote, null when it deleted the key or cleared its
   * namespace, undefined when it did not touch it (the store's value stands).
   */
  valueOf(ns: string, key: string): string | null | undefined {
    const st = this.view.get(ns);
    if (st?.values.has(key)) return st.values.get(key) ?? null;
    return st?.cleared ? null : undefined;
  }

  /** The keys of a namespace as the transaction sees it, given the store's keys in listing order. */
  keysOver(ns: string, stored: readonly string[]): string[] {
    const st = this.view.get(ns);
    if (st === undefined) return [...stored];
    const base = st.cleared ? [] : stored;
    const live = (k: string) => st.values.get(k) !== null;
    return [...base.filter((k) => !st.moved.has(k) && live(k)), ...[...st.moved].filter(live)];
  }

  async write(op: KVOp): Promise<void> {
    const st = this.ns(op.ns);
    const prev = st.values.get(op.key);
    const cleared = st.cleared;
    // the view changes at once, so that reads made meanwhile see the write
    this.log.push({ kind: 'write', op });
    st.values.set(op.key, op.value);
    if (op.value === null) {
      st.moved.delete(op.key);
      return;
    }
    // a replaced key keeps its position; a new one, or one deleted earlier, goes to the end
    const present = prev !== undefined ? prev !== null : !cleared && (await this.storedHas(op.ns, op.key));
    if (!present) {
      st.moved.delete(op.key);
      st.moved.add(op.key);
    }
  }

  clear(ns: string): void {
    this.log.push({ kind: 'clear', ns });
    this.view.set(ns, { cleared: true, values: new Map(), moved: new Set() });
  }
}
