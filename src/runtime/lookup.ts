/**
 * Lookup tables (docs/runtime.md §2.6, docs/sql.md §3.5): one connector instance per table, opened when the table is created
 * (or on first use) and shared by the rules that join it; the per-rule lookup join node `op_<table>` with its
 * optional cache (`lookup.cache`, `cacheTtl` seconds, `cacheMissingKey`).
 */
import type { Logger } from 'pino';
import {
  JoinTuple,
  Tuple,
  type ConnectorContext,
  type ConnectorRegistry,
  type LookupConnector,
  type Row,
} from '../contracts/index.js';
import type { StreamDef } from '../catalog/types.js';
import type { Value, ValueObject } from '../values/value.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { EvalContext, LookupJoinPlan } from '../plan/plan.js';
import type { Clock } from './clock.js';
import { kinds, RowBatch, unhandled, type Item } from './items.js';
import { QueueNode } from './node.js';
import { resolveSource } from './source.js';
import { toJson } from '../values/json.js';
import { performance } from 'node:perf_hooks';

interface OpenTable {
  conn: LookupConnector;
  ctx: ConnectorContext;
  ready: Promise<void>;
  /** rules using it */
  refs: number;
  /** opened by CREATE TABLE (kept until DROP) rather than by a rule */
  pinned: boolean;
}

/** The lookup table instances of a server. */
export class LookupTables {
  private readonly open_ = new Map<string, OpenTable>();

  constructor(
    private readonly registry: ConnectorRegistry,
    private readonly logger: Logger,
    private readonly dataDir: string,
  ) {}

  private create(def: StreamDef, pinned: boolean): OpenTable {
    const { type, datasource, props } = resolveSource(this.registry, def);
    const factory = this.registry.lookup(type);
    if (!factory) throw new EddyError(ErrorCode.Plan, `lookup source type ${type} not found`);
    const ctx: ConnectorContext = {
      ruleId: '$lookup',
      logger: this.logger.child({ table: def.name }),
      dataDir: this.dataDir,
    };
    const conn = factory();
    conn.provision(ctx, datasource, props);
    const t: OpenTable = { conn, ctx, ready: Promise.resolve(), refs: 0, pinned };
    t.ready = conn.connect(ctx);
    this.open_.set(def.name, t);
    t.ready.catch(() => {
      if (this.open_.get(def.name) === t) this.open_.delete(def.name);
    });
    return t;
  }

  /** CREATE TABLE … KIND="lookup" and server start: opens the table; rejects with the connector's error. */
  async openTable(def: StreamDef): Promise<void> {
    const existing = this.open_.get(def.name);
    if (existing) {
      existing.pinned = true;
      return existing.ready;
    }
    await this.create(def, true).ready;
  }

  /** DROP TABLE: closes it unless rules still use it (the catalog refuses that case anyway). */
  async closeTable(name: string): Promise<void> {
    const t = this.open_.get(name);
    if (!t) return;
    t.pinned = false;
    if (t.refs === 0) {
      this.open_.delete(name);
      await t.conn.close(t.ctx).catch(() => {});
    }
  }

  /** A rule attaches (opening the table if no CREATE TABLE did). */
  async acquire(def: StreamDef): Promise<{ conn: LookupConnector; ctx: ConnectorContext }> {
    const t = this.open_.get(def.name) ?? this.create(def, false);
    t.refs++;
    try {
      await t.ready;
    } catch (err) {
      t.refs--;
      throw err;
    }
    return { conn: t.conn, ctx: t.ctx };
  }

  async release(name: string): Promise<void> {
    const t = this.open_.get(name);
    if (!t) return;
    t.refs--;
    if (t.refs <= 0 && !t.pinned) {
      this.open_.delete(name);
      await t.conn.close(t.ctx).catch(() => {});
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.open_.values()];
    this.open_.clear();
    for (const t of all) await t.conn.close(t.ctx).catch(() => {});
  }
}

interface CacheEntry {
  rows: ValueObject[];
  at: number;
}

function tuplesOf(row: Row): Tuple[] {
  return row.kind === 'join' ? row.tuples : [row];
}

/**
 * The lookup join of one rule: per row, evaluate the key expressions, fetch matching table rows and combine.
 * Fetching is asynchronous, so this node processes its queue one item at a time, in order.
 */
export class LookupNode extends QueueNode<never> {
  private running = false;
  private conn: LookupConnector | null = null;
  private cctx: ConnectorContext | null = null;
  private readonly cache: Map<string, CacheEntry> | null;
  private readonly cacheTtlMs: number;
  private readonly cacheMissing: boolean;

  constructor(
    name: string,
    capacity: number,
    private readonly plan: LookupJoinPlan,
    private readonly ctx: EvalContext,
    private readonly tables: LookupTables,
    registry: ConnectorRegistry,
    private readonly clock: Clock,
    private readonly sendError: boolean,
  ) {
    super(name, capacity);
    const lookupProps = resolveSource(registry, plan.def).props.lookup as Record<string, unknown> | undefined;
    this.cache = lookupProps?.cache === true ? new Map() : null;
    this.cacheTtlMs = typeof lookupProps?.cacheTtl === 'number' ? lookupProps.cacheTtl * 1000 : 0;
    this.cacheMissing = lookupProps?.cacheMissingKey === true;
  }

  override async open(): Promise<void> {
    const { conn, ctx } = await this.tables.acquire(this.plan.def);
    this.conn = conn;
    this.cctx = ctx;
  }

  override async close(): Promise<void> {
    const had = this.conn !== null;
    await super.close();
    this.conn = null;
    if (had) await this.tables.release(this.plan.table);
  }

  override accept(item: Item): boolean {
    if (this.closed) return true;
    if (!this.queue.push(item)) return false;
    this.metrics.bufferLength = this.queue.size;
    if (!this.running) void this.run();
    return true;
  }

  /** items are handled one at a time from {@link accept}, not dispatched by the base drain */
  protected readonly handles = kinds<never>();
  protected process(): void {}

  private async run(): Promise<void> {
    this.running = true;
    const m = this.metrics;
    while (this.queue.size > 0 && !this.closed) {
      const item = this.queue.shift() as Item;
      m.bufferLength = this.queue.size;
      m.lastInvocation = Date.now();
      const t0 = performance.now();
      try {
        await this.handle(item);
      } catch (err) {
        this.emitError(err, this.sendError);
      }
      m.messagesProcessed++;
      m.processLatencyUs = Math.round((performance.now() - t0) * 1000);
    }
    this.running = false;
  }

  /** Joins a row or the rows of an emission; error records pass, other kinds (watermarks) end here. */
  private async handle(item: Item): Promise<void> {
    switch (item.kind) {
      case 'error':
        this.emit(item);
        return;
      case 'tuple':
      case 'join': {
        this.metrics.recordsIn++;
        const rows = await this.joinRow(item);
        if (rows.length > 0 && !this.closed) this.emit(new RowBatch(rows, 0, 0, false));
        return;
      }
      case 'rows': {
        this.metrics.recordsIn++;
        const out: Row[] = [];
        for (const r of item.rows) for (const j of await this.joinRow(r)) out.push(j);
        if (out.length > 0 && !this.closed)
          this.emit(new RowBatch(out, item.windowStart, item.windowEnd, item.windowed));
        return;
      }
      case 'units':
      case 'table':
      case 'raw':
      case 'output':
      case 'watermark':
        return;
      default:
        unhandled(item);
    }
  }

  private async joinRow(row: Row): Promise<Row[]> {
    const p = this.plan;
    const ctx = this.ctx;
    ctx.bindRow();
    const values: Value[] = [];
    let missing = false;
    for (const f of p.values) {
      const v = f(row, ctx);
      if (v === null || v === undefined) missing = true;
      values.push(v);
    }
    const matches = missing ? [] : await this.fetch(values);
    const out: Row[] = [];
    const base = tuplesOf(row);
    for (const m of matches) {
      const jt = new JoinTuple([...base, new Tuple(p.table, m, {}, row.timestamp)], row.timestamp);
      ctx.bindRow();
      if (p.on === null || p.on(jt, ctx)) out.push(jt);
    }
    if (out.length === 0 && p.kind === 'left')
      out.push(row.kind === 'join' ? row : new JoinTuple([row], row.timestamp));
    return out;
  }

  private async fetch(values: Value[]): Promise<ValueObject[]> {
    const conn = this.conn;
    if (!conn || !this.cctx) return [];
    if (!this.cache) return conn.lookup(this.cctx, this.plan.fields, this.plan.keys, values);
    const key = toJson(values);
    const hit = this.cache.get(key);
    const now = this.clock.now();
    if (hit && (this.cacheTtlMs === 0 || now - hit.at < this.cacheTtlMs)) return hit.rows;
    const rows = await conn.lookup(this.cctx, this.plan.fields, this.plan.keys, values);
    if (rows.length > 0 || this.cacheMissing) this.cache.set(key, { rows, at: now });
    return rows;
  }
}
