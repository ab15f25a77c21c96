/**
 * The topology of a rule placed on a worker thread (docs/runtime.md §1.10), as the main thread holds it: a handle, the
 * worker's index, and what the worker answered when it planned the rule (node names, the printable topology, the
 * streams read). The main thread never plans such a rule itself: {@link RemoteTopology.prepare} asks the worker, which
 * plans and compiles it once and keeps the result for the open.
 */
import type { ValueObject } from '../values/value.js';
import {
  NodeMetrics,
  type PrintableTopo,
  type RuleDef,
  type RuleOptions,
  type Topology,
  type TraceSpan,
  type TraceStrategy,
} from '../contracts/index.js';
import { TopologySignals } from '../runtime/signals.js';
import type { NodeMetricsRow, PlannedInfo } from './protocol.js';

/** What the pool does for its remote topologies. */
export interface RemoteHost {
  prepareRemote(t: RemoteTopology): Promise<void>;
  openRemote(t: RemoteTopology): Promise<void>;
  /** tells the worker to trace the rule, or to stop (docs/runtime.md §1.11) */
  traceRemote(t: RemoteTopology): void;
  closeRemote(t: RemoteTopology): Promise<void>;
  releaseRemote(t: RemoteTopology): void;
  resetRemoteOffset(t: RemoteTopology, streamName: string, input: ValueObject): Promise<void>;
  answering(slot: number): boolean;
  started(slot: number): boolean;
}

const NOT_PLANNED: PrintableTopo = { sources: [], edges: {} };

export class RemoteTopology implements Topology {
  private readonly signals = new TopologySignals();
  open_ = false;
  /** set once the worker planned the rule (prepare, or the first open) */
  private info: PlannedInfo | undefined;
  private metrics: NodeMetrics[] = [];
  /** bytes its windows hold, as the worker last reported */
  heldBytes = 0;
  private tracing: { strategy: TraceStrategy; emit: (span: TraceSpan) => void } | undefined;
  /** told when what the rules listings show of the nodes changed (Topology.watch) */
  private changed: (() => void) | undefined;

  constructor(
    readonly handle: number,
    readonly slot: number,
    readonly rule: RuleDef,
    readonly options: RuleOptions,
    private readonly host: RemoteHost,
  ) {}

  /** Plans the rule on its worker; rejects with the planner's coded error. */
  prepare(): Promise<void> {
    return this.host.prepareRemote(this);
  }

  open(): Promise<void> {
    return this.host.openRemote(this);
  }

  resetOffset(streamName: string, input: ValueObject): Promise<void> {
    return this.host.resetRemoteOffset(this, streamName, input);
  }

  close(): Promise<void> {
    return this.host.closeRemote(this);
  }

  release(): void {
    if (!this.open_) this.host.releaseRemote(this);
  }

  onFatal(cb: (err: Error) => void): void {
    this.signals.onFatal(cb);
  }

  onEnd(cb: () => void): void {
    this.signals.onEnd(cb);
  }

  nodes(): readonly NodeMetrics[] {
    return this.metrics;
  }

  printable(): PrintableTopo {
    return this.info?.printable ?? NOT_PLANNED;
  }

  /** The streams and tables the rule reads, as the worker planned it; undefined before. */
  plannedReads(): readonly string[] | undefined {
    return this.info?.sources;
  }

  placement(): { worker: number; answering: boolean } {
    return { worker: this.slot, answering: this.host.answering(this.slot) };
  }

  watch(changed: () => void): void {
    this.changed = changed;
  }

  startsCold(): boolean {
    return !this.host.started(this.slot);
  }

  /** @internal the worker planned the rule: its nodes are counted from now on */
  planned(info: PlannedInfo): void {
    const same =
      this.info !== undefined &&
      info.nodes.length === this.metrics.length &&
      info.nodes.every((n, i) => this.metrics[i].name === n);
    this.info = info;
    if (same) return;
    this.metrics = info.nodes.map((n) => new NodeMetrics(n));
    this.changed?.();
  }

  /** Rule tracing (docs/runtime.md §1.11): the worker traces, the spans come back with its metrics. */
  trace(strategy: TraceStrategy | null, emit: (span: TraceSpan) => void): void {
    this.tracing = strategy === null ? undefined : { strategy, emit };
    this.host.traceRemote(this);
  }

  /** @internal the strategy the worker should trace with, null when off */
  get traceStrategy(): TraceStrategy | null {
    return this.tracing?.strategy ?? null;
  }

  /** @internal a span the worker sent */
  traced(span: TraceSpan): void {
    this.tracing?.emit(span);
  }

  /** @internal metrics sent by the worker */
  update(rows: NodeMetricsRow[]): void {
    const nodes = this.metrics;
    let shown = false;
    for (let i = 0; i < rows.length && i < nodes.length; i++) {
      const n = nodes[i];
      const r = rows[i];
      // what the listings show: the rule's health (connections, failing sends) and its last exception
      if (n.exceptions !== r[7] || n.lastExceptionTime !== r[9] || n.connection !== r[13] || n.failingSince !== r[14])
        shown = true;
      n.recordsIn = r[1];
      n.recordsOut = r[2];
      n.messagesProcessed = r[3];
      // the histogram travels whole: setting processLatencyUs would count one latency per metrics message
      n.mirrorLatency(r[4], r[11], r[12]);
      n.bufferLength = r[5];
      n.lastInvocation = r[6];
      n.exceptions = r[7];
      n.lastException = r[8];
      n.lastExceptionTime = r[9];
      n.busyUs = r[10];
      n.setConnection(r[13]);
      n.failingSince = r[14];
    }
    if (shown) this.changed?.();
  }

  /** @internal */
  fail(err: Error): void {
    this.signals.fail(err);
  }

  /** @internal */
  end(): void {
    this.signals.end();
  }
}
