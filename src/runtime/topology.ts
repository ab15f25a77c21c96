/**
 * Builds and runs the topology of one SQL rule: plans the query (plan/planner.ts), creates one node per plan node
 * (named as the plan says, docs/runtime.md §1.6), wires the edges, adds the sink nodes (connectors layer), and drives
 * open/close, fatal errors, metrics, the printable topology and qos ≥ 1 checkpoints.
 */
import type { Logger } from 'pino';
import {
  type Delivery,
  type ConnectorRegistry,
  type NodeMetrics,
  type PrintableTopo,
  type RuleDef,
  type RuleOptions,
  type SinkNode,
  type Topology,
  type TopologyBuilder,
} from '../contracts/index.js';
import type { EvalContext, QueryPlan } from '../plan/plan.js';
import { planQuery } from '../plan/planner.js';
import type { TopologyDeps } from './topology-deps.js';
import type { StreamCatalog } from '../catalog/types.js';

export type { TopologyDeps };
import { planGraph } from '../plan/graph.js';
import { GraphTopology } from './graph-topology.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import { TopologySignals } from './signals.js';
import { closeInOrder } from './closing.js';
import { systemClock, type Clock, type TimerHandle } from './clock.js';
import { type QueueNode, SinkReceiver, type Receiver } from './node.js';
import { AnalyticNode, JoinAlignerNode } from './operators.js';
import { WindowNode } from './windows.js';
import { WatermarkNode } from './watermark.js';
import { resolveSource, SharedSources, SourceNode, type TupleMaker } from './source.js';
import { LookupTables } from './lookup.js';
import { buildNode, buildSource, type BuildEnv } from './factories.js';
import { AsyncNode } from './async.js';
import { decodeRow, decodeValue, encodeRow, encodeValue, loadCheckpoint, saveCheckpoint } from './checkpoint.js';
import { BatchNode, batchSettings } from './batch.js';
import type { Value, ValueObject } from '../values/value.js';
import type { Tuple } from '../contracts/index.js';

export { dropCheckpoints } from './checkpoint.js';

/** How long a stop waits for the last acknowledged checkpoint (sinks confirming what they received). */
const FINAL_CHECKPOINT_WAIT_MS = 3000;
/** How long the end of a bounded source waits for the rule's sinks to send what they hold, without progress. */
const SINK_DRAIN_WAIT_MS = 30_000;

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
        const graph = planGraph(rule.graph, { catalog: deps.catalog, functions: deps.functions, options });
        return new GraphTopology(rule, options, logger, graph, { ...deps, clock, shared, lookups });
      }
      const plan = planner(rule.sql, options);
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

interface Env extends TopologyDeps {
  readonly clock: Clock;
  readonly shared: SharedSources;
  readonly lookups: LookupTables;
}

type AnyNode = QueueNode;

/** One planned, runnable instance of a rule. */
export class RuleTopology implements Topology {
  readonly ctx: EvalContext;
  private readonly nodesByName = new Map<string, AnyNode>();
  private readonly ordered: AnyNode[] = [];
  private readonly sources: SourceNode[] = [];
  private readonly sinks: SinkNode[] = [];
  /** sink batch nodes (`op_<type>_<i>_0_batch`), in action order */
  private readonly batches: BatchNode[] = [];
  private readonly edges = new Map<string, string[]>();
  private readonly signals = new TopologySignals();
  private checkpointTimer: TimerHandle | undefined;
  /** the checkpoint being taken; another is wanted when held deliveries arrived meanwhile */
  private checkpointRunning: Promise<void> | undefined;
  private checkpointWanted = false;
  /** cancels the checkpoint requested by held deliveries */
  private checkpointSoon: (() => void) | undefined;
  /** duration of the last checkpoint save, ms (stateful rules space their checkpoints by it) */
  private lastSaveMs = 0;
  private savedOnce = false;
  private opened = false;
  private closed = false;

  constructor(
    readonly rule: RuleDef,
    readonly options: RuleOptions,
    private readonly logger: Logger,
    readonly plan: QueryPlan,
    private readonly env: Env,
  ) {
    this.ctx = plan.newContext(rule.id, env.clock.now());
    const sinkTypes: Array<{ type: string; props: Record<string, unknown>; index: number }> = [];
    rule.actions.forEach((action, index) => {
      for (const [type, props] of Object.entries(action)) {
        if (!env.connectors.sink(type)) throw new EddyError(ErrorCode.Executor, `sink ${type} is not defined`);
        sinkTypes.push({ type, props: props ?? {}, index });
      }
    });
    this.buildNodes();
    const last = this.ordered[this.ordered.length - 1];
    for (const s of sinkTypes) {
      const sink = env.createSinkNode({
        ruleId: rule.id,
        index: s.index,
        type: s.type,
        props: s.props,
        ruleOptions: options,
        logger,
      });
      sink.onFatal((err) => this.fail(err));
      this.sinks.push(sink);
      if (!last) continue;
      const batch = batchSettings(this.sinkProps(s.type, s.props));
      if (batch) {
        const node = new BatchNode(
          `op_${s.type}_${s.index}_0_batch`,
          Math.max(1, options.bufferLength),
          batch,
          env.clock,
        );
        node.fatal = (err) => this.fail(err);
        this.batches.push(node);
        this.nodesByName.set(node.name, node);
        this.connect(last, node);
        this.connect(node, new SinkReceiver(sink));
      } else {
        this.connect(last, new SinkReceiver(sink));
      }
    }
  }

  // ---------------------------------------------------------------------------------------------- building

  /** an action's properties over those of its `resourceId` config key */
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

  private connect(from: AnyNode, to: Receiver): void {
    from.outputs.push(to);
    const list = this.edges.get(from.name) ?? [];
    list.push(to.name);
    this.edges.set(from.name, list);
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
        this.sources.push(src);
        node = src;
      } else node = buildNode(n, buildEnv);
      node.fatal = (err) => this.fail(err);
      if ((plan.usesHits || plan.usesAggHits) && n.kind !== 'source') node.direct = true;
      this.nodesByName.set(n.name, node);
      this.ordered.push(node);
      for (const input of n.inputs) {
        const from = this.nodesByName.get(input);
        if (!from) throw new EddyError(ErrorCode.Plan, `plan node ${n.name} reads unknown node ${input}`);
        this.connect(from, node);
      }
    }
    for (const src of this.sources) {
      src.onConnectorError = (err) => this.fail(err);
      src.onSourceEnd = () => this.sourceEnded();
      src.onPending = () => this.requestCheckpoint();
    }
  }

  // ---------------------------------------------------------------------------------------------- lifecycle

  /**
   * When every source of the rule can wait (docs/runtime.md §1.7), a full sink pauses them instead of dropping;
   * they resume once no sink is full. Otherwise full sinks drop and count, as before.
   */
  private wireBackpressure(): void {
    if (this.sources.length === 0 || !this.sources.every((s) => s.pausable)) return;
    let full = 0;
    for (const sink of this.sinks) {
      sink.onPressure?.((isFull) => {
        const before = full;
        full += isFull ? 1 : -1;
        if (before === 0 && full > 0) for (const s of this.sources) s.holdBack();
        else if (before > 0 && full === 0) for (const s of this.sources) s.release();
      });
    }
  }

  async open(): Promise<void> {
    if (this.opened) return;
    this.opened = true;
    this.ctx.ruleStart = this.env.clock.now();
    if (this.options.qos >= 1) await this.restore();
    try {
      await Promise.all(this.sinks.map((s) => s.open()));
      for (const b of this.batches) await b.open();
      for (const n of this.ordered) if (!(n instanceof SourceNode)) await n.open();
      for (const s of this.sources) await s.open();
      this.wireBackpressure();
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
    this.checkpointSoon?.();
    this.checkpointSoon = undefined;
    const checkpoint = this.options.qos >= 1 && this.opened;
    await closeInOrder(
      [
        ...(checkpoint ? [() => this.finalCheckpoint()] : []),
        ...this.sources.map((s) => () => s.close()),
        // the state as the sources left it; what arrived after the last acknowledged checkpoint comes again
        ...(checkpoint ? [() => this.checkpoint(false)] : []),
        ...this.ordered.filter((n) => !(n instanceof SourceNode)).map((n) => () => n.close()),
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
   * A bounded source finished: when every stream source has, let the queued events drain, hand on partial batches,
   * wait until every sink has settled what it received (docs/runtime.md §1.3), then report the end.
   */
  private sourceEnded(): void {
    const streams = this.sources.filter((s) => s.role === 'stream');
    if (streams.length === 0 || !streams.every((s) => s.ended)) return;
    // sinks holding what back-pressure kept are waited for while they make progress (a failing target is not)
    let sinksUntil = Date.now() + SINK_DRAIN_WAIT_MS;
    let sentBefore = -1;
    const wait = () => {
      if (this.closed) return;
      if (!this.ordered.every((n) => !(n instanceof SourceNode || n instanceof AsyncNode) || n.idle)) {
        setImmediate(wait);
        return;
      }
      const busy =
        this.ordered.some((n) => n.metrics.bufferLength > 0) ||
        this.sinks.some((sink) => sink.metrics.bufferLength > 0);
      const sent = this.sinks.reduce((a, sink) => a + sink.metrics.recordsOut + sink.metrics.exceptions, 0);
      if (sent !== sentBefore) {
        sentBefore = sent;
        sinksUntil = Date.now() + SINK_DRAIN_WAIT_MS;
      }
      if (Date.now() < sinksUntil && busy) {
        setTimeout(wait, 10);
        return;
      }
      // one more turn so that the operators downstream finish the last batch
      setImmediate(() => {
        if (this.closed) return;
        for (const b of this.batches) b.flushGathered();
        void Promise.all(this.sinks.map((s) => (s.flush ? s.flush() : Promise.resolve(true)))).then(() => {
          if (this.closed) return;
          this.signals.end();
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
    for (const n of this.ordered) out.push(n.metrics);
    for (const b of this.batches) out.push(b.metrics);
    for (const s of this.sinks) out.push(s.metrics);
    return out;
  }

  /** The queued nodes in {@link nodes} order (sinks excepted): rule workers tag them for tracing (docs/runtime.md §1.10). */
  queueNodes(): readonly QueueNode[] {
    return [...this.ordered, ...this.batches];
  }

  /** CPU µs spent in this rule's nodes so far (rules' CPU usage endpoint) */
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
      this.startCheckpoint();
      this.scheduleCheckpoint();
    }, interval);
  }

  /**
   * Held deliveries arrived: take a checkpoint soon, so that the broker gets its acknowledgements (it sends only a
   * limited number of unacknowledged messages). A rule without operator state checkpoints as fast as its sinks
   * confirm; a stateful one spaces its saves by a multiple of the last save's duration.
   */
  private requestCheckpoint(): void {
    if (this.closed || !this.opened) return;
    if (this.checkpointRunning) {
      this.checkpointWanted = true;
      return;
    }
    if (this.checkpointSoon) return;
    const gap = this.hasState()
      ? Math.min(Math.max(5, this.lastSaveMs * 4), this.options.checkpointInterval || 1000)
      : 0;
    const run = () => {
      this.checkpointSoon = undefined;
      this.startCheckpoint();
    };
    if (gap > 0) {
      const t = setTimeout(run, gap);
      this.checkpointSoon = () => clearTimeout(t);
    } else {
      const i = setImmediate(run);
      this.checkpointSoon = () => clearImmediate(i);
    }
  }

  /**
   * Starts a checkpoint now, from a timer or an immediate: between two macrotasks every node queue has drained (they
   * drain in microtasks), so each held delivery's effects are in an operator's state or in a sink.
   */
  private startCheckpoint(): void {
    if (this.closed) return;
    if (this.checkpointRunning) {
      this.checkpointWanted = true;
      return;
    }
    this.checkpointRunning = this.checkpoint(true)
      .catch((err: unknown) => this.logger.warn({ err }, 'checkpoint failed'))
      .finally(() => {
        this.checkpointRunning = undefined;
        if (this.checkpointWanted || this.sources.some((s) => s.hasPending)) {
          this.checkpointWanted = false;
          this.requestCheckpoint();
        }
      });
  }

  /** At stop: one more acknowledged checkpoint (bounded: a sink waiting for its broker must not hold the stop). */
  private async finalCheckpoint(): Promise<void> {
    const running = this.checkpointRunning;
    const taken = (async () => {
      if (running) await running;
      await new Promise<void>((resolve, reject) => setImmediate(() => this.checkpoint(true).then(resolve, reject)));
    })();
    let timer: NodeJS.Timeout | undefined;
    // past the wait the sinks close: their pending flushes resolve false and nothing more is acknowledged
    await Promise.race([
      taken,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, FINAL_CHECKPOINT_WAIT_MS))),
    ]);
    clearTimeout(timer);
    taken.catch((err: unknown) => this.logger.warn({ err }, 'checkpoint failed'));
  }

  private stateful: boolean | undefined;
  /** whether the rule has operator state to save (windows, watermarks, joins, analytic functions, batches, offsets) */
  private hasState(): boolean {
    if (this.stateful === undefined) {
      this.stateful =
        this.batches.length > 0 ||
        this.ordered.some(
          (n) =>
            n instanceof WindowNode ||
            n instanceof WatermarkNode ||
            n instanceof JoinAlignerNode ||
            n instanceof AnalyticNode,
        ) ||
        this.sources.some((s) => s.offset() !== undefined);
    }
    return this.stateful;
  }

  /**
   * Snapshots every stateful operator now and saves it (qos ≥ 1). With `acknowledge`, the deliveries the sources
   * held until now are released once every sink has settled what it received and the state is saved: the broker
   * then forgets them. Call it from a macrotask (see startCheckpoint).
   */
  async checkpoint(acknowledge = false): Promise<void> {
    const covered: Delivery[] = [];
    if (acknowledge) for (const s of this.sources) for (const d of s.takePending()) covered.push(d);
    const states: Record<string, unknown> = {};
    for (const n of this.ordered) {
      if (n instanceof WindowNode) {
        const s = n.snapshot();
        states[n.name] = { rows: s.rows.map(encodeRow), num: s.num, pending: s.pending ?? [] };
      } else if (n instanceof WatermarkNode) {
        const s = n.snapshot();
        states[n.name] = { maxTs: s.maxTs, watermark: s.watermark, rows: s.rows.map(encodeRow) };
      } else if (n instanceof JoinAlignerNode) {
        const s = n.snapshot();
        states[n.name] = Object.fromEntries(Object.entries(s).map(([k, rows]) => [k, rows.map(encodeRow)]));
      }
    }
    for (const b of this.batches) {
      const s = b.snapshot();
      states[b.name] = { rows: s.rows.map(encodeValue), count: s.count };
    }
    for (const src of this.sources) {
      const offset = src.offset();
      // key `$$offset` as in the reference's state map
      if (offset !== undefined) states[src.name] = { $$offset: encodeValue(offset) };
    }
    for (const n of this.ordered) {
      if (n instanceof AnalyticNode) {
        states[n.name] = n.snapshot().map((site) => site.map(([key, st]) => [key, encodeValue(st as Value)]));
      }
    }
    // Node queues drain in microtasks, so at a checkpoint (a timer, or close after the sources stopped) they are
    // empty: there are no in-flight events to save.
    const id = this.env.clock.now();
    if (covered.length > 0) {
      const settled = await Promise.all(this.sinks.map((s) => (s.flush ? s.flush() : Promise.resolve(true))));
      // a sink closed first: what it had not settled is not acknowledged, the broker sends it again
      if (!settled.every(Boolean)) return;
    }
    if (!acknowledge || this.hasState() || !this.savedOnce) {
      const t0 = Date.now();
      await saveCheckpoint(this.env.store, this.rule.id, { id, states });
      this.lastSaveMs = Date.now() - t0;
      this.savedOnce = true;
    }
    for (const d of covered) d.release();
  }

  async resetOffset(streamName: string, input: ValueObject): Promise<void> {
    const src = this.sources.find((s) => s.name === `source_${streamName}`);
    if (!src) throw new Error(`stream ${streamName} not found in topo`);
    src.resetOffset(input);
    // a restart resumes from the new offset, not from the last checkpoint's
    if (this.options.qos >= 1 && this.opened && !this.closed) await this.checkpoint();
  }

  private async restore(): Promise<void> {
    const doc = await loadCheckpoint(this.env.store, this.rule.id);
    if (!doc) return;
    for (const [name, raw] of Object.entries(doc.states)) {
      const n = this.nodesByName.get(name);
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
        } else if (n instanceof JoinAlignerNode) {
          n.restore(
            Object.fromEntries(
              Object.entries(s).map(([k, rows]) => [k, (rows as unknown[]).map((r) => decodeRow(r) as Tuple)]),
            ),
          );
        } else if (n instanceof SourceNode) {
          const offset = decodeValue(s.$$offset);
          if (offset !== null && typeof offset === 'object' && !Array.isArray(offset)) n.resume(offset as ValueObject);
        } else if (n instanceof AnalyticNode) {
          n.restore(
            (s as unknown as Array<Array<[string, unknown]>>).map((site) =>
              site.map(([key, st]) => [key, decodeValue(st)] as const),
            ),
          );
        } else if (n instanceof BatchNode) {
          n.restore({
            rows: (s.rows as unknown[]).map((r) => decodeValue(r) as ValueObject),
            count: Number(s.count) || 0,
          });
        }
      } catch (err) {
        this.logger.warn({ err, node: name }, 'cannot restore checkpoint state');
      }
    }
  }
}
