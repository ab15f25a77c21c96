/**
 * Cluster mode as the composition root sees it (docs/cluster.md): {@link openCluster} opens the backend and the
 * shared store before any service reads the store; {@link Cluster.attach} hands remote changes to the services once
 * they are built; {@link Cluster.start} joins the cluster once the REST API listens (the node's address is known).
 * The cluster is the rules service's {@link RulePlacement} and wraps its topology builder, so that a rule runs here
 * only while this node holds its lease.
 */
import type { Logger } from 'pino';
import type { EddyConfig } from '../config/index.js';
import type { TopologyBuilder } from '../contracts/index.js';
import type { StreamCatalog } from '../catalog/types.js';
import type { RemoteRuleStatus, RulePlacement, RuleService } from '../rules/service.js';
import type { ClusterBackend } from './backend.js';
import { settle, type ClusterSettings } from './config.js';
import { ClusterStore } from './store.js';
import { Membership, type NodeView } from './membership.js';
import { Leases } from './leases.js';
import { Coordinator } from './coordinator.js';
import { StatusBoard, type PublishedRule } from './status-board.js';
import { InstanceBuilder } from './instances.js';
import { remoteChangeApplier, type RemoteTargets } from './apply.js';

export { clusterSettings, type ClusterSettings } from './config.js';

/** `GET /cluster` (docs/cluster.md §5). */
export interface ClusterView {
  nodes: Array<{ id: string; rest: string; alive: boolean; lastSeen: number; rules: string[] }>;
  backend: 'nats' | 'redis';
}

/** Opens the backend named by the settings and the metadata store on it. */
export async function openCluster(settings: ClusterSettings, logger: Logger): Promise<Cluster> {
  const log = logger.child({ module: 'cluster' });
  let backend: ClusterBackend;
  if (settings.backend === 'nats') {
    const { openNatsBackend } = await import('./nats-backend.js');
    backend = await openNatsBackend({
      name: settings.name,
      servers: settings.nats.servers,
      replicas: settings.nats.replicas,
      logger: log,
    });
  } else {
    const { openRedisBackend } = await import('./redis-backend.js');
    backend = await openRedisBackend({ name: settings.name, ...settings.redis, logger: log });
  }
  const cluster = new Cluster(settings, backend, log);
  try {
    await cluster.openStore();
  } catch (err) {
    await backend.close().catch(() => undefined);
    throw err;
  }
  return cluster;
}

export class Cluster implements RulePlacement {
  private storeOpened: ClusterStore | undefined;
  private membership: Membership | undefined;
  private leases: Leases | undefined;
  private coordinator: Coordinator | undefined;
  private board: StatusBoard | undefined;
  private rules: RuleService | undefined;
  private id = '';

  constructor(
    private settings: ClusterSettings,
    readonly backend: ClusterBackend,
    private readonly logger: Logger,
  ) {}

  /** @internal */
  async openStore(): Promise<void> {
    this.storeOpened = await ClusterStore.open(this.backend, () => this.id, this.logger);
  }

  /** The metadata store every node shares. */
  get store(): ClusterStore {
    if (!this.storeOpened) throw new Error('the cluster store is not open');
    return this.storeOpened;
  }

  get nodeId(): string {
    return this.id;
  }

  /** One line for the start banner: the cluster, its backend and this node. */
  describe(): string {
    const where =
      this.backend.kind === 'nats'
        ? this.settings.nats.servers.join(',')
        : `redis ${this.settings.redis.host}:${this.settings.redis.port} db ${this.settings.redis.db}`;
    return `${this.settings.name} on ${this.backend.kind === 'nats' ? `nats ${where}` : where}, node ${this.id}`;
  }

  /** The rules service's builder: the instances of a parallel rule placed here (instances.ts). */
  builder(inner: TopologyBuilder): TopologyBuilder {
    return new InstanceBuilder(inner, (rule) => this.coordinator?.localInstances(rule) ?? []);
  }

  /** Hands the changes other nodes make to the services that keep them in memory. */
  attach(targets: Omit<RemoteTargets, 'rulesChanged' | 'logger'>): void {
    this.rules = targets.rules;
    this.store.onRemoteChange(
      remoteChangeApplier({ ...targets, logger: this.logger, rulesChanged: () => this.coordinator?.schedule() }),
    );
  }

  /** Joins the cluster: heartbeats, leases, placement and status, now that the REST API listens on `port`. */
  async start(config: EddyConfig, port: number, catalog: StreamCatalog): Promise<void> {
    const rules = this.rules;
    if (!rules) throw new Error('the cluster was not attached to the services');
    this.settings = settle(this.settings, config, port);
    this.id = this.settings.nodeId;
    const membership = new Membership(
      this.backend.table('nodes'),
      { id: this.id, rest: this.settings.rest, startedAt: Date.now() },
      this.settings.leaseTimeoutMs,
      this.logger,
    );
    this.membership = membership;
    await membership.start();
    this.leases = new Leases(this.backend.table('leases'));
    await this.leases.start();
    this.board = new StatusBoard(
      this.backend.table('status'),
      this.id,
      { published: () => this.published() },
      this.logger,
    );
    await this.board.start();
    this.coordinator = new Coordinator({
      membership,
      leases: this.leases,
      state: this.store.state,
      rules,
      sharedStreamOf: (id) => rules.readsOf(id).find((name) => catalog.get(name)?.options.SHARED === true),
      leaseTimeoutMs: this.settings.leaseTimeoutMs,
      logger: this.logger,
    });
    this.store.routeStateBy(this.coordinator);
    this.coordinator.start();
    this.logger.info(
      'joined cluster %s (%s) as node %s, REST at %s',
      this.settings.name,
      this.backend.kind,
      this.id,
      this.settings.rest,
    );
  }

  // ---------------------------------------------------------------------------------------------- RulePlacement

  runsHere(id: string): boolean {
    return this.coordinator?.runsHere(id) ?? false;
  }

  changed(): void {
    this.coordinator?.schedule();
  }

  elsewhere(id: string): RemoteRuleStatus | undefined {
    if (!this.coordinator || !this.board) return undefined;
    const nodes = this.coordinator.holders(id).filter((n) => n !== this.id);
    return nodes.length === 0 ? undefined : this.board.combine(id, nodes);
  }

  /** What this node publishes about the rules it runs. */
  private published(): Record<string, PublishedRule> {
    const rules = this.rules;
    const out: Record<string, PublishedRule> = {};
    if (!rules || !this.coordinator) return out;
    const cpu = rules.cpuUsage();
    for (const id of rules.ids()) {
      if (!this.coordinator.runsHere(id)) continue;
      const s = rules.summary(id);
      out[id] = [s.status, s.recordsIn, s.recordsOut, s.exceptions, s.lastException, cpu[id] ?? 0];
    }
    return out;
  }

  // ---------------------------------------------------------------------------------------------- API

  /** The REST address of another live node running rule `id`, to forward a request about it to. */
  forwardTarget(id: string): string | undefined {
    if (!this.coordinator || !this.membership || this.coordinator.runsHere(id)) return undefined;
    for (const node of this.coordinator.holders(id)) {
      if (node === this.id) continue;
      const rest = this.membership.info(node)?.rest;
      if (rest) return rest;
    }
    return undefined;
  }

  /**
   * Whether this node cleans up after a deleted rule (checkpoints, caches, broker sessions): the node that ran it, or
   * any node when none runs it — never one while another still runs it.
   */
  cleansUp(id: string): boolean {
    if (!this.coordinator) return true;
    return this.coordinator.runsHere(id) || this.coordinator.holders(id).every((n) => n === this.id);
  }

  view(): ClusterView {
    const nodes: NodeView[] = this.membership?.view() ?? [];
    const byNode = new Map<string, Set<string>>();
    for (const l of this.leases?.all() ?? []) {
      const rule = l.unit.split('#')[0];
      let set = byNode.get(l.node);
      if (!set) byNode.set(l.node, (set = new Set()));
      set.add(rule);
    }
    return {
      nodes: nodes.map((n) => ({
        id: n.id,
        rest: n.rest,
        alive: n.alive,
        lastSeen: n.lastSeen,
        rules: [...(byNode.get(n.id) ?? [])].sort(),
      })),
      backend: this.backend.kind,
    };
  }

  /** Leaves the cluster: the rules here stop and their leases are released, so the others take over at once. */
  async stop(): Promise<void> {
    await this.coordinator?.close();
    await this.board?.stop(true);
    await this.leases?.stop();
    await this.membership?.stop(true);
  }

  /** Closes the store and the backend connection (last, after every service). */
  async closeStore(): Promise<void> {
    await this.storeOpened?.close();
    await this.backend.close();
  }
}
