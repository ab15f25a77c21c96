/**
 * The extension contract between the rule runtime and everything that plugs into it: sources, lookup sources,
 * sinks, formats, and the topology the rules service drives. Built-ins and plugins implement these alike.
 */
import type { Logger } from 'pino';
import type { Value, ValueObject } from '../values/value.js';
import type { StreamField } from '../sql/schema.js';
import type { RuleOptions } from '../core/rule-options.js';

/** Free-form connector properties: a confKey's properties overlaid with stream options or sink action props. */
export type Props = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------- rows

/** One decoded event of one stream (eKuiper's Tuple). Operators never copy it; projection builds new objects. */
export class Tuple {
  /** the item tag the runtime's operators switch on (runtime/items.ts), on the prototype */
  declare readonly kind: 'tuple';
  /** analytic-function results computed for this event, indexed by call id (filled by the analytic operator) */
  analytic: Value[] | undefined = undefined;
  constructor(
    /** name of the stream (or table) the event came from */
    public readonly emitter: string,
    public message: ValueObject,
    public readonly meta: ValueObject,
    /** event time (event-time rules) or receive time, Unix ms */
    public timestamp: number,
  ) {}
}

/** A joined row: the tuples of each side, first-joined first. A field is read from the first tuple that has it. */
export class JoinTuple {
  declare readonly kind: 'join';
  analytic: Value[] | undefined = undefined;
  constructor(
    public readonly tuples: Tuple[],
    public timestamp: number,
  ) {}
}

export type Row = Tuple | JoinTuple;

/** Rows of one window emission (or a join/table snapshot), with the window bounds in Unix ms. */
export interface Collection {
  rows: Row[];
  windowStart: number;
  windowEnd: number;
}

/** An evaluation failure travelling as data (sendError), rendered to sinks as `{"error": message}`. */
export class ErrorRecord {
  declare readonly kind: 'error';
  constructor(public readonly message: string) {}
}

// the tags live on the prototypes: no per-row field to initialise or store
Object.defineProperty(Tuple.prototype, 'kind', { value: 'tuple' });
Object.defineProperty(JoinTuple.prototype, 'kind', { value: 'join' });
Object.defineProperty(ErrorRecord.prototype, 'kind', { value: 'error' });

// ---------------------------------------------------------------------------------------------- tracing

/** `always`: every record is traced; `head`: only records that arrive with a trace context (`traceparent`). */
export type TraceStrategy = 'always' | 'head';

/** One node's work on one traced record, in eKuiper 2.x's span shape (times in Unix ms; docs/runtime.md §1.11). */
export interface TraceSpan {
  name: string;
  traceID: string;
  spanID: string;
  parentSpanID?: string;
  /** the record as the node received it, what it emitted, and its error if it failed */
  attribute: { input?: unknown; output?: unknown[]; error?: string };
  startTime: number;
  endTime: number;
  ruleID: string;
}

// ---------------------------------------------------------------------------------------------- metrics

/**
 * The connection of a source or sink node (docs/runtime.md §1.5): `connected`, `connecting`, or
 * `disconnected: <why>`; `''` for a node that has none (operators).
 */
export type ConnectionState = '' | 'connected' | 'connecting' | `disconnected: ${string}`;

/**
 * Plain counters of one topology node, read on demand by the status endpoint (docs/runtime.md §1.7, §11 #1).
 * Hot paths mutate fields directly.
 */
export class NodeMetrics {
  recordsIn = 0;
  recordsOut = 0;
  messagesProcessed = 0;
  bufferLength = 0;
  /** Unix ms of the last processing start, 0 when never */
  lastInvocation = 0;
  exceptions = 0;
  lastException = '';
  lastExceptionTime = 0;
  /** CPU time spent in this node's own synchronous work, in µs, summed (rules' CPU usage endpoint) */
  busyUs = 0;
  /** source and sink nodes: their connection, set through {@link setConnection} */
  connection: ConnectionState = '';
  /** how many times the connection changed (a worker thread sends its metrics when it does) */
  connectionChanges = 0;
  /** sink nodes: Unix ms of the first failed send since the last one that succeeded; 0 while sends succeed */
  failingSince = 0;
  constructor(
    /** node name as in the topology, e.g. `source_s1`, `op_2_filter`, `sink_mqtt_0` */
    readonly name: string,
  ) {}

  private latencyUs = 0;
  /**
   * Counts of the latencies recorded, per bucket of {@link LATENCY_BUCKETS_US} (last slot: above them all), made on
   * the first record: the Prometheus histogram `process_latency_us_hist` (docs/rest-api.md §16.8).
   */
  latencyCounts: Float64Array | undefined;
  latencySumUs = 0;

  /** latency of the last processing, in µs */
  get processLatencyUs(): number {
    return this.latencyUs;
  }

  set processLatencyUs(us: number) {
    this.latencyUs = us;
    const counts = (this.latencyCounts ??= new Float64Array(LATENCY_BUCKETS_US.length + 1));
    let i = 0;
    while (i < LATENCY_BUCKETS_US.length && us > LATENCY_BUCKETS_US[i]) i++;
    counts[i]++;
    this.latencySumUs += us;
  }

  /**
   * Takes over latencies counted elsewhere — a worker thread's copy of this node (docs/runtime.md §1.10) — without
   * counting them again: the setter above records one latency per call, while a copy is refreshed many times.
   */
  mirrorLatency(lastUs: number, counts: ArrayLike<number> | null, sumUs: number): void {
    this.latencyUs = lastUs;
    this.latencySumUs = sumUs;
    if (counts === null) {
      this.latencyCounts = undefined;
      return;
    }
    const own = (this.latencyCounts ??= new Float64Array(LATENCY_BUCKETS_US.length + 1));
    for (let i = 0; i < own.length; i++) own[i] = counts[i] ?? 0;
  }

  error(err: unknown): void {
    this.exceptions++;
    this.lastException = err instanceof Error ? err.message : String(err);
    this.lastExceptionTime = Date.now();
  }

  setConnection(state: ConnectionState): void {
    if (state === this.connection) return;
    this.connection = state;
    this.connectionChanges++;
  }

  /** A sink's send failed: an exception, and (when the sends before succeeded) the start of a failing spell. */
  sendFailed(err: unknown): void {
    this.error(err);
    if (this.failingSince === 0) this.failingSince = this.lastExceptionTime;
  }
}

/** The text of a lost or refused connection, `disconnected: <why>`. */
export function disconnected(why: unknown): ConnectionState {
  const text = why instanceof Error ? why.message : String(why);
  return `disconnected: ${text || 'unknown reason'}`;
}

/** Upper bounds (µs) of the latency histogram buckets: 10 µs doubling up to about 84 s. */
export const LATENCY_BUCKETS_US: readonly number[] = Array.from({ length: 24 }, (_, i) => 10 * 2 ** i);

// ---------------------------------------------------------------------------------------------- formats

/** Options a format gets when a stream or sink is set up. */
export interface FormatOptions {
  /** declared fields the decoder keeps and types (null: schemaless, keep the payload as is) */
  schema?: readonly StreamField[] | null;
  /** `SCHEMAID` / sink `schemaId`, e.g. `proto1.Reading` */
  schemaId?: string;
  /** `DELIMITER` / sink `delimiter` for the delimited format */
  delimiter?: string;
  /** delimited format: column names (header) */
  fields?: readonly string[];
  hasHeader?: boolean;
}

/** A payload codec (`FORMAT=` on streams, `format` on sinks). */
export interface Format {
  /** bytes → one object, or several (a JSON array fans out into one event each) */
  decode(data: Uint8Array): ValueObject | ValueObject[];
  /** one row (sendSingle) or the rows of one trigger → bytes */
  encode(data: ValueObject | ValueObject[]): Uint8Array;
}

export type FormatFactory = (opts: FormatOptions) => Format;

// ---------------------------------------------------------------------------------------------- sources

export interface ConnectorContext {
  /** rule id, or `$shared` for a shared source instance */
  readonly ruleId: string;
  readonly logger: Logger;
  /** the home's data folder (absolute) */
  readonly dataDir: string;
  /**
   * The rule runs at qos ≥ 1 (docs/runtime.md §1.9): a source that can hold its upstream acknowledgement (mqtt)
   * attaches a {@link Delivery} to each event and keeps what is not acknowledged across crashes.
   */
  readonly atLeastOnce?: boolean;
  /** the stream a source connector reads (with the rule id, it names a persistent broker session) */
  readonly streamName?: string;
  /**
   * One instance of a rule run as several (docs/cluster.md §6): an MQTT source subscribes through the shared
   * subscription `$share/<group>/<topic>` under a session of the instance's own.
   */
  readonly share?: { readonly group: string; readonly instance: number };
}

/**
 * One message whose upstream acknowledgement waits until every holder released it: each rule that received it
 * holds it until the checkpoint covering its effects is saved, so that a crash before then makes the upstream
 * deliver it again (at-least-once).
 */
export interface Delivery {
  hold(): void;
  release(): void;
}

/** What a source hands the runtime: raw bytes to decode with the stream's FORMAT, or already decoded rows. */
export interface SourceEvent {
  payload: Uint8Array | ValueObject | ValueObject[];
  /** connector metadata, e.g. `{topic, qos, messageId}` for mqtt */
  meta: ValueObject;
  /** Unix ms the event was received (or its own timestamp) */
  timestamp: number;
  /** set by sources that acknowledge upstream only once the event's effects are durable */
  delivery?: Delivery;
  /** the rows' values are text cells (a CSV file): the stream's declared fields are typed from them */
  textCells?: boolean;
}

export interface SourceConnector {
  /**
   * Validate and keep the resolved properties (confKey properties merged with `datasource`, `format`, `key`,
   * `delimiter`, `isTable` from the stream). Throws an EddyError with a message naming the bad property.
   */
  provision(ctx: ConnectorContext, datasource: string, props: Props): void;
  /**
   * Connect and start delivering. `emit` is synchronous and may be called from any I/O callback;
   * `onError` reports a failure (connection lost after retries, unreadable file...) to the rule.
   * `onEnd`, when a bounded source (file read once) has delivered everything.
   * `onConnection`, from a connector that keeps reconnecting by itself (mqtt): its connection changed. A connector
   * that reports it may resolve `connect` before its first connection succeeds (the rule runs, degraded, meanwhile);
   * for the others the runtime takes a resolved `connect` as `connected`.
   */
  connect(
    ctx: ConnectorContext,
    emit: (ev: SourceEvent) => void,
    onError: (err: Error) => void,
    onEnd?: () => void,
    onConnection?: (state: ConnectionState) => void,
  ): Promise<void>;
  close(ctx: ConnectorContext): Promise<void>;
}

/**
 * A source that can resume where an earlier run stopped (sql, kafka: docs/runtime.md §1.9): a qos ≥ 1 rule saves
 * `offset()` in its checkpoints and hands it to `rewind()` after `provision` and before `connect` on the next run.
 */
export interface RewindableSource {
  offset(): ValueObject;
  rewind(offset: ValueObject): void;
}

/**
 * A source that can hold back its input while its rule's sinks are full (docs/runtime.md §1.7): MQTT at QoS ≥ 1
 * (the broker keeps the messages). `canPause()` answers for the provisioned settings.
 */
export interface PausableSource {
  canPause(): boolean;
  pause(): void;
  resume(): void;
}

export function isPausable(c: SourceConnector): c is SourceConnector & PausableSource {
  const p = c as Partial<PausableSource>;
  return (
    typeof p.canPause === 'function' && typeof p.pause === 'function' && typeof p.resume === 'function' && p.canPause()
  );
}

export function isRewindable(c: SourceConnector): c is SourceConnector & RewindableSource {
  const r = c as Partial<RewindableSource>;
  return typeof r.offset === 'function' && typeof r.rewind === 'function';
}

/** A table read on demand (KIND="lookup"): memory, redis, httppull, sql. */
export interface LookupConnector {
  provision(ctx: ConnectorContext, datasource: string, props: Props): void;
  connect(ctx: ConnectorContext): Promise<void>;
  /** rows whose `keys[i]` field equals `values[i]` for every i */
  lookup(
    ctx: ConnectorContext,
    fields: readonly string[],
    keys: readonly string[],
    values: readonly Value[],
  ): Promise<ValueObject[]>;
  close(ctx: ConnectorContext): Promise<void>;
}

// ---------------------------------------------------------------------------------------------- sinks

/** What one sink send receives after the shared pipeline (docs/runtime.md §3.3). */
export interface SinkPayload {
  /** the transformed data: one row (sendSingle) or the rows of one trigger, after dataTemplate/dataField/fields */
  readonly data: ValueObject | ValueObject[] | Value;
  /** the bytes to put on the wire: the dataTemplate output, or `data` encoded with the sink's `format` */
  readonly bytes: Uint8Array;
  /** the untransformed rows (for properties rendered per send, such as an mqtt topic `a/{{.room}}`) */
  readonly rows: ValueObject[];
  /** true when this is a resend from the alternate queue: send to the `resendDestination` when there is one */
  readonly resend?: boolean;
}

export interface SinkContext extends ConnectorContext {
  /** renders a Go text/template property (e.g. a topic) against one row or the rows of a trigger */
  render(template: string, data: unknown): string;
  /** the sink's failure cache is on: a connector reports an unreachable target rather than waiting for it */
  readonly cacheEnabled?: boolean;
}

export interface SinkConnector {
  /** Validate and keep the action's properties (merged with its `resourceId` config key). Throws EddyError 2201. */
  provision(ctx: SinkContext, props: Props): void;
  connect(ctx: SinkContext): Promise<void>;
  /**
   * Send one payload. A rejection whose error has `recoverable: true` (network down, 5xx) is cached and resent
   * by the pipeline; any other rejection is counted as an exception and dropped. Returning nothing means the send
   * completed synchronously (a throw is then its failure): the pipeline goes on without a microtask per item.
   */
  collect(ctx: SinkContext, payload: SinkPayload): Promise<void> | void;
  /**
   * True when `collect` hands the payload synchronously to an ordered transport (an MQTT client's socket) and its
   * promise only reports the outcome: the pipeline may then start the next send before the previous settles.
   */
  readonly pipelined?: boolean;
  close(ctx: SinkContext): Promise<void>;
}

/** Connection check of `POST /metadata/{sinks|sources}/connection/{type}`; rejects with a clear message. */
export type ConnectionCheck = (props: Props) => Promise<void>;

// ---------------------------------------------------------------------------------------------- registry

/**
 * Every connector kind by name. Built-ins register at start exactly as plugins will, so look-ups go through here.
 */
export interface ConnectorRegistry {
  source(type: string): (() => SourceConnector) | undefined;
  lookup(type: string): (() => LookupConnector) | undefined;
  sink(type: string): (() => SinkConnector) | undefined;
  format(name: string): FormatFactory | undefined;
  /** properties of source `type` under `confKey` (default when empty): etc yaml default + user layer */
  sourceProps(type: string, confKey: string | undefined): Props;
  /** properties of sink config key `resourceId` of sink `type` */
  sinkProps(type: string, resourceId: string | undefined): Props;
}

// ---------------------------------------------------------------------------------------------- rules

export type { RuleOptions } from '../core/rule-options.js';

/** One action of a rule: `{<sinkType>: {props}}`. */
export type RuleAction = Record<string, Props>;

/** A rule as stored (normalised). */
export interface RuleDef {
  id: string;
  name?: string;
  sql?: string;
  graph?: Record<string, unknown>;
  actions: RuleAction[];
  options?: Partial<RuleOptions>;
  triggered?: boolean;
  tags?: string[];
  /**
   * Cluster mode: the one instance of a rule with `parallelism` > 1 that a topology runs (docs/cluster.md §6). Its
   * sources subscribe through an MQTT shared subscription and its state is kept apart from the other instances'.
   * Never stored: the cluster sets it on the definition it builds a topology of.
   */
  instance?: { index: number; count: number };
}

/** Under which id a rule's run keeps its state (checkpoints, sink caches): the rule's, or its instance's. */
export function ruleStateId(rule: Pick<RuleDef, 'id' | 'instance'>): string {
  return rule.instance ? `${rule.id}#${rule.instance.index}` : rule.id;
}

/** Printable topology (`GET /rules/{id}/topo`). */
export interface PrintableTopo {
  sources: string[];
  edges: Record<string, string[]>;
}

/**
 * One planned, runnable instance of a rule. The rules service creates one per (re)start through
 * {@link TopologyBuilder}, opens it, and closes it on stop. Restarts create a new instance.
 */
export interface Topology {
  /** Opens sinks, then operators, then sources. Rejects when a connector cannot be set up. */
  open(): Promise<void>;
  /** Stops sources first, drains nothing, closes sinks; resolves when every node has stopped. */
  close(): Promise<void>;
  /** Called once with the error that ends this run (a source lost for good, a sink that cannot connect...). */
  onFatal(cb: (err: Error) => void): void;
  /**
   * Called once when the run ends without error: every stream source is bounded and has delivered all its data
   * (a file read once). The rules service then closes the topology without restarting it.
   */
  onEnd?(cb: () => void): void;
  /** Nodes in metric order: sources, operators in topology order, sinks. */
  nodes(): readonly NodeMetrics[];
  printable(): PrintableTopo;
  /**
   * `PUT /rules/{id}/reset_state` type 1 (docs/rest-api.md §16.6): the running source of stream `streamName` reads on
   * from `input` (a rewindable connector's offset). Throws an Error with eKuiper's text.
   */
  resetOffset?(streamName: string, input: ValueObject): Promise<void>;
  /**
   * Where the rule runs when it runs on a worker thread (docs/runtime.md §1.10), and whether that worker answers its
   * heartbeat; absent for rules run in-process.
   */
  placement?(): { worker: number; answering: boolean } | undefined;
  /**
   * Makes `changed` the one function called whenever a node's exceptions, connection or failing sends may have
   * changed: the rules listings then read the rule again instead of reading every rule at every listing
   * (rules/listing.ts). Absent for a topology whose counters change where it cannot tell (in-process nodes).
   */
  watch?(changed: () => void): void;
  /**
   * True when the thread that will run this topology is still starting (a worker's first rule): its open takes that
   * start's time, so a start command waits for the open instead of answering before the rule can receive anything.
   */
  startsCold?(): boolean;
  /**
   * Rule tracing (docs/runtime.md §1.11): with a strategy, every node a traced record passes through hands its span
   * to `emit`; with null, tracing stops.
   */
  trace?(strategy: TraceStrategy | null, emit: (span: TraceSpan) => void): void;
  /**
   * Plans the rule where it will run (a worker thread, docs/runtime.md §1.10) and rejects with the planner's coded
   * error; a topology planned by `build` itself has no such step. Called once, before `open` or `printable`.
   */
  prepare?(): Promise<void>;
  /** Drops what `prepare` kept for a topology that will never be opened (planned again, or not created). */
  release?(): void;
  /** The streams and tables the rule reads, when the topology was planned elsewhere (after `prepare`). */
  plannedReads?(): readonly string[] | undefined;
}

export interface TopologyBuilder {
  /**
   * Plan and build (does not open). Throws an EddyError with eKuiper's code: 2101 plan errors (unknown stream...),
   * 2201 executor errors (unknown sink type, bad sink properties), 1000/4000 others.
   */
  build(rule: RuleDef, options: RuleOptions, logger: Logger): Topology;
}

// ---------------------------------------------------------------------------------------------- nodes

/** What reaches a sink node from the rule: the projected rows of one trigger, or an error travelling as data. */
export type SinkInput = ValueObject[] | ErrorRecord;

/**
 * A node of a running topology. `open` before data flows, `close` after sources stopped.
 */
export interface RuntimeNode {
  readonly metrics: NodeMetrics;
  open(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The sink node of one action (built by the connectors layer, wired by the runtime). `push` never blocks: it
 * queues into the node's bounded buffer (`bufferLength` sink property) or drops and counts when full.
 */
export interface SinkNode extends RuntimeNode {
  push(input: SinkInput): void;
  /**
   * Back-pressure instead of drops: once set, a full buffer keeps what it is pushed and calls `cb(true)`; `cb(false)`
   * when it has drained to half. The topology sets it only when every source of the rule can pause.
   */
  onPressure?(cb: (full: boolean) => void): void;
  /** reports a fatal error (e.g. cannot connect) to the topology */
  onFatal(cb: (err: Error) => void): void;
  /**
   * Resolves once every input pushed before the call is settled: sent, given up for good (counted as an
   * exception), or written to the store by the failure cache. Resolves false when the node closed first.
   */
  flush?(): Promise<boolean>;
}

export interface SinkNodeOptions {
  ruleId: string;
  /** whose failure cache it keeps: the rule's, or one instance's of a parallel rule ({@link ruleStateId}) */
  stateId?: string;
  /** position of the action in `actions` (node name `sink_<type>_<index>`) */
  index: number;
  type: string;
  /** node name; default `sink_<type>_<index>` (graph rules name their sinks `sink_<key>`, docs/runtime.md §1.4) */
  name?: string;
  props: Props;
  ruleOptions: RuleOptions;
  logger: Logger;
}
