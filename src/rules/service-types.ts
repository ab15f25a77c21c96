/** The types of the rules service (service.ts): its dependencies, cluster placement, listings and registry entries. */
import type { Logger } from 'pino';
import type { KVStore } from '../store/kv.js';
import type { NodeMetrics, RuleOptions } from '../contracts/index.js';
import type { SinkConfKeyLookup } from './definition.js';
import type { RuleEngine } from './engine.js';
import type { RuleState } from './state.js';
import type { RuleStateName } from './health.js';

export interface RuleServiceDeps {
  store: KVStore;
  logger: Logger;
  /** the server's `rule:` section: defaults of every rule's options */
  defaults: RuleOptions;
  engine: RuleEngine;
  /** `basic.timezone` (cron, datetime ranges, `last_invocation`) */
  timezone?: string;
  /** `basic.rulePatrolInterval` as Go duration text (default 10s) */
  rulePatrolInterval?: string;
  /** sink config-key look-up for `resourceId` secret restoration */
  sinkConfKey?: SinkConfKeyLookup;
  /** CPU sampling period (default 5000 ms) */
  cpuSampleMs?: number;
  /** longest wait for a topology to close (default 10 s) */
  closeTimeoutMs?: number;
  /** log folder, for rules with a `logFilename` option */
  logDir?: string;
  /** cluster mode: where rules run (absent on a single node, where every rule runs here) */
  placement?: RulePlacement;
}

/**
 * What a cluster node tells the rules service about where rules run (docs/cluster.md §3): a rule starts on this node
 * only while the cluster says it runs here, and the status of a rule run elsewhere is the one its node publishes.
 */
export interface RulePlacement {
  readonly nodeId: string;
  /** whether this node runs rule `id` now (it holds the lease of the rule, or of one of its instances) */
  runsHere(id: string): boolean;
  /** what the nodes running rule `id` elsewhere last published about it; undefined when no other node runs it */
  elsewhere(id: string): RemoteRuleStatus | undefined;
  /** a rule was created, updated or deleted here: where rules run may change */
  changed(id: string): void;
}

/** The status of a rule as the node running it publishes it (docs/cluster.md §5). */
export interface RemoteRuleStatus {
  /** the nodes running it (several for a rule with `parallelism`) */
  nodes: string[];
  /** the status text of `GET /rules` */
  status: string;
  recordsIn: number;
  recordsOut: number;
  exceptions: number;
  lastException: string;
  /** CPU ms over the last 30 s (`GET /rules/usage/cpu`) */
  cpuMs: number;
}

export interface RuleListEntry {
  id: string;
  name: string;
  status: string;
  /** the state beside the status text (rules/health.ts) */
  state: RuleStateName;
  /** cluster mode: the node(s) running the rule, comma-separated; empty when none does */
  node?: string;
}

export interface RuleMetricsSnapshot {
  id: string;
  /** 1 running, 2 degraded, 0 stopped, −1 stopped by an error (rules/health.ts) */
  status: 1 | 2 | 0 | -1;
  state: RuleStateName;
  /** node metrics in status order; empty unless running */
  nodes: readonly NodeMetrics[];
}

export interface CreateOptions {
  /** keep the rule (as `Stopped: fail to create the topo.`) when it cannot be planned, instead of rejecting it */
  keepUnplannable?: boolean;
  /** id used when the body has none (bundle map key) */
  defaultId?: string;
}

export interface Entry {
  state: RuleState;
  /**
   * The stored JSON text (docs/rest-api.md §4.4): the body as submitted after create/update, eKuiper's
   * re-serialisation after start/stop/tags. Describe and export return it.
   */
  text: string;
  /** streams/tables the SQL reads, as of the last successful validation */
  sources: string[];
}
