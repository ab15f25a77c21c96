/**
 * Rule leases (docs/cluster.md §3). A lease is an entry of the `leases` table, keyed by the placement unit (a rule,
 * or one instance of a parallel rule), naming the node and the session holding it. Its **epoch** is the revision of
 * that entry when it was taken, so it only grows: each take is a compare-and-set, which creates a new revision.
 *
 * A lease has no clock of its own: it is valid while its holder's heartbeat (same session) is fresh (membership.ts),
 * so one heartbeat renews every lease a node holds, as sessions do in lock services. A lease whose holder is not alive
 * may be taken by another node, at the revision it read; two nodes trying at once cannot both succeed.
 */
import { keyOf, partsOf, type Change, type Table, type Watch } from './backend.js';

export interface Lease {
  unit: string;
  node: string;
  session: string;
  epoch: number;
}

export class Leases {
  private readonly view = new Map<string, Lease>();
  private readonly listeners = new Set<(unit: string, lease: Lease | undefined) => void>();
  private watch: Watch | undefined;

  constructor(private readonly table: Table) {}

  /** Follows every lease of the cluster (for placement, `GET /cluster` and the status of rules). */
  async start(): Promise<void> {
    this.watch = this.table.watch('', (c) => this.onChange(c), { initial: true });
    await this.watch.ready;
  }

  private onChange(c: Change): void {
    const unit = partsOf(c.key)[0];
    let lease: Lease | undefined;
    if (c.value !== undefined) {
      try {
        const v = JSON.parse(c.value) as { node: string; session: string };
        lease = { unit, node: v.node, session: v.session, epoch: c.revision };
      } catch {
        lease = undefined;
      }
    }
    if (lease) this.view.set(unit, lease);
    else this.view.delete(unit);
    for (const l of this.listeners) l(unit, lease);
  }

  onLeaseChange(cb: (unit: string, lease: Lease | undefined) => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /** The lease of `unit` as last reported by the watch. */
  current(unit: string): Lease | undefined {
    return this.view.get(unit);
  }

  all(): Lease[] {
    return [...this.view.values()];
  }

  /**
   * Takes the lease of `unit` for `holder` when it is free, already the holder's, or held by someone `expired` says is
   * gone. Resolves with the epoch, or undefined when another live holder has it or another node took it first.
   */
  async acquire(
    unit: string,
    holder: { node: string; session: string },
    expired: (lease: Lease) => boolean,
  ): Promise<number | undefined> {
    const key = keyOf(unit);
    const value = JSON.stringify(holder);
    const cur = await this.table.get(key);
    if (!cur) return this.table.create(key, value);
    let held: { node: string; session: string };
    try {
      held = JSON.parse(cur.value) as { node: string; session: string };
    } catch {
      return this.table.update(key, value, cur.revision);
    }
    if (held.node === holder.node && held.session === holder.session) return cur.revision;
    if (!expired({ unit, node: held.node, session: held.session, epoch: cur.revision })) return undefined;
    return this.table.update(key, value, cur.revision);
  }

  /** Gives the lease up, only if it is still at `epoch` (nobody took it meanwhile). */
  async release(unit: string, epoch: number): Promise<boolean> {
    return (await this.table.delete(keyOf(unit), epoch)) > 0;
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
  }
}
