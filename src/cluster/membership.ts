/**
 * Node heartbeats and liveness (docs/cluster.md §3). Each node writes its entry in the `nodes` table every quarter of
 * `cluster.leaseTimeout`; a node is alive while its entry is fresher than the lease timeout. Freshness is judged on
 * the backend server's clock (the time the server stamped the entry), never on the writer's: the clock of a node is
 * only used to measure how long it has been since it received an entry, and its offset from the server's clock is
 * estimated from the entries it receives.
 *
 * A node's entry carries a session id, new at every start: a node that restarts under the same id is a new holder,
 * and the leases its previous run held are taken over rather than inherited (leases.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { keyOf, partsOf, type Change, type Table, type Watch } from './backend.js';

/** What a node says about itself in its heartbeat. */
export interface NodeInfo {
  id: string;
  /** base URL of its REST API, as other nodes reach it */
  rest: string;
  /** new at every start of the process */
  session: string;
  /** Unix ms the process started (its own clock: informative only) */
  startedAt: number;
}

/** A node as the cluster sees it. */
export interface NodeView extends NodeInfo {
  /** the server's time of its last heartbeat, Unix ms */
  lastSeen: number;
  alive: boolean;
}

/** Samples of the server clock kept to estimate its offset (the best of the recent ones is used). */
const CLOCK_SAMPLES = 16;

export class Membership {
  readonly session = randomUUID();
  private readonly nodes = new Map<string, { info: NodeInfo; time: number }>();
  private readonly listeners = new Set<() => void>();
  private readonly samples: number[] = [];
  /** the server's clock minus this node's, as the recent samples tell (0 before any) */
  private offset = 0;
  private watch: Watch | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** `performance.now()` when the last heartbeat that the backend acknowledged was sent; -Infinity before */
  private lastAckedSend = -Infinity;
  private beating: Promise<boolean> | undefined;
  private stopped = false;

  constructor(
    private readonly table: Table,
    private readonly self: Omit<NodeInfo, 'session'>,
    private readonly leaseTimeoutMs: number,
    private readonly logger: Logger,
  ) {}

  get id(): string {
    return this.self.id;
  }

  /** Watches every node's entry, writes the first heartbeat and keeps beating. */
  async start(): Promise<void> {
    this.watch = this.table.watch('', (c) => this.onChange(c), { initial: true });
    await this.watch.ready;
    await this.beat();
    this.timer = setInterval(() => void this.beat(), this.beatEveryMs);
    this.timer.unref();
  }

  /** Heartbeat period: a quarter of the lease timeout, so that one lost heartbeat is never a missed lease. */
  get beatEveryMs(): number {
    return Math.max(100, Math.floor(this.leaseTimeoutMs / 4));
  }

  /** Writes this node's entry now; resolves whether the backend took it. */
  beat(): Promise<boolean> {
    if (this.beating) return this.beating;
    const sentAt = performance.now();
    const info: NodeInfo = { ...this.self, session: this.session };
    this.beating = this.table
      .put(keyOf(this.self.id), JSON.stringify(info))
      .then(() => {
        if (sentAt > this.lastAckedSend) this.lastAckedSend = sentAt;
        return true;
      })
      .catch((err: unknown) => {
        if (!this.stopped) this.logger.warn({ err: (err as Error).message }, 'cluster heartbeat failed');
        return false;
      })
      .finally(() => (this.beating = undefined));
    return this.beating;
  }

  /**
   * Milliseconds since the send of the last heartbeat the backend acknowledged: the server stamped that heartbeat
   * after it was sent, so every other node judges this one alive for at least `leaseTimeout` minus this.
   */
  sinceLastAckedBeat(): number {
    return performance.now() - this.lastAckedSend;
  }

  private onChange(c: Change): void {
    const id = partsOf(c.key)[0];
    if (c.value === undefined) {
      this.nodes.delete(id);
    } else {
      try {
        this.nodes.set(id, { info: JSON.parse(c.value) as NodeInfo, time: c.time });
      } catch {
        return;
      }
      this.samples.push(c.time - Date.now());
      if (this.samples.length > CLOCK_SAMPLES) this.samples.shift();
      this.offset = Math.max(...this.samples);
    }
    for (const l of this.listeners) l();
  }

  /**
   * The backend server's clock now, estimated from the entries received: an entry was stamped before it arrived, so
   * each sample underestimates the server's clock by the delivery delay, and the largest recent one is the closest.
   * Underestimating makes other nodes look alive slightly longer, never shorter.
   */
  serverNow(): number {
    return Date.now() + this.offset;
  }

  /** Called whenever a node's entry changes. */
  onNodesChange(cb: () => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  /** Whether node `id` (in session `session`, when given) has a heartbeat fresher than the lease timeout. */
  alive(id: string, session?: string): boolean {
    const n = this.nodes.get(id);
    if (!n || (session !== undefined && n.info.session !== session)) return false;
    if (id === this.self.id) return n.info.session === this.session && this.sinceLastAckedBeat() < this.leaseTimeoutMs;
    return this.serverNow() - n.time < this.leaseTimeoutMs;
  }

  /** Ids of the live nodes, sorted. */
  liveNodes(): string[] {
    return [...this.nodes.keys()].filter((id) => this.alive(id)).sort();
  }

  /** Every node with a heartbeat entry, sorted by id. */
  view(): NodeView[] {
    return [...this.nodes.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([id, n]) => ({ ...n.info, lastSeen: n.time, alive: this.alive(id) }));
  }

  info(id: string): NodeInfo | undefined {
    return this.nodes.get(id)?.info;
  }

  /** Stops beating; `leave` deletes this node's entry so that the others take its rules at once. */
  async stop(leave: boolean): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.watch?.stop();
    if (leave) await this.table.delete(keyOf(this.self.id)).catch(() => undefined);
  }
}
