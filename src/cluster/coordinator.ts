/**
 * Who runs what (docs/cluster.md §3–§4): every node computes the placement of every rule over the live nodes, takes
 * the leases of the units placed on it, and gives up those placed elsewhere; nothing else is agreed between nodes.
 *
 * - **Taking a unit**: take its lease (a new epoch, leases.ts), fence its state with that epoch (state-store.ts), then
 *   run the rule. A lease held by a node that is not alive (its heartbeat is older than the lease timeout, on the
 *   server's clock) is taken over the same way: this is failover.
 * - **Giving a unit up** (a node joined, a pin changed, the rule was deleted): stop the run here — its last checkpoint
 *   is still written under this node's epoch — then release the lease, so that the new owner takes it at once.
 * - **Self-fencing**: a node whose heartbeats the backend has not acknowledged for {@link FENCE_AFTER} of the lease
 *   timeout stops every rule it runs and refuses every state write, before any other node may judge it dead and take
 *   over; it takes its units again (with new epochs) once it is heard again.
 * - **A lease taken away** (seen on the lease watch): the run here stops at once.
 */
import type { Logger } from 'pino';
import type { RuleOptions } from '../contracts/index.js';
import { checkpointNamespace } from '../runtime/checkpoint.js';
import { sinkCacheNamespace } from '../connectors/pipeline/sinknode.js';
import type { Membership } from './membership.js';
import type { Lease, Leases } from './leases.js';
import type { StateStore } from './state-store.js';
import type { StateRouting } from './store.js';
import { instanceOfUnit, ownerOf, ruleOfUnit, unitsOf, type Unit } from './placement.js';

/** The part of the lease timeout after which a node that is not heard stops its rules. */
export const FENCE_AFTER = 0.6;
/** Leases taken or given up at once (each may open or close a rule). */
const MAX_IN_FLIGHT = 8;

/** What the coordinator needs of the rules service. */
export interface ClusterRules {
  ids(): string[];
  has(id: string): boolean;
  optionsOf(id: string): RuleOptions | undefined;
  /** the sink actions of a rule, for the names of its failure caches */
  actionTypesOf(id: string): string[][];
  /** plans the rule again and runs it here or not, as {@link Coordinator.runsHere} now says */
  reopen(id: string): Promise<void>;
}

export interface CoordinatorDeps {
  membership: Membership;
  leases: Leases;
  state: StateStore;
  rules: ClusterRules;
  /** the SHARED stream a rule reads, if any (its rules are placed together) */
  sharedStreamOf(rule: string): string | undefined;
  leaseTimeoutMs: number;
  logger: Logger;
}

const CHECKPOINT_PREFIX = checkpointNamespace('');

export class Coordinator implements StateRouting {
  /** units whose lease this node holds, with its epoch: the only epochs its state writes may use */
  private readonly held = new Map<string, number>();
  /** units running here */
  private readonly running = new Set<string>();
  /** per rule, its units running here: `runsHere` is asked for every rule of every listing */
  private readonly runningByRule = new Map<string, Set<string>>();
  /** units being taken or given up */
  private readonly busy = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private scheduled = false;
  /** takes and give-ups waiting for a slot, and how many run now */
  private readonly queue: Array<() => Promise<void>> = [];
  private active = 0;
  private stopped = false;
  private fenced = false;
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly deps: CoordinatorDeps) {}

  get nodeId(): string {
    return this.deps.membership.id;
  }

  start(): void {
    const { membership, leases } = this.deps;
    this.unsubscribe.push(membership.onNodesChange(() => this.schedule()));
    this.unsubscribe.push(leases.onLeaseChange((unit, lease) => this.onLease(unit, lease)));
    const tick = Math.max(50, Math.min(500, Math.floor(this.deps.leaseTimeoutMs / 8)));
    // the fence is checked on its own clock: a take or a give-up that lasts must not delay it
    this.timer = setInterval(() => {
      this.checkFence();
      this.schedule();
    }, tick);
    this.timer.unref();
    this.schedule();
  }

  /** Something changed (a rule, a node, a lease): look again soon, once. */
  schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      try {
        this.reconcile();
      } catch (err) {
        this.deps.logger.warn({ err }, 'cluster placement failed; trying again');
      }
    });
  }

  // ---------------------------------------------------------------------------------------------- queries

  /** Whether this node runs rule `id` (or one of its instances) now. */
  runsHere(id: string): boolean {
    return this.runningByRule.has(id);
  }

  /** The instances of a parallel rule running here, in order. */
  localInstances(id: string): number[] {
    const out: number[] = [];
    for (const u of this.runningByRule.get(id) ?? []) {
      const i = instanceOfUnit(u);
      if (i !== undefined) out.push(i);
    }
    return out.sort((a, b) => a - b);
  }

  private startRunning(unit: string): void {
    this.running.add(unit);
    const rule = ruleOfUnit(unit);
    let units = this.runningByRule.get(rule);
    if (!units) this.runningByRule.set(rule, (units = new Set()));
    units.add(unit);
  }

  private stopRunning(unit: string): void {
    this.running.delete(unit);
    const rule = ruleOfUnit(unit);
    const units = this.runningByRule.get(rule);
    units?.delete(unit);
    if (units?.size === 0) this.runningByRule.delete(rule);
  }

  private stopRunningAll(): void {
    this.running.clear();
    this.runningByRule.clear();
  }

  /** The live nodes holding a lease of rule `id` (or of one of its instances), this one included. */
  holders(id: string): string[] {
    const { leases, membership } = this.deps;
    const out = new Set<string>();
    for (const u of this.unitIds(id)) {
      const l = leases.current(u);
      if (l && membership.alive(l.node, l.session)) out.add(l.node);
    }
    return [...out].sort();
  }

  /** Ids of every unit of a rule as its options stand. */
  private unitIds(id: string): string[] {
    const o = this.deps.rules.optionsOf(id);
    const n = o?.parallelism ?? 1;
    return n <= 1 ? [id] : Array.from({ length: n }, (_, i) => `${id}#${i}`);
  }

  /** StateRouting: the unit of a state namespace, and this node's epoch for it. */
  stateUnit(ns: string): { unit: string; epoch: number | undefined; placed: boolean } {
    if (ns.startsWith(CHECKPOINT_PREFIX)) {
      const unit = ns.slice(CHECKPOINT_PREFIX.length);
      return { unit, epoch: this.held.get(unit), placed: this.deps.rules.has(ruleOfUnit(unit)) };
    }
    // a sink cache: `sink/<unit><type>_<index>0`, matched against the units of known rules (held ones first)
    const match = (unit: string): boolean =>
      this.deps.rules
        .actionTypesOf(ruleOfUnit(unit))
        .some((types, i) => types.some((t) => sinkCacheNamespace(unit, t, i) === ns));
    for (const unit of this.held.keys()) if (match(unit)) return { unit, epoch: this.held.get(unit), placed: true };
    for (const id of this.deps.rules.ids())
      for (const unit of this.unitIds(id)) if (match(unit)) return { unit, epoch: undefined, placed: true };
    // a run the cluster does not place (a rule trial): its state is its own
    return { unit: ns, epoch: undefined, placed: false };
  }

  // ---------------------------------------------------------------------------------------------- the loop

  private units(): Unit[] {
    const { rules } = this.deps;
    const out: Unit[] = [];
    for (const id of rules.ids()) {
      const o = rules.optionsOf(id);
      if (!o) continue;
      out.push(...unitsOf(id, { parallelism: o.parallelism, node: o.node }, this.deps.sharedStreamOf(id)));
    }
    return out;
  }

  /** Whether this node has not been heard for too long: then it fences itself (at once, whatever else runs). */
  private checkFence(): void {
    const silentFor = this.deps.membership.sinceLastAckedBeat();
    if (silentFor <= FENCE_AFTER * this.deps.leaseTimeoutMs) return;
    if (this.held.size > 0 || this.running.size > 0) void this.selfFence(silentFor);
    this.fenced = true;
  }

  /** Compares the placement with what runs here and queues the takes and give-ups that differ. */
  private reconcile(): void {
    if (this.stopped) return;
    const { membership } = this.deps;
    this.checkFence();
    if (this.fenced) {
      if (membership.sinceLastAckedBeat() > FENCE_AFTER * this.deps.leaseTimeoutMs) return;
      this.fenced = false;
      this.deps.logger.info('cluster backend acknowledges heartbeats again: taking rules again');
    }
    const me = membership.id;
    const live = membership.liveNodes();
    if (!live.includes(me)) return;
    const mine = new Map<string, string>();
    const placed = new Set<string>();
    for (const u of this.units()) {
      placed.add(u.id);
      if (ownerOf(u, live) === me) mine.set(u.id, u.rule);
    }
    for (const [unit, rule] of mine)
      if (!this.held.has(unit) && !this.busy.has(unit)) this.enqueue(unit, () => this.take(unit, rule));
    for (const unit of this.held.keys()) {
      if (mine.has(unit) || this.busy.has(unit)) continue;
      const rule = ruleOfUnit(unit);
      // placed on another node, pinned elsewhere, or no longer a unit of any rule (then its state goes too)
      this.enqueue(unit, () => this.giveUp(unit, rule, !placed.has(unit)));
    }
    for (const l of this.abandoned(me, live)) this.enqueue(l.unit, () => this.dropAbandoned(l));
  }

  /** Queues work on a unit (marked busy until it ran), run with at most {@link MAX_IN_FLIGHT} at once. */
  private enqueue(unit: string, task: () => Promise<void>): void {
    this.busy.add(unit);
    this.queue.push(async () => {
      try {
        await task();
      } finally {
        this.busy.delete(unit);
      }
    });
    this.pump();
  }

  private pump(): void {
    while (this.active < MAX_IN_FLIGHT && this.queue.length > 0) {
      const task = this.queue.shift()!;
      this.active++;
      void task()
        .catch((err: unknown) => this.deps.logger.warn({ err }, 'cluster placement step failed'))
        .finally(() => {
          this.active--;
          this.pump();
          if (this.active === 0 && this.queue.length === 0) this.schedule();
        });
    }
  }

  /**
   * Leases of deleted rules whose holder is gone (it died before it could give them up): the first live node removes
   * them with their state.
   */
  private abandoned(me: string, live: string[]): Lease[] {
    if (live[0] !== me) return [];
    const { leases, membership, rules } = this.deps;
    return leases
      .all()
      .filter((l) => !rules.has(ruleOfUnit(l.unit)) && !membership.alive(l.node, l.session) && !this.busy.has(l.unit));
  }

  private async dropAbandoned(l: Lease): Promise<void> {
    if (await this.deps.leases.release(l.unit, l.epoch)) await this.deps.state.drop(l.unit);
  }

  private async take(unit: string, rule: string): Promise<void> {
    const { leases, membership, state, rules, logger } = this.deps;
    const epoch = await leases.acquire(
      unit,
      { node: membership.id, session: membership.session },
      (l) => !membership.alive(l.node, l.session),
    );
    if (epoch === undefined) return;
    // before anything runs: from now on no earlier holder can write this unit's state
    const fenced = await state.fence(unit, epoch);
    if (!fenced || this.stopped || this.fenced) {
      if (!fenced) logger.warn('the state of %s was fenced by a later holder; giving the lease back', unit);
      await leases.release(unit, epoch);
      return;
    }
    this.held.set(unit, epoch);
    this.startRunning(unit);
    logger.info({ unit, epoch }, 'cluster: running %s here', unit);
    await rules.reopen(rule);
  }

  private async giveUp(unit: string, rule: string, dropState: boolean): Promise<void> {
    const { leases, state, rules, logger } = this.deps;
    this.stopRunning(unit);
    // the run stops first, writing its last checkpoint under this node's epoch
    if (rules.has(rule)) await rules.reopen(rule);
    const epoch = this.held.get(unit);
    this.held.delete(unit);
    if (dropState) await state.drop(unit);
    if (epoch !== undefined) await leases.release(unit, epoch);
    logger.info('cluster: %s no longer runs here', unit);
  }

  /** Stops every run here and refuses every state write, before any lease of this node can expire. */
  private async selfFence(silentFor: number): Promise<void> {
    const { logger, rules } = this.deps;
    this.fenced = true;
    const ruleIds = new Set([...this.running, ...this.held.keys()].map(ruleOfUnit));
    logger.error(
      'cluster backend has not acknowledged a heartbeat for %d ms: stopping the %d rules of this node before its leases can expire',
      Math.round(silentFor),
      ruleIds.size,
    );
    // writes are refused from this instant; the runs stop next
    this.held.clear();
    this.stopRunningAll();
    await Promise.all([...ruleIds].map((id) => rules.reopen(id).catch(() => undefined)));
  }

  /** The lease watch: a unit held here that another holder took (or that vanished) stops running here at once. */
  private onLease(unit: string, lease: Lease | undefined): void {
    const epoch = this.held.get(unit);
    if (epoch !== undefined && !this.busy.has(unit)) {
      const mine = lease && lease.session === this.deps.membership.session && lease.epoch === epoch;
      if (!mine) {
        this.deps.logger.warn(
          'cluster: the lease of %s was taken by %s; stopping it here',
          unit,
          lease?.node ?? 'nobody',
        );
        this.held.delete(unit);
        this.stopRunning(unit);
        void this.deps.rules.reopen(ruleOfUnit(unit)).catch(() => undefined);
      }
    }
    this.schedule();
  }

  /** Graceful shutdown: every run here stops, then its lease is released so that the others take over at once. */
  async close(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const u of this.unsubscribe) u();
    this.queue.length = 0;
    while (this.active > 0) await new Promise((r) => setTimeout(r, 20));
    const held = [...this.held];
    const ruleIds = new Set([...this.running].map(ruleOfUnit));
    this.stopRunningAll();
    await Promise.all([...ruleIds].map((id) => this.deps.rules.reopen(id).catch(() => undefined)));
    this.held.clear();
    await Promise.all(held.map(([unit, epoch]) => this.deps.leases.release(unit, epoch).catch(() => false)));
  }
}
