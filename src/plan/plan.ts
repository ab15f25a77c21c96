/**
 * The executable plan of one SQL rule: what `planQuery` (planner.ts) hands the runtime (src/runtime/).
 *
 * Everything here is built once per rule start. Every expression is already compiled to a JS closure; the runtime
 * never sees the AST. The runtime's job is to move rows between the stages in the order of docs/sql.md §4.2 and to name
 * its nodes after {@link QueryPlan.nodes}:
 *
 * ```
 *  per source tuple:  decode(schema) → [timestamp] → analytic.compute → source.filter (pushed-down WHERE part)
 *  windowed rules:    window.filter → window (trigger for sliding) → Collection
 *                     → lookupJoins → joins → where → aggregate (groups) → having → windowFuncs → order
 *                     → project → limit → projectSet
 *  windowless rules:  per event: [lookup/table joins] → where → project (→ projectSet: one trigger per row)
 * ```
 *
 * Evaluation contract: every compiled function takes `(row, ctx)` where `ctx` is the rule's one reusable
 * {@link EvalContext} (create it with {@link QueryPlan.newContext} at rule start). Before calling a function on a
 * unit of an emission, point the context at it with {@link EvalContext.bindUnit} (or {@link EvalContext.bindRow}
 * for a single event). Functions throw {@link StageError}s whose message already carries the stage prefix of
 * docs/sql.md §6.7 (`run Where error: …`, `run Select error: alias: c expr: … meet error, err:…`); the runtime turns
 * any thrown error into an `ErrorRecord(err.message)` and drops the current unit of work.
 */
import type { Value, ValueObject } from '../values/value.js';
import { Tuple, type Row } from '../contracts/index.js';
import type { StreamDef } from '../catalog/types.js';
import type { StreamField } from '../sql/schema.js';
import type { WindowType } from '../sql/ast.js';
import type { FuncContext, KeyedStateReader } from '../functions/registry.js';

// ------------------------------------------------------------------------------------------------ errors

/** A runtime evaluation failure of one stage; `message` is final (prefix included). */
export class StageError extends Error {
  override readonly name = 'StageError';
}

// ------------------------------------------------------------------------------------------------ context

/**
 * Rule-level evaluation state, one per running rule, reused for every evaluation (no per-row allocation). It is
 * also the {@link FuncContext} the built-in functions read (rule_id(), window_start(), last_hit_count() …).
 * The runtime sets the window bounds when it processes an emission and binds the unit before evaluating on it.
 */
export class EvalContext implements FuncContext {
  /** rows of the current group (aggregate functions read these); null: single event, aggregates see `[row]` */
  group: Row[] | null = null;
  /** window bounds of the emission being processed (ms); undefined outside windows (window_start() → null) */
  windowStart: number | undefined = undefined;
  windowEnd: number | undefined = undefined;
  /** event_time() of the row being evaluated (maintained by the compiled call of event_time()) */
  eventTime: number | undefined = undefined;
  /** row_number() values of the current unit, one per call (set by bindUnit / bindRow); null = every call is 1 */
  rowNumbers: readonly number[] | null = null;
  /** whether the current unit is an aggregate row (event_time() then reads the window end) */
  aggregateRow = false;
  /** last_hit_count()/last_hit_time(): hits before the current event (see {@link QueryPlan.hits}) */
  lastHitCount = 0;
  lastHitTime = 0;
  /** last_agg_hit_count()/last_agg_hit_time(): emissions that passed HAVING before the current one */
  lastAggHitCount = 0;
  lastAggHitTime = 0;
  /** changes on every bind: cached alias values are valid within one epoch only */
  epoch = 0;
  /** the external keyed-state store for get_keyed_state(), when the runtime has one */
  keyedState?: KeyedStateReader;

  constructor(
    /** rule id (`rule_id()`) */
    public ruleId: string,
    /** rule start, Unix ms (`rule_start()`) */
    public ruleStart: number,
  ) {}

  /** Point at a single event (windowless rules, analytic stage, pushed-down filters, window filter/trigger). */
  bindRow(): void {
    this.epoch++;
    this.group = null;
    this.rowNumbers = null;
    this.aggregateRow = false;
  }

  /** Point at one unit of an emission before calling a compiled function with `unit.row`. */
  bindUnit(unit: EvalUnit): void {
    this.epoch++;
    this.group = unit.group;
    this.rowNumbers = unit.rowNumbers;
    this.aggregateRow = unit.group !== null;
  }

  /** Set the bounds of the emission being processed (undefined for windowless rules and plain joins). */
  setWindow(start: number | undefined, end: number | undefined): void {
    this.epoch++;
    this.windowStart = start;
    this.windowEnd = end;
  }
}

/**
 * One unit after WHERE in a window/join rule: a single row (non-aggregate query) or a group (aggregate query).
 * Compiled functions are called with `unit.row` after `ctx.bindUnit(unit)`.
 */
export class EvalUnit {
  /** row_number() per call, set by the window-function stage; null before it ran */
  rowNumbers: number[] | null = null;
  constructor(
    /** the row, or the group's first row ({@link EMPTY_ROW} for a group of zero rows) */
    readonly row: Row,
    /** the group's rows (aggregate query), null for a plain row */
    readonly group: Row[] | null,
  ) {}
}

/** The representative row of an empty group (an empty window of an aggregate query without dimensions). */
export const EMPTY_ROW: Row = new Tuple('', {}, {}, 0);

// ------------------------------------------------------------------------------------------------ functions

/** A compiled expression. */
export type RowFn<T = Value> = (row: Row, ctx: EvalContext) => T;
/** A compiled condition: true keeps the row. Throws StageError for non-bool results (WHERE: null is false). */
export type RowPredicate = (row: Row, ctx: EvalContext) => boolean;

// ------------------------------------------------------------------------------------------------ sources

export interface SourcePlan {
  /** stream/table name as created (tuples carry it as `emitter`) */
  readonly name: string;
  /** the alias written in FROM/JOIN, or the name */
  readonly alias: string;
  readonly def: StreamDef;
  /** 'stream', scan 'table', or 'lookup' table (lookup tables have no source node: see {@link LookupJoinPlan}) */
  readonly role: 'stream' | 'table' | 'lookup';
  /**
   * Decode schema (docs/sql.md §3.4): the declared fields the rule reads, narrowed (struct members navigated to only;
   * a struct read whole is left out), plus the TIMESTAMP field in event-time rules. `null` = keep the whole payload
   * untyped (schemaless stream, or the rule uses `*` / `s.*` on it). Shared streams: the runtime merges the
   * schemas of every attached rule (any null → null).
   */
  readonly schema: readonly StreamField[] | null;
  /** event-time rules: the TIMESTAMP field to read the event time from (else null) */
  readonly timestampField: string | null;
  /**
   * The WHERE conjuncts pushed below the window/join for this source (docs/sql.md §4.2), evaluated on each tuple of
   * this stream after the analytic stage and before the window filter; false drops the tuple. Throws
   * StageError(`run Where error: …`). Has its own plan node (`op_<N>_filter`, see {@link PlanNode}).
   */
  readonly filter: RowPredicate | null;
}

// ------------------------------------------------------------------------------------------------ analytic

export interface AnalyticStage {
  /**
   * Evaluate every analytic call of the statement (lag, latest, changed_col, had_changed, acc_*) on one event, in
   * arrival order, and store the results in `row.analytic` (index = call id). Call once per tuple before any
   * filter/window, with `ctx.bindRow()`. A failure throws an error whose message is the record text
   * (`call func <f> error: …`, or an operator error of an argument).
   */
  compute(row: Row, ctx: EvalContext): void;
  /** number of analytic calls */
  readonly size: number;
  /**
   * The state of every call site as `[partition key, state]` pairs (qos ≥ 1 checkpoints, docs/runtime.md §1.9). States
   * are plain objects, arrays and values, so that the runtime's checkpoint codec can store them.
   */
  snapshot(): Array<Array<[string, unknown]>>;
  /** Replaces the states with a snapshot taken by {@link snapshot} of the same statement. */
  restore(states: ReadonlyArray<ReadonlyArray<readonly [string, unknown]>>): void;
}

// ------------------------------------------------------------------------------------------------ asynchronous calls

/** The stages that may read asynchronous calls: each gets its own asynchronous node just before it. */
export type AsyncConsumer = 'where' | 'having' | 'order' | 'project';

/** One call site of an asynchronous function (external service, portable-plugin function, delay). */
export interface AsyncSite {
  /** index of the site in the rule's result slots */
  readonly index: number;
  /** the function's canonical name */
  readonly func: string;
  readonly timeoutMs: number;
  /**
   * Evaluates the arguments on the bound context and starts the call: a value when no call is needed (the null
   * pre-check answered), otherwise the pending call. Throws when an argument fails.
   */
  start(row: Row, ctx: EvalContext): Value | Promise<Value>;
  /** the error a failed call (rejection or time-out) is reported as: `call func <f> error: …` */
  failure(err: unknown): Error;
}

/**
 * The asynchronous calls read by one stage, computed ahead of it by the runtime's asynchronous node
 * (docs/runtime.md §6.3): per row (or per group for grouped stages), level by level (a call inside another call's arguments is a
 * level lower), results stored with {@link AsyncStage.put} and read by the compiled expression of the stage.
 */
export interface AsyncStage {
  readonly consumer: AsyncConsumer;
  /** call sites by nesting level, innermost first */
  readonly levels: ReadonlyArray<readonly AsyncSite[]>;
  /** how many rows (or emissions) may have calls in flight at once */
  readonly maxInFlight: number;
  /** Stores the result of site `index` for a row or a group: the key is the group's row array for a group unit, else the row. */
  put(key: object, index: number, result: Value): void;
  /** Stores the failure of site `index`: the stage reading the call rethrows `err` (eKuiper's error handling). */
  fail(key: object, index: number, err: unknown): void;
}

// ------------------------------------------------------------------------------------------------ window

export interface WindowSpec {
  readonly type: WindowType;
  /** the time unit in ms (1 for count windows) */
  readonly unitMs: number;
  /**
   * tumbling/hopping/sliding: window length in ms; session: maxDuration in ms; count: size (events)
   */
  readonly length: number;
  /**
   * hopping: hop in ms; session: timeout in ms; sliding: delay in ms (0 without delay); count: every (events,
   * = size when not given); tumbling: = length
   */
  readonly interval: number;
  /** the raw integer parameter used for alignment (docs/sql.md §5.3): length (tumbling), hop (hopping), maxDuration (session) */
  readonly alignParam: number;
  /**
   * `FILTER (WHERE …)`: evaluated per incoming tuple before it enters the window (ctx.bindRow()); false discards
   * it. Node `op_<N>_windowFilter`. Throws StageError(`run Where error: …`).
   */
  readonly filter: RowPredicate | null;
  /** sliding windows: `OVER (WHEN …)`; only tuples for which it is true trigger an emission */
  readonly trigger: RowPredicate | null;
  /** the trigger calls last_hit_count()/last_hit_time(): call {@link HitTracker.hit} after each trigger */
  readonly triggerUsesHits: boolean;
}

// ------------------------------------------------------------------------------------------------ joins

export type JoinKind = 'inner' | 'left' | 'right' | 'full' | 'cross';

/**
 * A stream/stream or stream/scan-table join over one emission (docs/sql.md §4.5). Left rows: the FROM stream's tuples
 * of the emission (or the previous join's result), right rows: tuples whose `emitter` is {@link JoinPlan.stream}.
 * For each candidate pair the runtime builds `new JoinTuple([...leftTuples, right], ts)` (RIGHT join: right
 * first) and calls `on` (ctx.bindRow()); unmatched rows of LEFT/RIGHT/FULL stand alone as
 * `new JoinTuple([tuple])`.
 */
export interface JoinPlan {
  readonly kind: JoinKind;
  /** the joined stream/table name (tuple emitter) */
  readonly stream: string;
  readonly table: boolean;
  /**
   * The ON condition (for INNER joins also carrying WHERE conjuncts merged into it, docs/sql.md §4.2); null = every
   * pair. Non-bool (null included) → StageError(`run Join error: invalid join condition that returns non-bool
   * value …`).
   */
  readonly on: RowPredicate | null;
  /**
   * Set when the first conjunct of `on` is `left.col = right.col` between columns of a stream on the left and of
   * the joined stream: the runtime may then pair only rows whose keys are equal (a hash join). Pairs skipped that
   * way are exactly those for which that first conjunct is false without error, so `on` is false for them.
   */
  readonly equi?: EquiKeys | null;
}

/** Key readers of an equi-join conjunct: one for a left row (tuple or joined row), one for a right tuple. */
export interface EquiKeys {
  readonly left: (row: Row) => Value;
  readonly right: (tuple: Tuple) => Value;
}

/**
 * A lookup-table join (docs/sql.md §3.5), node `op_<table>`. For each row, evaluate `values`, call the connector's
 * `lookup(fields, keys, values)`, and combine the row with each returned table row as
 * `new JoinTuple([...rowTuples, new Tuple(table, tableRow, {}, ts)])`, keeping only those for which `on` holds
 * (if set). `inner`: rows with no match are dropped; `left`: kept alone.
 */
export interface LookupJoinPlan {
  readonly table: string;
  readonly def: StreamDef;
  readonly kind: 'inner' | 'left';
  /** table columns to fetch (empty = all) */
  readonly fields: readonly string[];
  /** table key columns of the equi-join predicates */
  readonly keys: readonly string[];
  /** stream-side expressions, one per key; a null value means no match */
  readonly values: readonly RowFn[];
  /** remaining ON conjuncts evaluated on the combined row; null = none */
  readonly on: RowPredicate | null;
}

// ------------------------------------------------------------------------------------------------ stages after the join

export interface AggregateStage {
  /**
   * GROUP BY dimensions: the group key of a row (texts of the values joined by `,`, docs/sql.md §4.7). Rows with equal
   * keys form one group, groups in first-seen order. Throws StageError(`run Group By error: …`).
   * Null when the query is aggregate without dimensions: the whole emission is one group (also when empty).
   */
  readonly key: RowFn<string> | null;
}

export interface HavingStage {
  /**
   * HAVING over the units of one emission: aggregate query → keeps the groups for which it is true; non-aggregate
   * query → evaluated once over the whole emission as one group, keeping all units or none. A windowless
   * single-event rule always fails with `run Having error: invalid input …` (⚠ eKuiper, docs/sql.md §4.8): call it with
   * `[new EvalUnit(row, null)]`. Null or non-bool → StageError(`run Having error: invalid condition that returns
   * non-bool value …`).
   */
  apply(units: EvalUnit[], ctx: EvalContext): EvalUnit[];
}

export interface WindowFuncStage {
  /**
   * row_number(): reorders the units (PARTITION BY / ORDER BY of each OVER clause) and sets `unit.rowNumbers`.
   * Throws StageError.
   */
  apply(units: EvalUnit[], ctx: EvalContext): EvalUnit[];
}

export interface OrderStage {
  /** Sorts the units in place (nulls last, docs/sql.md §4.9). Throws StageError(`run Order By error: …`). */
  sort(units: EvalUnit[], ctx: EvalContext): void;
}

export interface ProjectStage {
  /**
   * Build the output object of one row or group (docs/sql.md §4.3): computed null values omitted, later keys overwrite
   * earlier ones, `__meta` added when the rule option sendMetaToSink is set. Call after ctx.bindRow() (single
   * event) or ctx.bindUnit(unit). Throws StageError(`run Select error: …`).
   */
  readonly project: RowFn<ValueObject>;
}

export interface ProjectSetStage {
  /**
   * unnest expansion of one projected object (docs/sql.md §4.13): one object per array element. Throws StageError
   * (`the argument for the unnest function should be array`, `can't find the result from the unnest function`).
   */
  expand(projected: ValueObject): ValueObject[];
}

/** last_hit_count()/last_hit_time() bookkeeping for windowless rules. */
export interface HitTracker {
  /** Record one hit at `timestamp` (ms): after an event was projected (windowless) or a sliding trigger fired. */
  hit(ctx: EvalContext, timestamp: number): void;
  /** Record an emission that passed HAVING (last_agg_hit_*), `windowEnd` = its event_time(). */
  aggHit(ctx: EvalContext, windowEnd: number): void;
}

// ------------------------------------------------------------------------------------------------ nodes

/**
 * Operator node kinds, named `op_<N>_<kind>` (docs/runtime.md §1.6). `source` nodes are `source_<name>`;
 * `lookup` nodes are `op_<table>`.
 */
export type NodeKind = PlanNode['kind'];

/** What every plan node has: its topology name and the names of its upstream nodes (empty for sources). */
interface NodeHead {
  /** `source_s1`, `op_2_decoder`, `op_table1`, `op_5_project` */
  readonly name: string;
  readonly inputs: readonly string[];
}

/** A scan table's snapshot in the join aligner: RETAIN_SIZE latest rows, null for the latest event's rows. */
export interface AlignedTable {
  readonly name: string;
  readonly retain: number | null;
}

/**
 * One operator node, typed by its kind: each carries the compiled stage it runs, so that the runtime builds it with
 * one factory per kind (runtime/factories.ts) and no look-up in the plan.
 */
export type PlanNode = NodeHead &
  (
    | {
        readonly kind: 'source';
        readonly source: SourcePlan;
        /** false when decoder nodes follow (MQTT): the source hands on the raw events */
        readonly decodes: boolean;
      }
    | { readonly kind: 'decompress'; readonly source: SourcePlan }
    | {
        readonly kind: 'decoder';
        readonly source: SourcePlan;
        /** a preprocessor node follows: it, not the decoder, sets the event time and validates */
        readonly preprocessor: boolean;
      }
    | { readonly kind: 'preprocessor'; readonly source: SourcePlan }
    /** `streams`: the emitters whose progress makes the watermark */
    | { readonly kind: 'watermark'; readonly streams: readonly string[] }
    | { readonly kind: 'analytic'; readonly stage: AnalyticStage }
    /** the calls computed ahead of the next node */
    | { readonly kind: 'async'; readonly stage: AsyncStage }
    /** a WHERE part pushed to the source `source`, or (source null) the WHERE after the window and joins */
    | { readonly kind: 'filter'; readonly pred: RowPredicate; readonly source: string | null }
    | { readonly kind: 'windowFilter'; readonly pred: RowPredicate }
    | { readonly kind: 'window'; readonly spec: WindowSpec }
    | { readonly kind: 'lookup'; readonly join: LookupJoinPlan }
    | { readonly kind: 'join_aligner'; readonly tables: readonly AlignedTable[] }
    /** `from`: the FROM stream, the left side of the first join */
    | { readonly kind: 'join'; readonly from: string; readonly joins: readonly JoinPlan[] }
    | { readonly kind: 'aggregate' }
    | { readonly kind: 'having'; readonly stage: HavingStage }
    | { readonly kind: 'windowFunc'; readonly stage: WindowFuncStage }
    | { readonly kind: 'order'; readonly stage: OrderStage }
    | { readonly kind: 'project'; readonly stage: ProjectStage }
    | { readonly kind: 'projectset'; readonly stage: ProjectSetStage }
  );

/** The plan node of one kind. */
export type PlanNodeOf<K extends NodeKind> = Extract<PlanNode, { readonly kind: K }>;

// ------------------------------------------------------------------------------------------------ the plan

export interface QueryPlan {
  readonly sql: string;
  /** streams and tables in FROM/JOIN order (lookup tables included, role 'lookup') */
  readonly sources: readonly SourcePlan[];
  /**
   * Operator nodes in topology order (post-order numbering of docs/runtime.md §1.6), sources first in FROM/JOIN order;
   * the last node feeds every sink. Lookup tables have no source node.
   */
  readonly nodes: readonly PlanNode[];
  readonly isEventTime: boolean;
  /** the query has GROUP BY dimensions or an aggregate call in the select list */
  readonly isAggregate: boolean;
  readonly analytic: AnalyticStage | null;
  readonly window: WindowSpec | null;
  readonly lookupJoins: readonly LookupJoinPlan[];
  readonly joins: readonly JoinPlan[];
  /**
   * WHERE as applied after the window and joins (whatever was not pushed to a source or merged into an INNER
   * join's ON). Windowless rules: per event. StageError(`run Where error: …`); non-bool non-null → error.
   */
  readonly where: RowPredicate | null;
  /** GROUP BY (null: no dimensions; see {@link QueryPlan.isAggregate} for the single-group case) */
  readonly aggregate: AggregateStage | null;
  readonly having: HavingStage | null;
  readonly windowFuncs: WindowFuncStage | null;
  readonly order: OrderStage | null;
  readonly project: ProjectStage;
  /** LIMIT n (after ORDER BY; with projectSet, applied to the expanded rows), null = none */
  readonly limit: number | null;
  readonly projectSet: ProjectSetStage | null;
  /** whether the rule reads last_hit_*()/last_agg_hit_*() (then call {@link QueryPlan.hits}) */
  readonly usesHits: boolean;
  readonly usesAggHits: boolean;
  readonly hits: HitTracker;
  /** A fresh context for one run of the rule (state of stateful functions lives in the compiled closures). */
  newContext(ruleId: string, ruleStart: number): EvalContext;
  /**
   * Group/wrap the rows surviving WHERE into units (docs/sql.md §4.7): non-aggregate → one unit per row; aggregate
   * without dimensions → one group unit (also for zero rows); with dimensions → one unit per group (none for zero
   * rows). Throws StageError(`run Group By error: …`).
   */
  toUnits(rows: Row[], ctx: EvalContext): EvalUnit[];
}
