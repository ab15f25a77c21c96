/**
 * Builds and runs the topology of a graph rule (docs/runtime.md §1.4) from its {@link GraphPlan}: source nodes,
 * the SQL operators each graph node maps to (filter, HAVING, projection, group by, ORDER BY, windows, joins, lookup
 * joins, watermarks) plus the graph-only ones (plan/graph.ts, runtime/graph-ops.ts), and one sink node per sink.
 * Nodes are named `op_<key>`, `sink_<key>` after the graph's keys, sources `source_<stream>` or `source_<key>` (docs/runtime.md §1.6); a lookup join
 * is `op_<table>` and a sink's batch node `op_<key>_0_batch`.
 */
import type { Logger } from 'pino';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { ConnectorContext, RuleDef, RuleOptions } from '../contracts/index.js';
import type { QueryPlan } from '../plan/plan.js';
import type { GraphOpNode, GraphPlan } from '../plan/graph.js';
import type { QueueNode, Receiver } from './node.js';
import { buildNode, buildSource, type BuildEnv } from './factories.js';
import { TopologyBase, type RuntimeEnv } from './topology-base.js';
import {
  FunctionNode,
  GraphOrderNode,
  GraphSinkReceiver,
  GraphWatermarkNode,
  PickNode,
  ScriptNode,
  SwitchNode,
} from './graph-ops.js';

/** One planned, runnable instance of a graph rule. */
export class GraphTopology extends TopologyBase {
  protected readonly pausesSources = false;
  private readonly byKey = new Map<string, QueueNode>();

  constructor(
    rule: RuleDef,
    options: RuleOptions,
    logger: Logger,
    readonly plan: GraphPlan,
    env: RuntimeEnv,
  ) {
    super(rule, options, logger, env, plan.newContext(rule.id, env.clock.now()));
    for (const s of plan.sinks) {
      if (!env.connectors.sink(s.type)) throw new EddyError(ErrorCode.Executor, `sink ${s.type} is not defined`);
    }
    const bufferLength = Math.max(1, options.bufferLength);
    const cctx: ConnectorContext = {
      ruleId: rule.id,
      logger,
      dataDir: env.dataDir,
    };
    // each node reads its own stage plan
    const envFor = (stage: QueryPlan): BuildEnv => ({
      op: { ctx: this.ctx, plan: stage, sendError: options.sendError, bufferLength },
      options,
      eventTime: options.isEventTime,
      clock: env.clock,
      connectors: env.connectors,
      shared: env.shared,
      lookups: env.lookups,
      connectorContext: () => cctx,
      makerOf: (sp) => ({
        name: sp.name,
        def: sp.def,
        timestampField: sp.timestampField,
        clock: env.clock,
        schema: sp.schema,
      }),
    });
    for (const s of plan.sources) {
      const src = buildSource(
        { kind: 'source', name: s.name, inputs: [], source: s.plan, decodes: true },
        envFor(s.stage),
      );
      this.adoptSource(src);
      this.adopt(src);
      this.byKey.set(s.key, src);
    }
    for (const o of plan.ops) {
      const node = this.operator(o, envFor(o.plan));
      this.adopt(node);
      this.byKey.set(o.key, node);
      let entry: Receiver = node;
      if (o.op.kind === 'window' && o.op.ownWatermark) {
        // an event-time window with no watermark node above it orders and releases its rows itself
        const wm = new GraphWatermarkNode(
          `${o.name}_watermark`,
          bufferLength,
          o.op.ownWatermark,
          options.lateTolerance,
          true,
        );
        wm.fatal = (err) => this.fail(err);
        wm.outputs.push(node);
        this.inner.push(wm);
        entry = wm;
      }
      for (const e of o.inputs) this.link(e.from, e.port, entry, node.name);
    }
    plan.sinks.forEach((s, index) => {
      // batchSize / lingerInterval: a batch node before the sink, as for SQL rules (docs/runtime.md §1.6)
      const { sink, batch } = this.addSink(
        { index, type: s.type, props: s.props, name: s.name },
        `op_${s.key}_0_batch`,
      );
      const receiver = new GraphSinkReceiver(batch ?? sink);
      for (const e of s.inputs) this.link(e.from, e.port, receiver);
    });
  }

  /** the created streams and tables this rule reads */
  get reads(): readonly string[] {
    return this.plan.reads;
  }

  /** The node of a graph operator: the SQL operators through the plan's factories, the graph-only ones here. */
  private operator(o: GraphOpNode, env: BuildEnv): QueueNode {
    const op = o.op;
    const { name } = o;
    const inputs: readonly string[] = [];
    switch (op.kind) {
      case 'filter':
        return buildNode({ kind: 'filter', name, inputs, pred: op.pred, source: null }, env);
      case 'having':
        return buildNode({ kind: 'having', name, inputs, stage: op.stage }, env);
      case 'window':
        return buildNode({ kind: 'window', name, inputs, spec: op.spec }, env);
      case 'join':
        return buildNode({ kind: 'join', name, inputs, from: op.from, joins: op.joins }, env);
      case 'lookup':
        return buildNode({ kind: 'lookup', name, inputs, join: op.join }, env);
      case 'groupby':
        return buildNode({ kind: 'aggregate', name, inputs }, env);
      case 'function':
        return new FunctionNode(name, env.op, op.column, op.fn, op.agg);
      case 'pick':
        return new PickNode(name, env.op, o.plan.project);
      case 'orderby':
        return new GraphOrderNode(name, env.op, o.plan.order as NonNullable<typeof o.plan.order>);
      case 'switch':
        return new SwitchNode(name, env.op, op.cases, op.texts, op.stopAtFirstMatch);
      case 'watermark':
        return new GraphWatermarkNode(
          name,
          env.op.bufferLength,
          op.emitters,
          env.options.lateTolerance,
          op.sendWatermark,
        );
      case 'script':
        return new ScriptNode(name, env.op, op.script, op.isAgg);
    }
  }

  /** An edge from port `port` of node `fromKey` (a switch's case, else its single output). */
  private link(fromKey: string, port: number, to: Receiver, shownAs = to.name): void {
    const from = this.byKey.get(fromKey);
    if (!from) throw new EddyError(ErrorCode.Plan, `node ${fromKey} is not defined`);
    if (from instanceof SwitchNode) (from.cases[port] ?? from.cases[0]).push(to);
    else from.outputs.push(to);
    this.edge(from.name, shownAs);
  }
}
