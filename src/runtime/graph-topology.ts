/**
 * Builds and runs the topology of a graph rule (docs/runtime.md §1.4) from its {@link GraphPlan}: source nodes,
 * the SQL operators each graph node maps to (filter, HAVING, projection, group by, ORDER BY, windows, joins, lookup
 * joins, watermarks) plus the graph-only ones (plan/graph.ts, runtime/graph-ops.ts), and one sink node per sink.
 * Nodes are named `source_<key>`, `op_<key>`, `sink_<key>` after the graph's keys (docs/runtime.md §1.6); a lookup join
 * is `op_<table>` and a sink's batch node `op_<key>_0_batch`.
 */
import type { Logger } from 'pino';
import { EddyError, ErrorCode } from '../core/errors.js';
import type {
  ConnectorContext,
  NodeMetrics,
  PrintableTopo,
  RuleDef,
  RuleOptions,
  SinkNode,
  Topology,
  Tuple,
} from '../contracts/index.js';
import type { EvalContext, QueryPlan } from '../plan/plan.js';
import type { GraphOpNode, GraphPlan } from '../plan/graph.js';
import { TopologySignals } from './signals.js';
import { closeInOrder } from './closing.js';
import type { Clock, TimerHandle } from './clock.js';
import type { ValueObject } from '../values/value.js';
import { decodeRow, decodeValue, encodeRow, encodeValue, loadCheckpoint, saveCheckpoint } from './checkpoint.js';
import type { TopologyDeps } from './topology-deps.js';
import { type QueueNode, SinkReceiver, type Receiver } from './node.js';
import { BatchNode, batchSettings } from './batch.js';
import { WindowNode } from './windows.js';
import { WatermarkNode } from './watermark.js';
import { type SharedSources, SourceNode } from './source.js';
import type { LookupTables } from './lookup.js';
import { buildNode, buildSource, type BuildEnv } from './factories.js';
import {
  FunctionNode,
  GraphOrderNode,
  GraphSinkReceiver,
  GraphWatermarkNode,
  PickNode,
  ScriptNode,
  SwitchNode,
} from './graph-ops.js';

export interface GraphEnv extends TopologyDeps {
  readonly clock: Clock;
  readonly shared: SharedSources;
  readonly lookups: LookupTables;
}

/** One planned, runnable instance of a graph rule. */
export class GraphTopology implements Topology {
  readonly ctx: EvalContext;
  private readonly byKey = new Map<string, QueueNode>();
  private readonly ordered: QueueNode[] = [];
  /** nodes inside an operator that the topology does not show (the watermark of a window that has none above it) */
  private readonly inner: QueueNode[] = [];
  private readonly sources: SourceNode[] = [];
  private readonly sinks: SinkNode[] = [];
  /** sink batch nodes (`op_<key>_0_batch`) */
  private readonly batches: BatchNode[] = [];
  private readonly edges = new Map<string, string[]>();
  private readonly signals = new TopologySignals();
  private opened = false;
  private closed = false;
  private checkpointTimer: TimerHandle | undefined;

  constructor(
    readonly rule: RuleDef,
    readonly options: RuleOptions,
    private readonly logger: Logger,
    readonly plan: GraphPlan,
    private readonly env: GraphEnv,
  ) {
    this.ctx = plan.newContext(rule.id, env.clock.now());
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
      src.onConnectorError = (err) => this.fail(err);
      src.onSourceEnd = () => this.sourceEnded();
      this.sources.push(src);
      this.byKey.set(s.key, src);
    }
    for (const o of plan.ops) {
      const node = this.operator(o, envFor(o.plan));
      node.fatal = (err) => this.fail(err);
      this.byKey.set(o.key, node);
      this.ordered.push(node);
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
      for (const e of o.inputs) this.connect(e.from, e.port, entry, node.name);
    }
    plan.sinks.forEach((s, index) => {
      const sink = env.createSinkNode({
        ruleId: rule.id,
        index,
        type: s.type,
        props: s.props,
        ruleOptions: options,
        logger,
        name: s.name,
      });
      sink.onFatal((err) => this.fail(err));
      this.sinks.push(sink);
      let receiver = new GraphSinkReceiver(sink);
      // batchSize / lingerInterval: a batch node before the sink, as for SQL rules (docs/runtime.md §1.6)
      const batch = batchSettings(this.sinkProps(s.type, s.props));
      if (batch) {
        const node = new BatchNode(`op_${s.key}_0_batch`, bufferLength, batch, env.clock);
        node.fatal = (err) => this.fail(err);
        this.batches.push(node);
        this.edge(node.name, sink.metrics.name);
        node.outputs.push(new SinkReceiver(sink));
        receiver = new GraphSinkReceiver(node);
      }
      for (const e of s.inputs) this.connect(e.from, e.port, receiver);
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

  private connect(fromKey: string, port: number, to: Receiver, shownAs = to.name): void {
    const from = this.byKey.get(fromKey);
    if (!from) throw new EddyError(ErrorCode.Plan, `node ${fromKey} is not defined`);
    if (from instanceof SwitchNode) (from.cases[port] ?? from.cases[0]).push(to);
    else from.outputs.push(to);
    this.edge(from.name, shownAs);
  }

  private edge(from: string, to: string): void {
    const list = this.edges.get(from) ?? [];
    list.push(to);
    this.edges.set(from, list);
  }

  /** a sink's properties over those of its `resourceId` config key */
  private sinkProps(type: string, props: Record<string, unknown>): Record<string, unknown> {
    const key = Object.keys(props).find((k) => k.toLowerCase() === 'resourceid');
    const rid = key === undefined ? undefined : props[key];
    if (typeof rid !== 'string') return props;
    try {
      return { ...this.env.connectors.sinkProps(type, rid), ...props };
    } catch {
      return props;
    }
  }

  // ---------------------------------------------------------------------------------------------- lifecycle

  async open(): Promise<void> {
    if (this.opened) return;
    this.opened = true;
    this.ctx.ruleStart = this.env.clock.now();
    if (this.options.qos >= 1) await this.restore();
    try {
      await Promise.all(this.sinks.map((s) => s.open()));
      for (const b of this.batches) await b.open();
      for (const n of this.ordered) await n.open();
      for (const n of this.inner) await n.open();
      for (const s of this.sources) await s.open();
    } catch (err) {
      await this.close().catch(() => {});
      throw err;
    }
    if (this.options.qos >= 1) this.scheduleCheckpoint();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.checkpointTimer?.cancel();
    this.checkpointTimer = undefined;
    const checkpoint = this.options.qos >= 1 && this.opened;
    await closeInOrder(
      [
        ...this.sources.map((s) => () => s.close()),
        ...(checkpoint ? [() => this.checkpoint()] : []),
        ...this.inner.map((n) => () => n.close()),
        ...this.ordered.map((n) => () => n.close()),
        ...this.batches.map((b) => () => b.close()),
        ...this.sinks.map((s) => () => s.close()),
      ],
      this.logger,
    );
  }

  onFatal(cb: (err: Error) => void): void {
    this.signals.onFatal(cb);
  }

  onEnd(cb: () => void): void {
    this.signals.onEnd(cb);
  }

  /**
   * Every bounded source finished: let the queued events drain, hand on partial batches and wait until every sink has
   * settled what it received (docs/runtime.md §1.3), then report the end.
   */
  private sourceEnded(): void {
    if (this.sources.length === 0 || !this.sources.every((s) => s.ended)) return;
    const wait = () => {
      if (this.closed) return;
      if (!this.sources.every((s) => s.idle)) {
        setImmediate(wait);
        return;
      }
      setImmediate(() => {
        if (this.closed) return;
        for (const b of this.batches) b.flushGathered();
        void Promise.all(this.sinks.map((s) => (s.flush ? s.flush() : Promise.resolve(true)))).then(() => {
          if (!this.closed) this.signals.end();
        });
      });
    };
    setImmediate(wait);
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.signals.fail(err);
  }

  nodes(): readonly NodeMetrics[] {
    const out: NodeMetrics[] = [];
    for (const s of this.sources) out.push(s.metrics);
    for (const n of this.ordered) out.push(n.metrics);
    for (const b of this.batches) out.push(b.metrics);
    for (const s of this.sinks) out.push(s.metrics);
    return out;
  }

  busyUs(): number {
    let t = 0;
    for (const m of this.nodes()) t += m.busyUs;
    return t;
  }

  printable(): PrintableTopo {
    const edges: Record<string, string[]> = {};
    for (const k of [...this.edges.keys()].sort()) edges[k] = (this.edges.get(k) as string[]).slice();
    return { sources: this.sources.map((s) => s.name), edges };
  }

  // ---------------------------------------------------------------------------------------------- checkpoints

  private scheduleCheckpoint(): void {
    const interval = this.options.checkpointInterval > 0 ? this.options.checkpointInterval : 300000;
    this.checkpointTimer = this.env.clock.setTimeout(() => {
      if (this.closed) return;
      this.checkpoint()
        .catch((err: unknown) => this.logger.warn({ err }, 'checkpoint failed'))
        .finally(() => {
          if (!this.closed) this.scheduleCheckpoint();
        });
    }, interval);
  }

  /** Saves the state of windows, watermarks and rewindable sources (qos ≥ 1, docs/runtime.md §1.9). */
  async checkpoint(): Promise<void> {
    const states: Record<string, unknown> = {};
    for (const n of [...this.ordered, ...this.inner]) {
      if (n instanceof WindowNode) {
        const s = n.snapshot();
        states[n.name] = {
          rows: s.rows.map(encodeRow),
          num: s.num,
          pending: s.pending ?? [],
        };
      } else if (n instanceof WatermarkNode) {
        const s = n.snapshot();
        states[n.name] = {
          maxTs: s.maxTs,
          watermark: s.watermark,
          rows: s.rows.map(encodeRow),
        };
      }
    }
    for (const b of this.batches) {
      const s = b.snapshot();
      states[b.name] = { rows: s.rows.map(encodeValue), count: s.count };
    }
    for (const src of this.sources) {
      const offset = src.offset();
      if (offset !== undefined) states[src.name] = { $$offset: encodeValue(offset) };
    }
    await saveCheckpoint(this.env.store, this.rule.id, {
      id: this.env.clock.now(),
      states,
    });
  }

  private async restore(): Promise<void> {
    const doc = await loadCheckpoint(this.env.store, this.rule.id);
    if (!doc) return;
    const byName = new Map<string, QueueNode>();
    for (const n of [...this.sources, ...this.ordered, ...this.inner, ...this.batches]) byName.set(n.name, n);
    for (const [name, raw] of Object.entries(doc.states)) {
      const n = byName.get(name);
      const s = raw as Record<string, unknown>;
      try {
        if (n instanceof WindowNode) {
          n.restore({
            rows: (s.rows as unknown[]).map(decodeRow),
            num: s.num as Record<string, number>,
            pending: s.pending as number[],
          });
        } else if (n instanceof WatermarkNode) {
          n.restore({
            maxTs: s.maxTs as Record<string, number>,
            watermark: s.watermark as number,
            rows: (s.rows as unknown[]).map((r) => decodeRow(r) as Tuple),
          });
        } else if (n instanceof BatchNode) {
          n.restore({
            rows: (s.rows as unknown[]).map((r) => decodeValue(r) as ValueObject),
            count: Number(s.count) || 0,
          });
        } else if (n instanceof SourceNode) {
          const offset = decodeValue(s.$$offset);
          if (offset !== null && typeof offset === 'object' && !Array.isArray(offset)) n.resume(offset as ValueObject);
        }
      } catch (err) {
        this.logger.warn({ err, node: name }, 'cannot restore checkpoint state');
      }
    }
  }
}
