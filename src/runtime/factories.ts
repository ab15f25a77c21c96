/**
 * One factory per plan node kind (plan/plan.ts {@link PlanNode}): each gets the node, typed by its kind with the
 * compiled stage it carries, and what the rule's nodes share. The table is checked by the compiler: a kind added to
 * the plan without a factory does not build. SQL rules build every node here, graph rules the SQL operators they
 * map to (runtime/graph-topology.ts).
 */
import type { ConnectorContext, ConnectorRegistry, RuleOptions, Row } from '../contracts/index.js';
import type { NodeKind, PlanNode, PlanNodeOf, SourcePlan } from '../plan/plan.js';
import type { Clock } from './clock.js';
import type { QueueNode } from './node.js';
import {
  AggregateNode,
  AnalyticNode,
  FilterNode,
  HavingNode,
  JoinAlignerNode,
  JoinNode,
  OrderNode,
  ProjectNode,
  ProjectSetNode,
  WindowFuncNode,
  type OpEnv,
} from './operators.js';
import { createWindowNode } from './windows.js';
import { WatermarkNode } from './watermark.js';
import {
  DecoderNode,
  PreprocessorNode,
  resolveSource,
  SourceNode,
  type SharedSources,
  type TupleMaker,
} from './source.js';
import { DecompressNode } from './decompress-node.js';
import { LookupNode, type LookupTables } from './lookup.js';
import { AsyncNode } from './async.js';

/** What the nodes of one rule share. */
export interface BuildEnv {
  /** the rule's evaluation context and plan, as the operators read them */
  readonly op: OpEnv;
  readonly options: RuleOptions;
  /** event-time rule: windows follow watermarks, sources read the TIMESTAMP field */
  readonly eventTime: boolean;
  readonly clock: Clock;
  readonly connectors: ConnectorRegistry;
  readonly shared: SharedSources;
  readonly lookups: LookupTables;
  /** the context a source's connector is provisioned with */
  connectorContext(source: SourcePlan): ConnectorContext;
  /** how a source's events become tuples (one per stream, shared by its source-side nodes) */
  makerOf(source: SourcePlan): TupleMaker;
}

type Factories = { readonly [K in NodeKind]: (node: PlanNodeOf<K>, env: BuildEnv) => QueueNode };

const role = (sp: SourcePlan): 'stream' | 'table' => (sp.role === 'table' ? 'table' : 'stream');

function isShared(sp: SourcePlan): boolean {
  const v = sp.def.options.SHARED;
  return v === true || String(v).toLowerCase() === 'true';
}

/** The source node of a stream or scan table (typed: the topologies keep their sources apart). */
export function buildSource(n: PlanNodeOf<'source'>, env: BuildEnv): SourceNode {
  return new SourceNode({
    nodeName: n.name,
    maker: env.makerOf(n.source),
    role: role(n.source),
    schema: n.source.schema,
    forwardRaw: !n.decodes,
    preprocessor: false,
    sendError: env.options.sendError,
    registry: env.connectors,
    shared: isShared(n.source) ? env.shared : null,
    connectorContext: env.connectorContext(n.source),
  });
}

const FACTORIES: Factories = {
  source: buildSource,
  decompress: (n, env) =>
    new DecompressNode(
      n.name,
      env.op.bufferLength,
      String(resolveSource(env.connectors, n.source.def).props.decompression ?? ''),
      env.options.sendError,
    ),
  decoder: (n, env) =>
    new DecoderNode(
      n.name,
      env.op.bufferLength,
      env.makerOf(n.source),
      role(n.source),
      n.source.schema,
      env.connectors,
      env.options.sendError,
      n.preprocessor,
    ),
  preprocessor: (n, env) =>
    new PreprocessorNode(n.name, env.op.bufferLength, env.makerOf(n.source), env.options.sendError),
  watermark: (n, env) => new WatermarkNode(n.name, env.op.bufferLength, n.streams, env.options.lateTolerance),
  analytic: (n, env) => new AnalyticNode(n.name, env.op, n.stage),
  async: (n, env) =>
    new AsyncNode(n.name, env.op.bufferLength, n.stage, env.op.ctx, env.op.plan, env.options.sendError),
  filter: (n, env) => new FilterNode(n.name, env.op, n.pred),
  windowFilter: (n, env) => new FilterNode(n.name, env.op, n.pred),
  window: (n, env) => {
    const { spec } = n;
    const { ctx, plan } = env.op;
    const trig = spec.trigger;
    // OVER (WHEN …) is evaluated on the event alone, and counts a hit for last_hit_*() when it fires
    const trigger = trig
      ? (row: Row): boolean => {
          ctx.setWindow(undefined, undefined);
          ctx.bindRow();
          const t = trig(row, ctx);
          if (t && spec.triggerUsesHits) plan.hits.hit(ctx, row.timestamp);
          return t;
        }
      : null;
    return createWindowNode(n.name, {
      spec,
      trigger,
      eventTime: env.eventTime,
      clock: env.clock,
      sendError: env.options.sendError,
      bufferLength: env.op.bufferLength,
      memoryLimit: env.options.memoryLimit,
    });
  },
  lookup: (n, env) =>
    new LookupNode(
      n.name,
      env.op.bufferLength,
      n.join,
      env.op.ctx,
      env.lookups,
      env.connectors,
      env.clock,
      env.options.sendError,
    ),
  join_aligner: (n, env) => new JoinAlignerNode(n.name, env.op, n.tables),
  join: (n, env) => new JoinNode(n.name, env.op, n.from, n.joins),
  aggregate: (n, env) => new AggregateNode(n.name, env.op),
  having: (n, env) => new HavingNode(n.name, env.op, n.stage),
  windowFunc: (n, env) => new WindowFuncNode(n.name, env.op, n.stage),
  order: (n, env) => new OrderNode(n.name, env.op, n.stage),
  project: (n, env) => new ProjectNode(n.name, env.op, n.stage),
  projectset: (n, env) => new ProjectSetNode(n.name, env.op, n.stage),
};

/** Builds the operator of one plan node. */
export function buildNode(node: PlanNode, env: BuildEnv): QueueNode {
  // the table's entry for this kind takes this kind's node: the compiler cannot follow that correlation itself
  const factory = FACTORIES[node.kind] as (n: PlanNode, env: BuildEnv) => QueueNode;
  return factory(node, env);
}
