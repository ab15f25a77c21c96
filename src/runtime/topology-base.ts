/**
 * What SQL rules (runtime/topology.ts) and graph rules (runtime/graph-topology.ts) run alike once their nodes are
 * built: sinks and their batch nodes, open and close in order, fatal errors and the end of bounded sources, metrics,
 * the printable topology, and qos ≥ 1 checkpoints of every {@link Checkpointed} node (docs/runtime.md §1.9).
 */
import type { Logger } from 'pino';
import {
  ruleStateId,
  type Delivery,
  type NodeMetrics,
  type PrintableTopo,
  type RuleDef,
  type RuleOptions,
  type SinkNode,
  type Topology,
  type TraceSpan,
  type TraceStrategy,
} from '../contracts/index.js';
import type { EvalContext } from '../plan/plan.js';
import type { TopologyDeps } from './topology-deps.js';
import { TopologySignals } from './signals.js';
import type { Clock, TimerHandle } from './clock.js';
import { type QueueNode, type Receiver, SinkReceiver } from './node.js';
import { RuleTracer } from './trace.js';
import { BatchNode, batchSettings } from './batch.js';
import { SourceNode, type SharedSources } from './source.js';
import { AsyncNode } from './async.js';
import type { LookupTables } from './lookup.js';
import { isCheckpointed, loadCheckpoint, saveCheckpoint, type Checkpointed, type Json } from './checkpoint.js';

/** How long a stop waits for the last acknowledged checkpoint (sinks confirming what they received). */
const FINAL_CHECKPOINT_WAIT_MS = 3000;
/** The first retry after a checkpoint that could not be saved, and the longest wait between retries. */
const CHECKPOINT_RETRY_MS = 100;
const CHECKPOINT_RETRY_MAX_MS = 5000;
/** How long the end of a bounded source waits for the rule's sinks to send what they hold, without progress. */
const SINK_DRAIN_WAIT_MS = 30_000;

/** The server-wide runtime state every topology reads. */
export interface RuntimeEnv extends TopologyDeps {
  readonly clock: Clock;
  readonly shared: SharedSources;
  readonly lookups: LookupTables;
}

/** One sink of the rule: its index among the actions, connector type, properties and (graph rules) node name. */
export interface SinkSpec {
  readonly index: number;
  readonly type: string;
  readonly props: Record<string, unknown>;
  readonly name?: string;
}

export abstract class TopologyBase implements Topology {
  /** the nodes in metric order, sources included */
  protected readonly ordered: QueueNode[] = [];
  /** nodes inside an operator that the topology does not show */
  protected readonly inner: QueueNode[] = [];
  protected readonly sources: SourceNode[] = [];
  protected readonly sinks: SinkNode[] = [];
  /** sink batch nodes, in sink order */
  protected readonly batches: BatchNode[] = [];
  private readonly edges = new Map<string, string[]>();
  private readonly signals = new TopologySignals();
  /** whether a full sink pauses the sources that can wait (docs/runtime.md §1.7) */
  protected abstract readonly pausesSources: boolean;
  private checkpointTimer: TimerHandle | undefined;
  /** the checkpoint being taken; another is wanted when held deliveries arrived meanwhile */
  private checkpointRunning: Promise<void> | undefined;
  private checkpointWanted = false;
  /** deliveries of checkpoints that could not be saved: the next checkpoint covers them */
  private uncovered: Delivery[] = [];
  /** checkpoints failed in a row (a full disk, a store that is away); retries back off by it */
  private failedCheckpoints = 0;
  /** cancels the checkpoint requested by held deliveries */
  private checkpointSoon: (() => void) | undefined;
  /** duration of the last checkpoint save, ms (stateful rules space their checkpoints by it) */
  private lastSaveMs = 0;
  private savedOnce = false;
  private stateful: boolean | undefined;
  protected opened = false;
  protected closed = false;

  constructor(
    readonly rule: RuleDef,
    readonly options: RuleOptions,
    protected readonly logger: Logger,
    protected readonly env: RuntimeEnv,
    /** the rule's one evaluation context (plan/plan.ts) */
    readonly ctx: EvalContext,
  ) {}

  // ---------------------------------------------------------------------------------------------- building

  protected edge(from: string, to: string): void {
    const list = this.edges.get(from) ?? [];
    list.push(to);
    this.edges.set(from, list);
  }

  protected connect(from: QueueNode, to: Receiver): void {
    from.outputs.push(to);
    this.edge(from.name, to.name);
  }

  /** Reports the fatal errors of a node built for this topology, and adds it to the shown nodes. */
  protected adopt(node: QueueNode): void {
    node.fatal = (err) => this.fail(err);
    this.ordered.push(node);
  }

  /** Wires a source node's failures, end and held deliveries to this topology. */
  protected adoptSource(src: SourceNode): void {
    this.sources.push(src);
    src.onConnectorError = (err) => this.fail(err);
    src.onSourceEnd = () => this.sourceEnded();
    src.onPending = () => this.requestCheckpoint();
  }

  /**
   * Creates a sink node, and the batch node before it when its action batches (`batchName`): what the rule's last
   * node feeds is the batch node when there is one, else the sink.
   */
  protected addSink(spec: SinkSpec, batchName: string): { sink: SinkNode; batch: BatchNode | null } {
    const sink = this.env.createSinkNode({
      ruleId: this.rule.id,
      stateId: ruleStateId(this.rule),
      index: spec.index,
      type: spec.type,
      props: spec.props,
      ruleOptions: this.options,
      logger: this.logger,
      ...(spec.name !== undefined ? { name: spec.name } : {}),
    });
    sink.onFatal((err) => this.fail(err));
    this.sinks.push(sink);
    const settings = batchSettings(this.sinkProps(spec.type, spec.props));
    if (!settings) return { sink, batch: null };
    const batch = new BatchNode(batchName, Math.max(1, this.options.bufferLength), settings, this.env.clock);
    batch.fatal = (err) => this.fail(err);
    this.batches.push(batch);
    this.connect(batch, new SinkReceiver(sink));
    return { sink, batch };
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

  /** the operators: every shown node but the sources, then the inner ones */
  private operators(): QueueNode[] {
    return [...this.ordered.filter((n) => !(n instanceof SourceNode)), ...this.inner];
  }

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
      for (const n of this.operators()) await n.open();
      for (const s of this.sources) await s.open();
      if (this.pausesSources) this.wireBackpressure();
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
        ...this.operators().map((n) => () => n.close()),
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
    const nodes = [...this.ordered, ...this.inner];
    const wait = () => {
      if (this.closed) return;
      if (!nodes.every((n) => !(n instanceof SourceNode || n instanceof AsyncNode) || n.idle)) {
        setImmediate(wait);
        return;
      }
      const busy =
        nodes.some((n) => n.metrics.bufferLength > 0) || this.sinks.some((sink) => sink.metrics.bufferLength > 0);
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

  protected fail(err: Error): void {
    if (this.closed) return;
    this.signals.fail(err);
  }

  // ---------------------------------------------------------------------------------------------- metrics

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

  /** Rule tracing (runtime/trace.ts): every queued node records the spans of traced records while on. */
  trace(strategy: TraceStrategy | null, emit: (span: TraceSpan) => void): void {
    const tracer = strategy === null ? null : new RuleTracer(this.rule.id, strategy, emit);
    for (const n of this.queueNodes()) {
      if (tracer === null) n.stopTracing();
      else n.startTracing(tracer);
    }
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
      .then(
        () => {
          if (this.failedCheckpoints > 0)
            this.logger.info({ failed: this.failedCheckpoints }, 'checkpoints are saved again');
          this.failedCheckpoints = 0;
        },
        (err: unknown) => {
          // one line when the failures start, then one now and then: a full disk must not fill the log as well
          if (this.failedCheckpoints++ % 100 === 0)
            this.logger.warn({ err, failed: this.failedCheckpoints }, 'checkpoint failed; acknowledgements held');
        },
      )
      .finally(() => {
        this.checkpointRunning = undefined;
        if (this.failedCheckpoints > 0) this.retryCheckpoint();
        else if (this.checkpointWanted || this.sources.some((s) => s.hasPending)) {
          this.checkpointWanted = false;
          this.requestCheckpoint();
        }
      });
  }

  /**
   * A checkpoint could not be saved: its deliveries stay held (the broker keeps them) and the next one is tried after
   * a delay that doubles up to {@link CHECKPOINT_RETRY_MAX_MS}, so the rule resumes by itself once the store takes
   * writes again (docs/runtime.md §1.9).
   */
  private retryCheckpoint(): void {
    if (this.closed || this.checkpointSoon) return;
    const delay = Math.min(CHECKPOINT_RETRY_MS * 2 ** (this.failedCheckpoints - 1), CHECKPOINT_RETRY_MAX_MS);
    const t = setTimeout(() => {
      this.checkpointSoon = undefined;
      this.startCheckpoint();
    }, delay);
    this.checkpointSoon = () => clearTimeout(t);
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

  /** every node whose state checkpoints save, sources and batch nodes included */
  private checkpointed(): Checkpointed[] {
    return [...this.ordered, ...this.inner, ...this.batches].filter(isCheckpointed);
  }

  /** whether the rule has operator state to save (windows, watermarks, joins, analytic functions, batches, offsets) */
  private hasState(): boolean {
    this.stateful ??= this.checkpointed().some((n) => n.hasState());
    return this.stateful;
  }

  /**
   * Snapshots every stateful node now and saves it (qos ≥ 1). With `acknowledge`, the deliveries the sources held
   * until now are released once every sink has settled what it received and the state is saved: the broker then
   * forgets them. Call it from a macrotask (see startCheckpoint).
   */
  async checkpoint(acknowledge = false): Promise<void> {
    const covered: Delivery[] = acknowledge ? this.uncovered.splice(0) : [];
    if (acknowledge) for (const s of this.sources) for (const d of s.takePending()) covered.push(d);
    const states: Record<string, Json> = {};
    // Node queues drain in microtasks, so at a checkpoint (a timer, or close after the sources stopped) they are
    // empty: there are no in-flight events to save.
    for (const n of this.checkpointed()) if (n.hasState()) states[n.checkpointKey] = n.snapshot();
    const id = this.env.clock.now();
    try {
      if (covered.length > 0) {
        const settled = await Promise.all(this.sinks.map((s) => (s.flush ? s.flush() : Promise.resolve(true))));
        // a sink closed first: what it had not settled is not acknowledged, the broker sends it again
        if (!settled.every(Boolean)) return;
      }
      if (!acknowledge || this.hasState() || !this.savedOnce) {
        const t0 = Date.now();
        await saveCheckpoint(this.env.store, ruleStateId(this.rule), { id, states });
        this.lastSaveMs = Date.now() - t0;
        this.savedOnce = true;
      }
    } catch (err) {
      // not saved: these deliveries are not acknowledged yet; a later checkpoint (whose state covers theirs) will
      this.uncovered.push(...covered);
      throw err;
    }
    for (const d of covered) d.release();
  }

  private async restore(): Promise<void> {
    const doc = await loadCheckpoint(this.env.store, ruleStateId(this.rule));
    if (!doc) return;
    const byKey = new Map(this.checkpointed().map((n) => [n.checkpointKey, n]));
    for (const [key, state] of Object.entries(doc.states)) {
      try {
        byKey.get(key)?.restore(state);
      } catch (err) {
        this.logger.warn({ err, node: key }, 'cannot restore checkpoint state');
      }
    }
  }
}

/**
 * Closing a topology: runs the steps in order, each whatever the earlier ones threw, so a rule releases everything it
 * holds; logs the first failure (a close reports no error to its caller).
 */
async function closeInOrder(steps: ReadonlyArray<() => Promise<void>>, logger: Logger): Promise<void> {
  let first: unknown;
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      first ??= err;
    }
  }
  if (first !== undefined) logger.warn({ err: first }, 'error while closing the rule');
}
