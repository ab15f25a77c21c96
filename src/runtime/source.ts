/**
 * Source side of a topology (docs/runtime.md §1.6, §1.8, §2.1–2.2): the per-rule source node with its queue, the MQTT
 * decoder/preprocessor nodes (decompression: decompress-node.ts), decoding with the stream's FORMAT, event-time extraction, and shared
 * source instances (one connector and one decode per SHARED stream for all rules, reference-counted).
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import {
  disconnected,
  ErrorRecord,
  isPausable,
  isRewindable,
  Tuple,
  type ConnectionState,
  type ConnectorContext,
  type Delivery,
  type ConnectorRegistry,
  type Format,
  type Props,
  type SourceConnector,
  type SourceEvent,
} from '../contracts/index.js';
import type { StreamDef } from '../catalog/types.js';
import type { StreamField } from '../sql/schema.js';
import { DateTime, type Value, type ValueObject } from '../values/value.js';
import { defaultZone, parseAuto, parseWithFormat } from '../values/datetime.js';
import { isTransient } from '../contracts/failures.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import { systemClock, type Clock } from './clock.js';
import { kinds, RawEvent, TableUpdate, type Item } from './items.js';
import { strictValidate } from './strict.js';
import { typeTextCells } from './text-cells.js';
import { QueueNode } from './node.js';
import { isRaw } from './decompress-node.js';
import { decodeValue, encodeValue, type Checkpointed, type Json } from './checkpoint.js';

/** Default capacity of the queue between a source and a rule (docs/runtime.md §2.1). */
export const SOURCE_BUFFER_LENGTH = 102400;

/** A stream's connector type, datasource and resolved properties (docs/runtime.md §2.1). */
export interface ResolvedSource {
  type: string;
  datasource: string;
  props: Props;
}

export function sourceType(def: StreamDef): string {
  const t = def.options.TYPE;
  if (t) return t.toLowerCase();
  return def.kind === 'table' ? 'file' : 'mqtt';
}

export function resolveSource(registry: ConnectorRegistry, def: StreamDef): ResolvedSource {
  const type = sourceType(def);
  const o = def.options;
  const props: Props = { ...registry.sourceProps(type, o.CONF_KEY) };
  props.format = (o.FORMAT ?? 'json').toLowerCase();
  if (o.KEY !== undefined) props.key = o.KEY;
  // sources that decode by themselves (httppull's fallback to plain JSON) need the schema of FORMAT
  if (o.SCHEMAID !== undefined) props.schemaId = o.SCHEMAID;
  if (type !== 'mqtt') {
    if (o.DELIMITER !== undefined) props.delimiter = o.DELIMITER;
    if (def.kind === 'table') props.isTable = true;
  }
  return { type, datasource: o.DATASOURCE ?? '', props };
}

/** Creates and provisions a stream's source connector; unknown types fail with eKuiper's message. */
export function createSourceConnector(
  registry: ConnectorRegistry,
  def: StreamDef,
  ctx: ConnectorContext,
): { conn: SourceConnector; resolved: ResolvedSource } {
  const resolved = resolveSource(registry, def);
  const factory = registry.source(resolved.type);
  if (!factory) throw new EddyError(ErrorCode.Plan, `source ${resolved.type} not found`);
  const conn = factory();
  conn.provision(ctx, resolved.datasource, resolved.props);
  return { conn, resolved };
}

export function createFormat(
  registry: ConnectorRegistry,
  def: StreamDef,
  schema: readonly StreamField[] | null,
): Format | null {
  const name = (def.options.FORMAT ?? 'json').toLowerCase();
  const factory = registry.format(name);
  if (!factory) return null;
  // the binary payload lands in the stream's declared single field, and delimited cells are named and typed after
  // the declared fields, whatever the rule reads (`SELECT *` reads all, which leaves the decode schema null)
  const formatSchema = name === 'binary' || name === 'delimited' ? (def.fields ?? null) : schema;
  return factory({ schema: formatSchema, schemaId: def.options.SCHEMAID, delimiter: def.options.DELIMITER });
}

/** Merges decode schemas of rules sharing a stream: any `null` (keep everything) wins; structs merge members. */
export function mergeSchemas(schemas: ReadonlyArray<readonly StreamField[] | null>): StreamField[] | null {
  const byName = new Map<string, StreamField>();
  for (const s of schemas) {
    if (s === null) return null;
    for (const f of s) {
      const prev = byName.get(f.name);
      if (!prev) byName.set(f.name, f);
      else if (prev.type.kind === 'struct' && f.type.kind === 'struct') {
        const fields = mergeSchemas([prev.type.fields, f.type.fields]) ?? [];
        byName.set(f.name, { name: f.name, type: { kind: 'struct', fields } });
      }
    }
  }
  return [...byName.values()];
}

// ------------------------------------------------------------------------------------------------ decoding

function asRows(decoded: ValueObject | ValueObject[]): ValueObject[] {
  return Array.isArray(decoded) ? decoded : [decoded];
}

/**
 * Bytes → rows with the stream's format; already decoded payloads (memory, httppush) pass through, except that rows
 * of text cells (a CSV file) have the stream's declared fields typed.
 */
export function decodePayload(format: Format | null, def: StreamDef, ev: SourceEvent): ValueObject[] {
  const payload = ev.payload;
  if (payload instanceof Uint8Array) {
    if (!format) throw new Error(`unsupported format ${def.options.FORMAT ?? 'json'}`);
    return asRows(format.decode(payload));
  }
  return asRows(ev.textCells === true ? typedCells(payload, def) : payload);
}

/** Rows of text cells (a CSV file) with the stream's declared fields typed, in place; throws on a mistyped cell. */
function typedCells<T extends ValueObject | ValueObject[]>(payload: T, def: StreamDef): T {
  const fields = def.fields;
  if (!fields) return payload;
  if (Array.isArray(payload)) for (const row of payload) typeTextCells(row, fields);
  else typeTextCells(payload, fields);
  return payload;
}

/** Event time of a message from the stream's TIMESTAMP field (docs/sql.md §5.2). */
export function eventTimeOf(msg: ValueObject, field: string, format: string | undefined): number {
  const v: Value = msg[field];
  if (v === undefined || v === null)
    throw new Error(`cannot find timestamp field ${field} in tuple ${JSON.stringify(plain(msg))}`);
  try {
    if (typeof v === 'bigint') return Number(v);
    if (typeof v === 'number') return Math.trunc(v);
    if (v instanceof DateTime) return v.ms;
    if (typeof v === 'string')
      return (format ? parseWithFormat(v, format, defaultZone()) : parseAuto(v, defaultZone())).ms;
    throw new Error(`unsupported type ${typeof v}`);
  } catch (err) {
    throw new Error(
      `cannot convert timestamp field ${field} to timestamp with error ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

function plain(msg: ValueObject): unknown {
  return Object.fromEntries(Object.entries(msg).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v]));
}

/** How the nodes of one rule turn a decoded message into a Tuple. */
export interface TupleMaker {
  readonly name: string;
  readonly def: StreamDef;
  /** event-time rules: the TIMESTAMP field (null: processing time) */
  readonly timestampField: string | null;
  readonly clock: Clock;
  /** the rule's decode schema of this stream (null: whole payload) */
  readonly schema: readonly StreamField[] | null;
}

/**
 * STRICT_VALIDATION of a typed stream: the fields to check — those the rule reads (its decode schema), or every
 * declared field when the rule keeps the whole payload — else null.
 */
export function strictFields(m: TupleMaker): readonly StreamField[] | null {
  if (m.def.options.STRICT_VALIDATION !== true || !m.def.fields) return null;
  return m.schema ?? m.def.fields;
}

function makeTuple(
  m: TupleMaker,
  msg: ValueObject,
  meta: ValueObject,
  now: number,
  strict: readonly StreamField[] | null,
): Tuple {
  if (strict) msg = strictValidate(msg, strict);
  const ts = m.timestampField ? eventTimeOf(msg, m.timestampField, m.def.options.TIMESTAMP_FORMAT) : now;
  return new Tuple(m.name, msg, meta, ts);
}

/**
 * Decodes one raw event and emits its tuples (or the table update) through `node`; failures are counted on the
 * node and forwarded as error records when the rule has sendError.
 */
abstract class DecodingNode extends QueueNode<'raw'> {
  /** raw events, and a connector's events queued as they are (they have no kind: the base hands them on here too) */
  protected readonly handles = kinds('raw');
  protected format: Format | null = null;
  private readonly stamp: TupleMaker;
  /** declared fields checked here (STRICT_VALIDATION, when no preprocessor node follows) */
  private readonly strict: readonly StreamField[] | null;
  protected constructor(
    name: string,
    capacity: number,
    protected readonly maker: TupleMaker,
    readonly role: 'stream' | 'table',
    protected readonly sendError: boolean,
    /** false when a preprocessor node downstream sets the event time */
    protected readonly stampHere: boolean,
  ) {
    super(name, capacity);
    this.stamp = stampHere ? maker : { ...maker, timestampField: null };
    this.strict = stampHere ? strictFields(maker) : null;
  }

  /** Decodes one source event (a connector's SourceEvent, or a RawEvent from a shared instance or the source). */
  protected decodeAndEmit(raw: RawEvent | SourceEvent): void {
    let decoded: ValueObject | ValueObject[];
    let ev: SourceEvent;
    if (isRaw(raw)) {
      ev = raw.ev;
      if (raw.decoded instanceof Error) {
        this.emitError(raw.decoded, this.sendError);
        return;
      }
      if (raw.decoded !== null) decoded = raw.decoded;
      else if (!this.decodeInto(ev)) return;
      else decoded = this.lastDecoded;
    } else {
      ev = raw;
      if (!this.decodeInto(ev)) return;
      decoded = this.lastDecoded;
    }
    // processing time: the time this batch is handled (read once per drain on the wall clock)
    const clock = this.maker.clock;
    const now = clock === systemClock ? this.metrics.lastInvocation || Date.now() : clock.now();
    const meta = ev.meta;
    if (this.role === 'table') {
      const tuples: Tuple[] = [];
      if (Array.isArray(decoded)) for (const r of decoded) tuples.push(new Tuple(this.maker.name, r, meta, now));
      else tuples.push(new Tuple(this.maker.name, decoded, meta, now));
      this.emit(new TableUpdate(this.maker.name, tuples));
      return;
    }
    if (!Array.isArray(decoded)) {
      this.emitTuple(decoded, meta, now);
      return;
    }
    for (let i = 0; i < decoded.length; i++) this.emitTuple(decoded[i], meta, now);
  }

  private lastDecoded: ValueObject | ValueObject[] = [];

  private decodeInto(ev: SourceEvent): boolean {
    const p = ev.payload;
    if (!(p instanceof Uint8Array) && ev.textCells !== true) {
      this.lastDecoded = p;
      return true;
    }
    try {
      if (!(p instanceof Uint8Array)) {
        this.lastDecoded = typedCells(p, this.maker.def);
        return true;
      }
      if (!this.format) throw new Error(`unsupported format ${this.maker.def.options.FORMAT ?? 'json'}`);
      this.lastDecoded = this.format.decode(p);
      return true;
    } catch (err) {
      this.emitError(err, this.sendError);
      return false;
    }
  }

  private emitTuple(msg: ValueObject, meta: ValueObject, now: number): void {
    const stamp = this.stamp;
    if (stamp.timestampField === null && this.strict === null) {
      this.emit(new Tuple(stamp.name, msg, meta, now));
      return;
    }
    let t: Tuple;
    try {
      t = makeTuple(stamp, msg, meta, now, this.strict);
    } catch (err) {
      this.emitError(err, this.sendError);
      return;
    }
    this.emit(t);
  }
}

// ------------------------------------------------------------------------------------------------ shared sources

/** One rule attached to a shared source instance. */
export interface SharedSubscriber {
  /** the rule's decode schema for this stream (null: keep everything) */
  readonly schema: readonly StreamField[] | null;
  /** a decoded event (or its decode error) for this rule; returns false when the rule's queue is full */
  deliver(raw: RawEvent): boolean;
  /** a connector failure, reported to every attached rule */
  failed(err: Error): void;
  /** the shared connector's connection changed (docs/runtime.md §1.5) */
  connectionChanged(state: ConnectionState): void;
  readonly name: string;
  /** the rule runs at qos ≥ 1: the first rule to attach asks the instance for held acknowledgements */
  readonly atLeastOnce?: boolean;
}

interface SharedInstance {
  readonly def: StreamDef;
  conn: SourceConnector | null;
  format: Format | null;
  /** the decode schema of `format`: the merge of every attached rule's (null: keep everything) */
  schema: readonly StreamField[] | null;
  /** a detach asked for the merged schema to be computed again (once, whatever the number of detaches) */
  remerge: boolean;
  subs: Set<SharedSubscriber>;
  ready: Promise<void>;
  ctx: ConnectorContext;
  /** the connection as the connector last reported it; a rule attaching later starts from it */
  connection: ConnectionState;
}

/**
 * One connector and one decoder per SHARED stream for all rules; opened by the first rule, closed when the last
 * rule detaches (docs/runtime.md §1.8). Each rule keeps its own queue (its source node).
 */
export class SharedSources {
  private readonly instances = new Map<string, SharedInstance>();

  constructor(
    private readonly registry: ConnectorRegistry,
    private readonly logger: Logger,
    private readonly dataDir: string,
  ) {}

  /** number of live shared instances (tests, status) */
  size(): number {
    return this.instances.size;
  }

  /** rules attached to the shared instance of stream `name` */
  subscribers(name: string): number {
    for (const inst of this.instances.values()) if (inst.def.name === name) return inst.subs.size;
    return 0;
  }

  private key(def: StreamDef): string {
    return `${sourceType(def)}.${def.name}`;
  }

  async attach(def: StreamDef, sub: SharedSubscriber): Promise<void> {
    const key = this.key(def);
    let inst = this.instances.get(key);
    if (!inst) {
      const ctx: ConnectorContext = {
        ruleId: '$shared',
        logger: this.logger.child({ shared: def.name }),
        dataDir: this.dataDir,
        atLeastOnce: sub.atLeastOnce === true,
        streamName: def.name,
      };
      const created: SharedInstance = {
        def,
        conn: null,
        format: null,
        schema: sub.schema,
        remerge: false,
        subs: new Set(),
        ready: Promise.resolve(),
        ctx,
        connection: 'connecting',
      };
      created.subs.add(sub);
      created.format = createFormat(this.registry, def, sub.schema);
      this.instances.set(key, created);
      created.ready = this.start(key, created);
      inst = created;
    } else {
      inst.subs.add(sub);
      // merged with the current schema only (merging every rule's on each attach made n rules cost O(n²)), and the
      // format made again only when the schema grew
      if (inst.schema !== null) this.useSchema(inst, mergeSchemas([inst.schema, sub.schema]));
      sub.connectionChanged(inst.connection);
    }
    try {
      await inst.ready;
    } catch (err) {
      inst.subs.delete(sub);
      throw err;
    }
  }

  /** Decodes with `schema` from now on, when it differs from the instance's. */
  private useSchema(inst: SharedInstance, schema: StreamField[] | null): void {
    if (schema !== null && inst.schema !== null && JSON.stringify(schema) === JSON.stringify(inst.schema)) return;
    if (schema === null && inst.schema === null) return;
    inst.schema = schema;
    inst.format = createFormat(this.registry, inst.def, schema);
  }

  private async start(key: string, inst: SharedInstance): Promise<void> {
    try {
      const { conn } = createSourceConnector(this.registry, inst.def, inst.ctx);
      inst.conn = conn;
      await conn.connect(
        inst.ctx,
        (ev) => this.dispatch(inst, ev),
        (err) => {
          for (const s of inst.subs) s.failed(err);
        },
        undefined,
        (state) => {
          inst.connection = state;
          for (const s of inst.subs) s.connectionChanged(state);
        },
      );
      if (inst.connection === 'connecting') {
        inst.connection = 'connected';
        for (const s of inst.subs) s.connectionChanged('connected');
      }
    } catch (err) {
      for (const s of inst.subs) s.connectionChanged(disconnected(err));
      if (this.instances.get(key) === inst) this.instances.delete(key);
      const conn = inst.conn;
      inst.conn = null;
      if (conn) await conn.close(inst.ctx).catch(() => {});
      throw err;
    }
  }

  private dispatch(inst: SharedInstance, ev: SourceEvent): void {
    let decoded: ValueObject[] | Error;
    try {
      decoded = decodePayload(inst.format, inst.def, ev);
    } catch (err) {
      decoded = err instanceof Error ? err : new Error(String(err));
    }
    const raw = new RawEvent(ev, decoded);
    // a rule whose queue is full drops the event and counts it on its own source node
    for (const s of inst.subs) s.deliver(raw);
  }

  async detach(def: StreamDef, sub: SharedSubscriber): Promise<void> {
    const key = this.key(def);
    const inst = this.instances.get(key);
    if (!inst || !inst.subs.delete(sub)) return;
    if (inst.subs.size > 0) {
      // the schema may shrink: computed again once the rules leaving together (a stop of many, a shutdown) have left
      if (!inst.remerge) {
        inst.remerge = true;
        setImmediate(() => {
          inst.remerge = false;
          if (inst.subs.size > 0) this.useSchema(inst, mergeSchemas([...inst.subs].map((s) => s.schema)));
        });
      }
      return;
    }
    this.instances.delete(key);
    await inst.ready.catch(() => {});
    const conn = inst.conn;
    inst.conn = null;
    if (conn) await conn.close(inst.ctx);
  }

  /** closes every instance (server shutdown) */
  async closeAll(): Promise<void> {
    const all = [...this.instances.values()];
    this.instances.clear();
    for (const inst of all) {
      await inst.ready.catch(() => {});
      if (inst.conn) await inst.conn.close(inst.ctx).catch(() => {});
      inst.conn = null;
    }
  }
}

// ------------------------------------------------------------------------------------------------ nodes

export interface SourceNodeOptions {
  /** `source_<name>` */
  nodeName: string;
  maker: TupleMaker;
  role: 'stream' | 'table';
  /** decode schema of this rule (SourcePlan.schema) */
  schema: readonly StreamField[] | null;
  /** a decoder node follows (MQTT): forward raw events */
  forwardRaw: boolean;
  /** a preprocessor node sets the event time */
  preprocessor: boolean;
  sendError: boolean;
  registry: ConnectorRegistry;
  shared: SharedSources | null;
  connectorContext: ConnectorContext;
}

/** The connection-status errors of a source (a broker lost): exceptions, but not data at qos ≥ 1. */
function isConnectionLoss(err: Error): boolean {
  return (err as Error & { connectionLost?: boolean }).connectionLost === true;
}

/** The rule's source node: connector (or shared instance) → the rule's queue → decode → tuples. */
export class SourceNode extends DecodingNode implements SharedSubscriber, Checkpointed {
  private conn: SourceConnector | null = null;
  private readonly opts: SourceNodeOptions;
  private attached = false;
  /** called when the connector reports a failure (the topology may end the run) */
  onConnectorError: (err: Error) => void = () => {};
  /** called once when a bounded source (a file read once) has delivered everything */
  onSourceEnd: () => void = () => {};
  /** the connector reported the end of its data */
  ended = false;
  /** offset to resume from (a restored checkpoint), handed to a rewindable connector before it connects */
  private resumeFrom: ValueObject | null = null;
  /** the offset of a rewindable connector when it was closed */
  private lastOffset: ValueObject | undefined;
  /** deliveries held for the next checkpoint (qos ≥ 1), oldest first */
  private pending: Delivery[] = [];
  /** called when a held delivery arrives while none was pending */
  onPending: () => void = () => {};

  constructor(opts: SourceNodeOptions) {
    const resolved = resolveSource(opts.registry, opts.maker.def);
    const bl = Number(resolved.props.bufferLength);
    super(
      opts.nodeName,
      Number.isFinite(bl) && bl > 0 ? bl : SOURCE_BUFFER_LENGTH,
      opts.maker,
      opts.role,
      opts.sendError,
      !opts.preprocessor,
    );
    this.opts = opts;
    if (!opts.forwardRaw) this.format = createFormat(opts.registry, opts.maker.def, opts.schema);
  }

  get schema(): readonly StreamField[] | null {
    return this.opts.schema;
  }

  get isShared(): boolean {
    return this.opts.shared !== null;
  }

  override async open(): Promise<void> {
    const o = this.opts;
    if (o.shared) {
      this.metrics.setConnection('connecting');
      await o.shared.attach(o.maker.def, this);
      this.attached = true;
      return;
    }
    const { conn } = createSourceConnector(o.registry, o.maker.def, o.connectorContext);
    this.conn = conn;
    if (this.resumeFrom !== null && isRewindable(conn)) conn.rewind(this.resumeFrom);
    this.resumeFrom = null;
    this.metrics.setConnection('connecting');
    try {
      await this.connectConnector(conn);
    } catch (err) {
      this.metrics.setConnection(disconnected(err));
      throw err;
    }
    // a connector that does not report its connection is connected once `connect` resolved
    if (this.metrics.connection === 'connecting') this.metrics.setConnection('connected');
  }

  private connectConnector(conn: SourceConnector): Promise<void> {
    const o = this.opts;
    return conn.connect(
      o.connectorContext,
      (ev) => {
        // the event itself is queued (no wrapper): process() tells it from a RawEvent
        if (this.queue.size === 0) this.arrival = performance.now();
        if (!this.accept(ev as unknown as Item))
          this.metrics.error(`buffer full, drop message from ${this.name} to ${this.name}`);
        else if (ev.delivery !== undefined) this.hold(ev.delivery);
      },
      (err) => this.failed(err),
      () => {
        if (this.ended) return;
        this.ended = true;
        this.onSourceEnd();
      },
      (state) => this.metrics.setConnection(state),
    );
  }

  connectionChanged(state: ConnectionState): void {
    this.metrics.setConnection(state);
  }

  /** whether the connector can hold back its input (not a shared instance, which other rules read too) */
  get pausable(): boolean {
    return this.conn !== null && isPausable(this.conn);
  }

  /** holds back the connector's input (back-pressure from a full sink) */
  holdBack(): void {
    if (this.conn && isPausable(this.conn)) this.conn.pause();
  }

  release(): void {
    if (this.conn && isPausable(this.conn)) this.conn.resume();
  }

  /** whether the events already received are still queued here */
  get idle(): boolean {
    return this.queue.size === 0;
  }

  get atLeastOnce(): boolean {
    return this.opts.connectorContext.atLeastOnce === true;
  }

  private hold(d: Delivery): void {
    if (!this.atLeastOnce || this.closed) return;
    d.hold();
    this.pending.push(d);
    if (this.pending.length === 1) this.onPending();
  }

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** The deliveries received so far; the caller releases them once their effects are saved. */
  takePending(): Delivery[] {
    const out = this.pending;
    this.pending = [];
    return out;
  }

  deliver(raw: RawEvent): boolean {
    if (this.queue.size === 0) this.arrival = performance.now();
    if (this.accept(raw)) {
      if (raw.ev.delivery !== undefined) this.hold(raw.ev.delivery);
      return true;
    }
    this.metrics.error(`buffer full, drop message from ${this.name} to ${this.name}`);
    return false;
  }

  /** A connector failure: transient ones (marked `transient: true`) travel as error records, others end the run. */
  failed(err: Error): void {
    this.metrics.error(err);
    if (isConnectionLoss(err)) this.metrics.setConnection(disconnected(err));
    // a lost broker is not a record: at qos ≥ 1 it must not reach the sinks among the data
    if (this.opts.sendError && !(this.atLeastOnce && isConnectionLoss(err))) this.emit(new ErrorRecord(err.message));
    if (!isTransient(err)) this.onConnectorError(err);
  }

  /** `item`: a raw event, or a connector's event queued as is (a decoder downstream receives it as is too) */
  protected process(item: RawEvent): void {
    if (this.opts.forwardRaw) this.emit(item);
    else this.decodeAndEmit(item as RawEvent | SourceEvent);
  }

  override async close(): Promise<void> {
    await super.close();
    const o = this.opts;
    // a shared connection outlives this rule: what it still holds must not block that connection's acknowledgements
    if (o.shared) for (const d of this.takePending()) d.release();
    if (o.shared && this.attached) {
      this.attached = false;
      await o.shared.detach(o.maker.def, this);
    }
    const conn = this.conn;
    this.conn = null;
    if (conn && isRewindable(conn)) this.lastOffset = conn.offset();
    if (conn) await conn.close(o.connectorContext);
  }

  get checkpointKey(): string {
    return this.name;
  }
  hasState(): boolean {
    return this.offset() !== undefined;
  }
  /** `{$$offset}`, the key of the reference's state map (null: no offset to resume from) */
  snapshot(): Json {
    const offset = this.offset();
    return { $$offset: offset === undefined ? null : encodeValue(offset) };
  }
  restore(state: Json): void {
    const offset = decodeValue((state as { $$offset?: unknown }).$$offset);
    if (offset !== null && typeof offset === 'object' && !Array.isArray(offset)) this.resume(offset as ValueObject);
  }

  /** The offset of a rewindable connector (checkpoints), undefined for other sources. */
  offset(): ValueObject | undefined {
    return this.conn && isRewindable(this.conn) ? this.conn.offset() : this.lastOffset;
  }

  /** Moves a running rewindable connector to `offset` (reset_state); throws for sources that cannot rewind. */
  resetOffset(offset: ValueObject): void {
    const conn = this.conn;
    if (!conn || !isRewindable(conn))
      throw new Error(`stream ${this.opts.maker.def.name} does not support resetting its offset`);
    conn.rewind(offset);
  }

  /** Resume from this offset when the connector opens (restored checkpoint). */
  resume(offset: ValueObject): void {
    this.resumeFrom = offset;
  }
}

/** MQTT decoder node (`op_<N>_decoder`): bytes → tuples with the stream's FORMAT. */
export class DecoderNode extends DecodingNode {
  constructor(
    name: string,
    capacity: number,
    maker: TupleMaker,
    role: 'stream' | 'table',
    schema: readonly StreamField[] | null,
    registry: ConnectorRegistry,
    sendError: boolean,
    preprocessor: boolean,
  ) {
    super(name, capacity, maker, role, sendError, !preprocessor);
    this.format = createFormat(registry, maker.def, schema);
  }
  /** inside the source's work: no queue between them (docs/runtime.md §1.6) */
  override accept(item: Item): boolean {
    return this.runFused(item);
  }
  /** `item`: a raw event, or a connector's event as the source node queued it */
  protected process(item: RawEvent): void {
    this.decodeAndEmit(item as RawEvent | SourceEvent);
  }
}

/** MQTT preprocessor node (`op_<N>_preprocessor`): STRICT_VALIDATION and event-time extraction after decoding. */
export class PreprocessorNode extends QueueNode<'tuple'> {
  protected readonly handles = kinds('tuple');
  private readonly strict: readonly StreamField[] | null;
  constructor(
    name: string,
    capacity: number,
    private readonly maker: TupleMaker,
    private readonly sendError: boolean,
  ) {
    super(name, capacity);
    this.strict = strictFields(maker);
  }
  protected process(item: Tuple): void {
    try {
      if (this.strict) item.message = strictValidate(item.message, this.strict);
      if (this.maker.timestampField)
        item.timestamp = eventTimeOf(item.message, this.maker.timestampField, this.maker.def.options.TIMESTAMP_FORMAT);
    } catch (err) {
      this.emitError(err, this.sendError);
      return;
    }
    this.emit(item);
  }
}
