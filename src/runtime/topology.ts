/**
 * Builds and runs the topology of one SQL rule: plans the query (plan/planner.ts), creates one node per plan node
 * (named as the plan says, docs/runtime.md §1.6), wires the edges, adds the sink nodes (connectors layer), and drives
 * open/close, fatal errors, metrics, the printable topology and qos ≥ 1 checkpoints.
 */
import type { Logger } from 'pino';
import type { ConnectorRegistry, RuleDef, RuleOptions, TopologyBuilder } from '../contracts/index.js';
import type { QueryPlan } from '../plan/plan.js';
import { planQuery } from '../plan/planner.js';
import { parallelismProblem } from '../plan/parallel.js';
import type { TopologyDeps } from './topology-deps.js';
import type { StreamCatalog } from '../catalog/types.js';
import { planGraph } from '../plan/graph.js';
import { GraphTopology } from './graph-topology.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import { systemClock } from './clock.js';
import { type QueueNode, SinkReceiver } from './node.js';
import { resolveSource, SharedSources, type TupleMaker } from './source.js';
import { LookupTables } from './lookup.js';
import { buildNode, buildSource, type BuildEnv } from './factories.js';
import { TopologyBase, type RuntimeEnv, type SinkSpec } from './topology-base.js';
import type { ValueObject } from '../values/value.js';

export type { TopologyDeps };
export { dropCheckpoints } from './checkpoint.js';

/** The builder plus the server-wide runtime state it owns. */
export interface RuntimeBuilder extends TopologyBuilder {
  build(rule: RuleDef & { sql: string }, options: RuleOptions, logger: Logger): RuleTopology;
  /** graph rules (docs/runtime.md §1.4) get a {@link GraphTopology} */
  build(rule: RuleDef, options: RuleOptions, logger: Logger): RuleTopology | GraphTopology;
  /** shared source instances (one per SHARED stream, reference-counted by rule) */
  readonly shared: SharedSources;
  /** lookup table instances: the catalog's `openLookup`/`closeLookup` ports call `openTable`/`closeTable` */
  readonly lookups: LookupTables;
  /** server shutdown: closes shared sources and lookup tables */
  close(): Promise<void>;
  /**
   * Builds a SQL rule against another catalog and connector registry (rule trial runs replace streams by mock
   * sources), sharing this builder's shared sources and lookup tables.
   */
  buildOverlay(rule: RuleDef, options: RuleOptions, logger: Logger, overlay: RuntimeOverlay): RuleTopology;
}

export interface RuntimeOverlay {
  readonly catalog: StreamCatalog;
  readonly connectors: ConnectorRegistry;
}

export function createTopologyBuilder(deps: TopologyDeps): RuntimeBuilder {
  const clock = deps.clock ?? systemClock;
  const shared = new SharedSources(deps.connectors, deps.logger, deps.dataDir);
  const lookups = new LookupTables(deps.connectors, deps.logger, deps.dataDir);
  const planWith = (catalog: StreamCatalog, connectors: ConnectorRegistry) => (sql: string, options: RuleOptions) =>
    planQuery(sql, {
      catalog,
      functions: deps.functions,
      options,
      // an MQTT source whose config sets `decompression` gets an op_<N>_decompress node (docs/runtime.md §1.6)
      decompresses: (def) => {
        try {
          return Boolean(resolveSource(connectors, def).props.decompression);
        } catch {
          return false;
        }
      },
    });
  const planner = deps.planner ?? planWith(deps.catalog, deps.connectors);
  return {
    shared,
    lookups,
    build: ((rule: RuleDef, options: RuleOptions, logger: Logger): RuleTopology | GraphTopology => {
      if (!rule.sql) {
        if (!rule.graph) throw new EddyError(ErrorCode.Plan, 'no graph');
        if (options.parallelism > 1)
          throw new EddyError(
            ErrorCode.Rule,
            `cannot run with parallelism ${options.parallelism}: graph rules run as one instance`,
          );
        const graph = planGraph(rule.graph, { catalog: deps.catalog, functions: deps.functions, options });
        return new GraphTopology(rule, options, logger, graph, { ...deps, clock, shared, lookups });
      }
      const plan = planner(rule.sql, options);
      const parallel = parallelismProblem(plan, options.parallelism);
      if (parallel)
        throw new EddyError(ErrorCode.Rule, `cannot run with parallelism ${options.parallelism}: ${parallel}`);
      return new RuleTopology(rule, options, logger, plan, { ...deps, clock, shared, lookups });
    }) as RuntimeBuilder['build'],
    buildOverlay(rule, options, logger, overlay) {
      if (!rule.sql) throw new EddyError(ErrorCode.Plan, 'rule trial runs take a sql rule');
      const plan = planWith(overlay.catalog, overlay.connectors)(rule.sql, options);
      return new RuleTopology(rule, options, logger, plan, { ...deps, ...overlay, clock, shared, lookups });
    },
    async close() {
      await shared.closeAll();
      await lookups.closeAll();
    },
  };
}

/** One planned, runnable instance of a SQL rule. */
export class RuleTopology extends TopologyBase {
  protected readonly pausesSources = true;
  private readonly nodesByName = new Map<string, QueueNode>();

  constructor(
    rule: RuleDef,
    options: RuleOptions,
    logger: Logger,
    readonly plan: QueryPlan,
    env: RuntimeEnv,
  ) {
    super(rule, options, logger, env, plan.newContext(rule.id, env.clock.now()));
    const sinks: SinkSpec[] = [];
    rule.actions.forEach((action, index) => {
      for (const [type, props] of Object.entries(action)) {
        if (!env.connectors.sink(type)) throw new EddyError(ErrorCode.Executor, `sink ${type} is not defined`);
        sinks.push({ type, props: props ?? {}, index });
      }
    });
    this.buildNodes();
    const last = this.ordered[this.ordered.length - 1];
    for (const s of sinks) {
      const { sink, batch } = this.addSink(s, `op_${s.type}_${s.index}_0_batch`);
      if (!last) continue;
      if (batch) {
        this.nodesByName.set(batch.name, batch);
        this.connect(last, batch);
      } else {
        this.connect(last, new SinkReceiver(sink));
      }
    }
  }

  private buildNodes(): void {
    const { plan, options, env, rule, logger } = this;
    const makers = new Map<string, TupleMaker>();
    const buildEnv: BuildEnv = {
      op: { ctx: this.ctx, plan, sendError: options.sendError, bufferLength: Math.max(1, options.bufferLength) },
      options,
      eventTime: plan.isEventTime,
      clock: env.clock,
      connectors: env.connectors,
      shared: env.shared,
      lookups: env.lookups,
      connectorContext: (sp) => ({
        ruleId: rule.id,
        logger,
        dataDir: env.dataDir,
        atLeastOnce: options.qos >= 1,
        streamName: sp.def.name,
        ...(rule.instance ? { share: { group: rule.id, instance: rule.instance.index } } : {}),
      }),
      makerOf: (sp) => {
        let m = makers.get(sp.name);
        if (!m) {
          m = {
            name: sp.name,
            def: sp.def,
            timestampField: plan.isEventTime && sp.role === 'stream' ? sp.timestampField : null,
            clock: env.clock,
            schema: sp.schema,
          };
          makers.set(sp.name, m);
        }
        return m;
      },
    };
    for (const n of plan.nodes) {
      let node: QueueNode;
      if (n.kind === 'source') {
        const src = buildSource(n, buildEnv);
        this.adoptSource(src);
        node = src;
      } else node = buildNode(n, buildEnv);
      if ((plan.usesHits || plan.usesAggHits) && n.kind !== 'source') node.direct = true;
      this.adopt(node);
      this.nodesByName.set(n.name, node);
      for (const input of n.inputs) {
        const from = this.nodesByName.get(input);
        if (!from) throw new EddyError(ErrorCode.Plan, `plan node ${n.name} reads unknown node ${input}`);
        this.connect(from, node);
      }
    }
  }

  async resetOffset(streamName: string, input: ValueObject): Promise<void> {
    const src = this.sources.find((s) => s.name === `source_${streamName}`);
    if (!src) throw new Error(`stream ${streamName} not found in topo`);
    src.resetOffset(input);
    // a restart resumes from the new offset, not from the last checkpoint's
    if (this.options.qos >= 1 && this.opened && !this.closed) await this.checkpoint();
  }
}
