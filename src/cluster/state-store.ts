/**
 * The state of running rules — checkpoints and sink failure caches — with every write fenced by the writer's lease
 * epoch (docs/cluster.md §3.3). Each placement unit has one **head** entry in the `state` table: the epoch of the
 * last writer, that writer's node, and the unit's keys with their values (small ones inline, larger ones in entries
 * of their own that the head points at, written first under fresh names so that a write that loses its race leaves
 * nothing behind).
 *
 * The head is the unit's only point of commit, and compare-and-set makes the check and the write one step: a write
 * with an epoch lower than the head's is refused ({@link Fenced}); one that races another is tried again on the new
 * head. A new owner first {@link StateStore.fence}s the head with its epoch, before it opens the rule: from then on
 * nothing the former owner still tries to write can land, whatever its clock or its pauses.
 */
import { Serial } from '../core/serial.js';
import { randomUUID } from 'node:crypto';
import { keyOf, type Table } from './backend.js';

/** A value longer than this (characters) gets an entry of its own. */
const INLINE_MAX = 4096;

/** A write refused because a later lease holder fenced the unit. */
export class Fenced extends Error {
  constructor(
    readonly unit: string,
    readonly epoch: number,
    readonly fencedAt: number,
  ) {
    super(
      `the state of ${unit} belongs to a later lease holder (epoch ${fencedAt}); this node's epoch ${epoch} is over`,
    );
    this.name = 'Fenced';
  }
}

/** A value kept in an entry of its own. */
interface Outside {
  $v: string;
}

interface Head {
  /** epoch of the last writer (0: never fenced) */
  e: number;
  /** node of the last writer */
  n: string;
  k: Record<string, string | Outside>;
}

export interface StateOp {
  key: string;
  /** null deletes the key */
  value: string | null;
}

const headKey = (unit: string): string => keyOf(unit, 'h');
const valueKey = (unit: string, id: string): string => keyOf(unit, 'v', id);

function parseHead(text: string | undefined): Head {
  if (text === undefined) return { e: 0, n: '', k: {} };
  try {
    const h = JSON.parse(text) as Head;
    return { e: Number(h.e) || 0, n: String(h.n ?? ''), k: h.k ?? {} };
  } catch {
    return { e: 0, n: '', k: {} };
  }
}

export class StateStore {
  /** per unit, the chain of this process's writes (they would only race each other) */
  private readonly chains = new Map<string, Serial>();

  constructor(
    private readonly table: Table,
    /** this node's id, recorded in the heads it writes (known once the REST port is) */
    private readonly node: () => string,
  ) {}

  private serial<T>(unit: string, fn: () => Promise<T>): Promise<T> {
    let chain = this.chains.get(unit);
    if (chain === undefined) this.chains.set(unit, (chain = new Serial()));
    const result = chain.run(fn);
    const settled = chain;
    void settled.settled().then(() => {
      if (!settled.busy && this.chains.get(unit) === settled) this.chains.delete(unit);
    });
    return result;
  }

  /** The epoch and writer node of the unit's head (0 and '' when it has none). */
  async head(unit: string): Promise<{ epoch: number; node: string }> {
    const h = parseHead((await this.table.get(headKey(unit)))?.value);
    return { epoch: h.e, node: h.n };
  }

  /**
   * Raises the unit's epoch to `epoch`, keeping its state: from now on writes with a lower epoch are refused. Resolves
   * false when the head already has a higher epoch (another holder came after this one).
   */
  fence(unit: string, epoch: number): Promise<boolean> {
    return this.serial(unit, async () => {
      for (;;) {
        const cur = await this.table.get(headKey(unit));
        const h = parseHead(cur?.value);
        if (h.e > epoch) return false;
        if (cur && h.e === epoch) return true;
        const text = JSON.stringify({ ...h, e: epoch, n: this.node() });
        const rev = cur
          ? await this.table.update(headKey(unit), text, cur.revision)
          : await this.table.create(headKey(unit), text);
        if (rev !== undefined) return true;
      }
    });
  }

  /** Applies `ops` to the unit's state if no later holder fenced it; throws {@link Fenced} otherwise. */
  write(unit: string, epoch: number, ops: readonly StateOp[]): Promise<void> {
    return this.serial(unit, async () => {
      for (;;) {
        const cur = await this.table.get(headKey(unit));
        const h = parseHead(cur?.value);
        if (h.e > epoch) throw new Fenced(unit, epoch, h.e);
        const next: Head = { e: epoch, n: this.node(), k: { ...h.k } };
        const written: string[] = [];
        for (const op of ops) {
          if (op.value === null) delete next.k[op.key];
          else if (op.value.length <= INLINE_MAX) next.k[op.key] = op.value;
          else {
            const id = randomUUID();
            await this.table.put(valueKey(unit, id), op.value);
            written.push(id);
            next.k[op.key] = { $v: id };
          }
        }
        const text = JSON.stringify(next);
        const rev = cur
          ? await this.table.update(headKey(unit), text, cur.revision)
          : await this.table.create(headKey(unit), text);
        if (rev === undefined) {
          for (const id of written) await this.table.delete(valueKey(unit, id));
          continue;
        }
        const kept = new Set(Object.values(next.k).flatMap((v) => (typeof v === 'string' ? [] : [v.$v])));
        for (const v of Object.values(h.k))
          if (typeof v !== 'string' && !kept.has(v.$v)) await this.table.delete(valueKey(unit, v.$v));
        return;
      }
    });
  }

  /** Every key of the unit's state with its value. */
  async read(unit: string): Promise<Map<string, string>> {
    for (;;) {
      const cur = await this.table.get(headKey(unit));
      const h = parseHead(cur?.value);
      const out = new Map<string, string>();
      let stale = false;
      for (const [k, v] of Object.entries(h.k)) {
        if (typeof v === 'string') out.set(k, v);
        else {
          const e = await this.table.get(valueKey(unit, v.$v));
          // replaced (and removed) while this read went on: read the new head
          if (!e) {
            stale = true;
            break;
          }
          out.set(k, e.value);
        }
      }
      if (!stale) return out;
    }
  }

  async get(unit: string, key: string): Promise<string | undefined> {
    const h = parseHead((await this.table.get(headKey(unit)))?.value);
    const v = h.k[key];
    if (v === undefined || typeof v === 'string') return v;
    return (await this.read(unit)).get(key);
  }

  /** Removes the unit's state and its fence (the rule was deleted). */
  drop(unit: string): Promise<void> {
    return this.serial(unit, async () => {
      for (const e of await this.table.list(keyOf(unit))) await this.table.delete(e.key);
    });
  }
}
