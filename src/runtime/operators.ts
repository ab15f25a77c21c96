/**
 * The operators of a SQL rule after the sources (docs/sql.md §4.2): analytic, filters, join aligner, joins, aggregate,
 * having, window functions, order, project and projectset. Each runs the compiled closures (plan/compile.ts) against the rule's one
 * {@link EvalContext}; an evaluation error replaces the unit of work with an error record (docs/sql.md §6.7).
 */
import type { Row } from '../contracts/index.js';
import { JoinTuple, type Tuple } from '../contracts/index.js';
import type { Value, ValueObject } from '../values/value.js';
import { takeRuleStop } from '../values/errors.js';
import { EvalUnit } from '../plan/plan.js';
import type {
  AnalyticStage,
  EvalContext,
  HavingStage,
  JoinPlan,
  OrderStage,
  ProjectSetStage,
  ProjectStage,
  QueryPlan,
  RowPredicate,
  WindowFuncStage,
} from '../plan/plan.js';
import { kinds, Output, RowBatch, UnitBatch, unhandled, type ItemKind, type ItemOf } from './items.js';
import { QueueNode, turnOver } from './node.js';
import { decodeRow, decodeValue, encodeRow, encodeValue, type Checkpointed, type Json } from './checkpoint.js';

/** What every operator of one rule shares. */
export interface OpEnv {
  readonly ctx: EvalContext;
  readonly plan: QueryPlan;
  readonly sendError: boolean;
  readonly bufferLength: number;
}

abstract class Operator<K extends ItemKind> extends QueueNode<K> {
  protected readonly ctx: EvalContext;
  constructor(
    name: string,
    protected readonly env: OpEnv,
  ) {
    super(name, env.bufferLength);
    this.ctx = env.ctx;
  }

  protected fail(err: unknown): void {
    // an evaluation that asked for its rule to stop (a JavaScript function past its time limit) ends the run
    const stop = takeRuleStop();
    if (stop) {
      this.metrics.error(err);
      this.stopRule(stop);
      return;
    }
    this.emitError(err, this.env.sendError);
  }

  /**
   * Runs work that yields between slices (see {@link Pace}) until it finishes: at each pause the node's queue is
   * suspended and the work continues in a later turn of the event loop. A throw fails the item being processed.
   */
  protected sliced(job: Generator<void, void, void>, resume: (() => void) | undefined): void {
    let done: boolean | undefined;
    try {
      done = job.next().done;
    } catch (err) {
      this.fail(err);
      done = true;
    }
    if (done) {
      resume?.();
      return;
    }
    const wake = resume ?? this.suspend();
    setImmediate(() => {
      if (this.closed) return;
      this.timed(() => this.sliced(job, wake));
    });
  }

  protected bindBatch(b: RowBatch | UnitBatch): void {
    if (b.windowed) this.ctx.setWindow(b.windowStart, b.windowEnd);
    else this.ctx.setWindow(undefined, undefined);
  }

  protected bindEvent(): void {
    this.ctx.setWindow(undefined, undefined);
    this.ctx.bindRow();
  }

  /** Emits `apply` of the units of an emission, unless null (a failure fails the node). */
  protected overUnits(item: RowBatch | UnitBatch, apply: (b: UnitBatch) => UnitBatch | null): void {
    let out: UnitBatch | null;
    try {
      const b = this.unitsOf(item);
      this.bindBatch(b);
      out = apply(b);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (out !== null) this.emit(out);
  }

  /** the units of an emission (rows are grouped/wrapped by the plan when no aggregate node did it) */
  protected unitsOf(b: RowBatch | UnitBatch): UnitBatch {
    if (b.kind === 'units') return b;
    this.bindBatch(b);
    return new UnitBatch(this.env.plan.toUnits(b.rows, this.ctx), b.windowStart, b.windowEnd, b.windowed);
  }
}

/** The item kinds of an operator over the units of an emission; watermarks end there. */
type UnitKinds = 'rows' | 'units' | 'watermark';
const UNITS = kinds<UnitKinds>('rows', 'units', 'watermark');

/** An operator emitting `apply` of the units of each emission (a failure fails the node). */
abstract class UnitsOperator extends Operator<UnitKinds> {
  protected readonly handles = UNITS;
  protected abstract apply(b: UnitBatch): UnitBatch;
  protected process(item: ItemOf<UnitKinds>): void {
    switch (item.kind) {
      case 'rows':
      case 'units':
        this.overUnits(item, (b) => this.apply(b));
        return;
      case 'watermark':
        return;
      default:
        unhandled(item);
    }
  }
}

/** Analytic functions on every event before any filter (stage 3). */
export class AnalyticNode extends Operator<'tuple' | 'join'> implements Checkpointed {
  protected readonly handles = kinds('tuple', 'join');
  constructor(
    name: string,
    env: OpEnv,
    private readonly stage: AnalyticStage,
  ) {
    super(name, env);
  }
  get checkpointKey(): string {
    return this.name;
  }
  hasState(): boolean {
    return true;
  }
  /** per call site, `[partition key, state]` pairs */
  snapshot(): Json {
    return this.stage.snapshot().map((site) => site.map(([key, st]) => [key, encodeValue(st as Value)]));
  }
  restore(state: Json): void {
    const sites = state as Array<Array<[string, unknown]>>;
    this.stage.restore(sites.map((site) => site.map(([key, st]) => [key, decodeValue(st)] as const)));
  }
  protected process(item: Tuple | JoinTuple): void {
    this.bindEvent();
    try {
      this.stage.compute(item, this.ctx);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.emit(item);
  }
}

/**
 * A row condition: a WHERE part pushed to a source, a window FILTER, or the WHERE of the rule. On an emission it
 * keeps the rows that pass; an emission left empty is dropped (docs/sql.md §5.12).
 */
export class FilterNode extends Operator<'tuple' | 'join' | 'rows'> {
  protected readonly handles = kinds('tuple', 'join', 'rows');
  constructor(
    name: string,
    env: OpEnv,
    private readonly pred: RowPredicate,
  ) {
    super(name, env);
  }
  protected process(item: Tuple | JoinTuple | RowBatch): void {
    const ctx = this.ctx;
    switch (item.kind) {
      case 'tuple':
      case 'join': {
        this.bindEvent();
        let keep: boolean;
        try {
          keep = this.pred(item, ctx);
        } catch (err) {
          this.fail(err);
          return;
        }
        if (keep) this.emit(item);
        return;
      }
      case 'rows': {
        this.bindBatch(item);
        const kept: Row[] = [];
        try {
          for (const row of item.rows) {
            ctx.bindRow();
            if (this.pred(row, ctx)) kept.push(row);
          }
        } catch (err) {
          this.fail(err);
          return;
        }
        if (kept.length > 0) this.emit(new RowBatch(kept, item.windowStart, item.windowEnd, item.windowed));
        return;
      }
      default:
        unhandled(item);
    }
  }
}

/** A scan table's current snapshot (docs/sql.md §3.5). */
class TableSnapshot {
  rows: Tuple[] = [];
  constructor(private readonly retain: number | null) {}
  update(rows: Tuple[]): void {
    if (this.retain === null) {
      // no RETAIN_SIZE: the latest batch (a file read) or the latest row
      this.rows = rows.slice();
      return;
    }
    for (const r of rows) this.rows.push(r);
    if (this.rows.length > this.retain) this.rows = this.rows.slice(this.rows.length - this.retain);
  }
}

type AlignerKinds = 'table' | 'tuple' | 'join' | 'rows' | 'watermark';

/**
 * Puts the current scan-table snapshots next to every stream event or window emission, so that the join node sees
 * one batch holding both sides (node `op_<N>_join_aligner`).
 */
export class JoinAlignerNode extends Operator<AlignerKinds> implements Checkpointed {
  /** watermarks (a windowless event-time rule) end here */
  protected readonly handles = kinds('table', 'tuple', 'join', 'rows', 'watermark');
  private readonly tables = new Map<string, TableSnapshot>();
  constructor(name: string, env: OpEnv, tables: ReadonlyArray<{ name: string; retain: number | null }>) {
    super(name, env);
    for (const t of tables) this.tables.set(t.name, new TableSnapshot(t.retain));
  }
  protected process(item: ItemOf<AlignerKinds>): void {
    switch (item.kind) {
      case 'table':
        this.tables.get(item.table)?.update(item.rows);
        return;
      case 'tuple':
      case 'join':
        this.emit(new RowBatch(this.withTables([item]), 0, 0, false));
        return;
      case 'rows':
        this.emit(new RowBatch(this.withTables(item.rows.slice()), item.windowStart, item.windowEnd, item.windowed));
        return;
      case 'watermark':
        return;
      default:
        unhandled(item);
    }
  }
  private withTables(rows: Row[]): Row[] {
    for (const t of this.tables.values()) for (const r of t.rows) rows.push(r);
    return rows;
  }
  get checkpointKey(): string {
    return this.name;
  }
  hasState(): boolean {
    return true;
  }
  /** each scan table's snapshot rows, by table */
  snapshot(): Json {
    const out: Record<string, Json> = {};
    for (const [k, t] of this.tables) out[k] = t.rows.map(encodeRow);
    return out;
  }
  restore(state: Json): void {
    for (const [k, rows] of Object.entries(state as Record<string, unknown[]>)) {
      const t = this.tables.get(k);
      if (t) t.rows = rows.map((r) => decodeRow(r) as Tuple);
    }
  }
}

function tuplesOf(row: Row): Tuple[] {
  return row.kind === 'join' ? row.tuples : [row];
}

/**
 * Stream/stream and stream/table joins over one emission, left to right (docs/sql.md §4.5). An equality between a
 * left and a right column as the first conjunct of the condition makes it a hash join (the right rows indexed by
 * key once per emission); other conditions run as nested loops that allocate a joined row only for matches. Output
 * order is the nested loop's in every case. A large emission is joined in slices between which the event loop
 * runs; the node takes its next item only once the emission is done.
 */
export class JoinNode extends Operator<'rows' | 'tuple' | 'join' | 'watermark'> {
  /** only emissions are joined: single rows and watermarks end here */
  protected readonly handles = kinds('rows', 'tuple', 'join', 'watermark');
  constructor(
    name: string,
    env: OpEnv,
    private readonly from: string,
    private readonly joins: readonly JoinPlan[],
  ) {
    super(name, env);
  }

  protected process(item: RowBatch | Tuple | JoinTuple | ItemOf<'watermark'>): void {
    if (item.kind === 'rows') this.sliced(this.joinAll(item), undefined);
  }

  private *joinAll(item: RowBatch): Generator<void, void, void> {
    this.bindBatch(item);
    let left: Row[] = [];
    for (const r of item.rows) if (r.kind === 'join' || r.emitter === this.from) left.push(r);
    // rules reading hit counters run unqueued: their joins finish in one go
    const pace = this.direct ? null : new Pace();
    for (const j of this.joins) {
      const right: Tuple[] = [];
      for (const r of item.rows) if (r.kind === 'tuple' && r.emitter === j.stream) right.push(r);
      const out: Row[] = [];
      const run =
        j.kind === 'right' ? this.rightJoin(j, left, right, out, pace) : this.leftJoin(j, left, right, out, pace);
      for (let r = run.next(); !r.done; r = run.next()) {
        yield;
        // other nodes of the rule share the context and may have rebound it meanwhile
        this.bindBatch(item);
      }
      left = out;
    }
    if (left.length > 0) this.emit(new RowBatch(left, item.windowStart, item.windowEnd, item.windowed));
  }

  /** INNER, LEFT, FULL and CROSS: for each left row, the matching right rows in order. */
  private *leftJoin(
    j: JoinPlan,
    left: Row[],
    right: Tuple[],
    out: Row[],
    pace: Pace | null,
  ): Generator<void, void, void> {
    const ctx = this.ctx;
    const on = j.kind === 'cross' ? null : j.on;
    const index = on !== null && j.equi ? KeyIndex.of(right, j.equi.right) : null;
    const rightMatched = j.kind === 'full' ? new Array<boolean>(right.length).fill(false) : null;
    const all = index === null ? null : allIndexes(right.length);
    for (const l of left) {
      let matched = false;
      const lt = tuplesOf(l);
      const n = lt.length;
      // one scratch row per left row, refilled per pair: a joined row is allocated only for a match
      const buf: Tuple[] = lt.concat(lt[0]);
      const scratch = new JoinTuple(buf, l.timestamp);
      const candidates = index === null ? null : index.candidates(j.equi!.left(l), all!);
      const count = candidates === null ? right.length : candidates.length;
      for (let k = 0; k < count; k++) {
        const i = candidates === null ? k : candidates[k];
        buf[n] = right[i];
        ctx.bindRow();
        if (on === null || on(scratch, ctx)) {
          out.push(new JoinTuple(buf.slice(), l.timestamp));
          matched = true;
          if (rightMatched) rightMatched[i] = true;
        }
        if (pace !== null && pace.due()) yield;
      }
      if (!matched && (j.kind === 'left' || j.kind === 'full'))
        out.push(l.kind === 'join' ? l : new JoinTuple([l], l.timestamp));
      if (pace !== null && pace.due()) yield;
    }
    if (rightMatched) {
      for (let i = 0; i < right.length; i++)
        if (!rightMatched[i]) out.push(new JoinTuple([right[i]], right[i].timestamp));
    }
  }

  /** RIGHT: for each right row, the matching left rows in order (the right tuple first). */
  private *rightJoin(
    j: JoinPlan,
    left: Row[],
    right: Tuple[],
    out: Row[],
    pace: Pace | null,
  ): Generator<void, void, void> {
    const ctx = this.ctx;
    const on = j.on;
    const index = on !== null && j.equi ? KeyIndex.of(left, j.equi.left) : null;
    const all = index === null ? null : allIndexes(left.length);
    for (const r of right) {
      let matched = false;
      const candidates = index === null ? null : index.candidates(j.equi!.right(r), all!);
      const count = candidates === null ? left.length : candidates.length;
      for (let k = 0; k < count; k++) {
        const l = left[candidates === null ? k : candidates[k]];
        const jt = new JoinTuple([r, ...tuplesOf(l)], l.timestamp);
        ctx.bindRow();
        if (on === null || on(jt, ctx)) {
          out.push(jt);
          matched = true;
        }
        if (pace !== null && pace.due()) yield;
      }
      if (!matched) out.push(new JoinTuple([r], r.timestamp));
    }
  }
}

/**
 * Decides when a slice of work has run long enough: every 256 steps it asks whether this turn of the event loop
 * has used its budget for large emissions (shared by every node and rule, see runtime/node.ts).
 */
class Pace {
  private steps = 0;
  due(): boolean {
    if ((++this.steps & 255) !== 0) return false;
    return turnOver();
  }
}

function allIndexes(n: number): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** Which values an index can hold: the kinds `=` compares without error (docs/sql.md §6.2). */
type KeyClass = 'number' | 'string' | 'boolean';

function keyClass(v: Value): KeyClass | null | undefined {
  switch (typeof v) {
    case 'number':
    case 'bigint':
      return 'number';
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    default:
      // null and missing never equal anything; other kinds (datetime, bytes, containers) are not indexed
      return v === null || v === undefined ? null : undefined;
  }
}

/** The hash key of a primitive value: numbers of both kinds by numeric value, NaN never matching. */
function hashKey(v: Value): number | string | boolean | undefined {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number') return v === v ? v : undefined;
  return v as string | boolean;
}

const NO_CANDIDATES: readonly number[] = [];

/**
 * The rows of one side by join key. Candidates are a superset of the rows the equality holds for (bigints beyond
 * 2^53 may share a key), checked by the full condition, and come in row order. A probe whose key `=` could not
 * compare with the indexed kind (or an index over a mix of kinds) falls back to every row, so that an error the
 * condition raises is raised as the nested loop would.
 */
class KeyIndex {
  private readonly map = new Map<number | string | boolean, number[]>();
  private kind: KeyClass | null = null;

  static of<R>(rows: readonly R[], key: (row: R) => Value): KeyIndex | null {
    const index = new KeyIndex();
    for (let i = 0; i < rows.length; i++) {
      const v = key(rows[i]);
      const c = keyClass(v);
      if (c === undefined) return null;
      if (c === null) continue;
      if (index.kind === null) index.kind = c;
      else if (index.kind !== c) return null;
      const h = hashKey(v);
      if (h === undefined) continue;
      const list = index.map.get(h);
      if (list) list.push(i);
      else index.map.set(h, [i]);
    }
    return index;
  }

  /** Row numbers worth evaluating for a probe key; `all` when only the full scan is exact. */
  candidates(v: Value, all: readonly number[]): readonly number[] {
    const c = keyClass(v);
    if (c === null) return NO_CANDIDATES;
    if (c === undefined) return all;
    if (this.kind === null) return NO_CANDIDATES;
    if (c !== this.kind) return all;
    const h = hashKey(v);
    if (h === undefined) return NO_CANDIDATES;
    return this.map.get(h) ?? NO_CANDIDATES;
  }
}

/** GROUP BY: the rows of an emission become groups (none when there are no rows and there are dimensions). */
export class AggregateNode extends Operator<'rows' | 'watermark'> {
  /** watermarks end here */
  protected readonly handles = kinds('rows', 'watermark');
  protected process(item: RowBatch | ItemOf<'watermark'>): void {
    if (item.kind === 'watermark') return;
    let units: UnitBatch;
    try {
      units = this.unitsOf(item);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (units.units.length > 0) this.emit(units);
  }
}

/** HAVING per group (or over the whole emission of a non-aggregate query); nothing is emitted when no unit passes. */
export class HavingNode extends Operator<'rows' | 'units' | 'tuple' | 'join' | 'watermark'> {
  /** watermarks end here */
  protected readonly handles = kinds('rows', 'units', 'tuple', 'join', 'watermark');
  constructor(
    name: string,
    env: OpEnv,
    private readonly stage: HavingStage,
  ) {
    super(name, env);
  }
  protected process(item: ItemOf<'rows' | 'units' | 'tuple' | 'join' | 'watermark'>): void {
    const ctx = this.ctx;
    switch (item.kind) {
      case 'rows':
      case 'units':
        this.overUnits(item, (b) => {
          const kept = this.stage.apply(b.units, ctx);
          return kept.length > 0 ? new UnitBatch(kept, b.windowStart, b.windowEnd, b.windowed) : null;
        });
        return;
      case 'tuple':
      case 'join':
        this.bindEvent();
        try {
          if (this.stage.apply([new EvalUnit(item, null)], ctx).length > 0) this.emit(item);
        } catch (err) {
          this.fail(err);
        }
        return;
      case 'watermark':
        return;
      default:
        unhandled(item);
    }
  }
}

/** row_number() and friends over the units of an emission. */
export class WindowFuncNode extends UnitsOperator {
  constructor(
    name: string,
    env: OpEnv,
    private readonly stage: WindowFuncStage,
  ) {
    super(name, env);
  }
  protected apply(b: UnitBatch): UnitBatch {
    return new UnitBatch(this.stage.apply(b.units, this.ctx), b.windowStart, b.windowEnd, b.windowed);
  }
}

/** ORDER BY over the units of an emission; single events pass unchanged. */
export class OrderNode extends UnitsOperator {
  constructor(
    name: string,
    env: OpEnv,
    private readonly stage: OrderStage,
  ) {
    super(name, env);
  }
  protected apply(b: UnitBatch): UnitBatch {
    this.stage.sort(b.units, this.ctx);
    return b;
  }
}

/** SELECT: one output object per event or unit, LIMIT applied here unless a projectset follows. */
export type ProjectKinds = 'tuple' | 'join' | 'rows' | 'units' | 'watermark';

export class ProjectNode extends Operator<ProjectKinds> {
  /** watermarks end here */
  protected readonly handles = kinds<ProjectKinds>('tuple', 'join', 'rows', 'units', 'watermark');
  private readonly limit: number | null;
  constructor(
    name: string,
    env: OpEnv,
    private readonly stage: ProjectStage,
  ) {
    super(name, env);
    this.limit = env.plan.projectSet ? null : env.plan.limit;
  }

  protected process(item: ItemOf<ProjectKinds>): void {
    const { plan } = this.env;
    const ctx = this.ctx;
    switch (item.kind) {
      case 'tuple':
      case 'join': {
        if (this.limit === 0) return;
        this.bindEvent();
        let obj: ValueObject;
        try {
          obj = this.stage.project(item, ctx);
        } catch (err) {
          this.fail(err);
          return;
        }
        if (plan.usesHits) plan.hits.hit(ctx, item.timestamp);
        this.emit(new Output([obj], true, item.timestamp));
        return;
      }
      case 'rows':
      case 'units':
        this.sliced(this.projectAll(item), undefined);
        return;
      case 'watermark':
        return;
      default:
        unhandled(item);
    }
  }

  /** Projects every unit of an emission, in slices when it is large (rules reading hit counters in one go). */
  private *projectAll(item: RowBatch | UnitBatch): Generator<void, void, void> {
    const { plan } = this.env;
    const ctx = this.ctx;
    const project = this.stage.project;
    const out: ValueObject[] = [];
    const b = this.unitsOf(item);
    if (b.units.length === 0 && plan.isAggregate) return;
    this.bindBatch(b);
    const pace = this.direct ? null : new Pace();
    const n = this.limit === null ? b.units.length : Math.min(this.limit, b.units.length);
    for (let i = 0; i < n; i++) {
      const u = b.units[i];
      ctx.bindUnit(u);
      out.push(project(u.row, ctx));
      if (pace !== null && pace.due()) {
        yield;
        // other nodes of the rule share the context and may have rebound it meanwhile
        this.bindBatch(b);
      }
    }
    if (b.windowed && plan.usesAggHits) plan.hits.aggHit(ctx, b.windowEnd);
    this.emit(new Output(out, false, b.windowEnd));
  }
}

/** unnest: expands projected rows; a windowless event's expansion leaves as one trigger per row (docs/sql.md §4.13). */
export class ProjectSetNode extends Operator<'output'> {
  protected readonly handles = kinds('output');
  constructor(
    name: string,
    env: OpEnv,
    private readonly stage: ProjectSetStage,
  ) {
    super(name, env);
  }
  protected process(item: Output): void {
    const limit = this.env.plan.limit;
    let rows: ValueObject[] = [];
    try {
      for (const r of item.rows) for (const e of this.stage.expand(r)) rows.push(e);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (limit !== null && rows.length > limit) rows = rows.slice(0, limit);
    if (item.single) {
      for (const r of rows) this.emit(new Output([r], true, item.timestamp));
    } else {
      this.emit(new Output(rows, false, item.timestamp));
    }
  }
}
