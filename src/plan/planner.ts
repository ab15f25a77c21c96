/**
 * The planner, the plan layer's public surface:
 * - {@link planQuery}: SQL text → executable {@link QueryPlan} (the runtime builds a topology from it);
 * - {@link validateQuery}: parse + every static check of docs/sql.md §4.15, returning the sources;
 * - {@link querySources}: only syntax and stream existence (what eKuiper's `POST /rules/validate` checks);
 * - {@link explainQuery}: the text of `GET /rules/{id}/explain` (docs/rest-api.md §4.14).
 * Failures are EddyErrors: 2001 for syntax errors, {@link UnknownStreamError} (2101) for a missing stream,
 * 2101 for every other planning error, with eKuiper's message texts.
 */
import type { CallExpr, Expr, SelectStatement, WindowExpr } from '../sql/ast.js';
import { TIME_UNIT_MS, unparen } from '../sql/ast.js';
import { parseSelect, SqlSyntaxError } from '../sql/index.js';
import { exprToString } from '../sql/print.js';
import type { StreamCatalog, StreamDef } from '../catalog/types.js';
import type { FunctionRegistry } from '../functions/registry.js';
import type { RuleOptions } from '../contracts/index.js';
import { EddyError, ErrorCode, isDefect } from '../core/errors.js';
import {
  EvalContext,
  type EquiKeys,
  type JoinPlan,
  type LookupJoinPlan,
  type AsyncConsumer,
  type AsyncStage,
  type AnalyticStage,
  type HavingStage,
  type NodeKind,
  type OrderStage,
  type ProjectSetStage,
  type ProjectStage,
  type WindowFuncStage,
  type PlanNode,
  type QueryPlan,
  type RowPredicate,
  type SourcePlan,
  type WindowSpec,
} from './plan.js';
import { ExprCompiler, ownRead, readStreamColumn } from './compile.js';
import { RegistryCalls } from './calls.js';
import { analyze, andAll, conjuncts, findDecl, lookupKeys, type Analysis, type BoundSource } from './analyze.js';
import { walk } from '../sql/visit.js';
import { WINDOW_TYPES } from '../sql/windows.js';
import {
  compileProjection,
  condition,
  groupKey,
  havingStage,
  hitTracker,
  joinPredicate,
  orderStage,
  projectSetStage,
  unitBuilder,
  wherePredicate,
  windowFuncStage,
} from './stages.js';

export interface PlanDeps {
  readonly catalog: StreamCatalog;
  readonly functions: FunctionRegistry;
  readonly options: Pick<RuleOptions, 'isEventTime' | 'sendMetaToSink'>;
  /**
   * Whether an MQTT stream's source configuration sets `decompression` (then an `op_<N>_decompress` node precedes
   * its decoder, docs/runtime.md §1.6). Absent: no decompress nodes.
   */
  readonly decompresses?: (def: StreamDef) => boolean;
}

/** Planning failed because a stream/table in FROM/JOIN does not exist (code 2101). */
export class UnknownStreamError extends EddyError {
  constructor(readonly stream: string) {
    super(ErrorCode.Plan, `fail to get stream ${stream}, please check if stream is created`);
  }
}

function parse(sql: string): SelectStatement {
  try {
    return parseSelect(sql);
  } catch (e) {
    if (e instanceof SqlSyntaxError) throw new EddyError(ErrorCode.Parser, e.message);
    throw e;
  }
}

/** Runs `f`, turning compile-time failures into coded errors. */
function coded<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof EddyError) {
      const m = /^fail to get stream (.*), please check if stream is created$/.exec(e.message);
      if (m && !(e instanceof UnknownStreamError)) throw new UnknownStreamError(m[1]);
      throw e;
    }
    // a bug in the planner stays one (answered 500), never a plan error of the user's SQL
    if (isDefect(e)) throw e;
    throw new EddyError(ErrorCode.Plan, (e as Error).message);
  }
}

function analyzeSql(sql: string, deps: PlanDeps): Analysis {
  const stmt = parse(sql);
  return coded(() => analyze(stmt, deps));
}

/**
 * Parse, bind and check a SELECT (docs/sql.md §4.15) without building anything: the `sources` (stream/table names in
 * FROM/JOIN order) for `POST /rules/validate`. Throws EddyError 2001 (syntax), UnknownStreamError (2101) or
 * EddyError 2101 (static checks).
 */
export function validateQuery(sql: string, deps: PlanDeps): { sources: string[] } {
  const a = analyzeSql(sql, deps);
  // compile too: some checks (LIKE patterns) happen while compiling
  coded(() => build(sql, a, deps));
  return { sources: a.sources.map((s) => s.name) };
}

/**
 * Only what eKuiper's own `POST /rules/validate` checks (docs/rest-api.md §4.8): the SQL parses and every stream/table
 * in FROM/JOIN exists. Returns their names in FROM/JOIN order. Throws EddyError 2001 or UnknownStreamError.
 */
export function querySources(sql: string, catalog: StreamCatalog): string[] {
  const stmt = parse(sql);
  const names = [stmt.from.name, ...stmt.joins.map((j) => j.source.name)];
  for (const n of names) if (!catalog.get(n)) throw new UnknownStreamError(n);
  return names.map((n) => (catalog.get(n) as StreamDef).name);
}

/** Plan a rule's SELECT into its executable plan. Throws EddyError with eKuiper's code (2001, 2101). */
export function planQuery(sql: string, deps: PlanDeps): QueryPlan {
  const a = analyzeSql(sql, deps);
  return coded(() => build(sql, a, deps));
}

// ------------------------------------------------------------------------------------------------ pushdown

/** Index of the single source a conjunct references (−1 for none), or −2 when it references several. */
function conjunctSource(e: Expr, a: Analysis): number {
  const found = new Set<number>();
  const byQualifier = (q: string): number => {
    const i = a.sources.findIndex((s) => s.alias === q);
    return i >= 0 ? i : a.sources.findIndex((s) => s.name === q);
  };
  walk(e, (x) => {
    if (x.kind === 'field') {
      if (x.stream !== null) {
        const i = byQualifier(x.stream);
        if (i >= 0) {
          found.add(i);
          return;
        }
      }
      const name = x.stream ?? x.name;
      const i = a.sources.findIndex((s) => s.def.fields !== null && findDecl(s.def.fields, name) !== undefined);
      // unqualified columns of schemaless streams count as the FROM stream's (docs/sql.md §4.2)
      found.add(i >= 0 ? i : 0);
    } else if (x.kind === 'wildcard') {
      found.add(x.stream !== null ? Math.max(0, byQualifier(x.stream)) : 0);
    } else if (x.kind === 'meta') {
      const arg = unparen(x.arg);
      if (arg.kind === 'field' && arg.stream !== null && byQualifier(arg.stream) >= 0)
        found.add(byQualifier(arg.stream));
    }
  });
  if (found.size === 0) return -1;
  if (found.size === 1) return [...found][0];
  return -2;
}

// ------------------------------------------------------------------------------------------------ building

function isMqtt(s: BoundSource): boolean {
  const t = s.def.options.TYPE;
  return s.def.kind === 'stream'
    ? t === undefined || t === '' || t.toLowerCase() === 'mqtt'
    : t !== undefined && t.toLowerCase() === 'mqtt';
}

/**
 * The key readers of a hash join (see {@link JoinPlan.equi}): when the first conjunct of `on` is an equality of a
 * qualified column of a stream already on the left and a qualified column of the joined stream.
 */
function equiKeys(on: Expr, joined: BoundSource, a: Analysis, joinIndex: number): EquiKeys | null {
  const first = unparen(conjuncts(on)[0]);
  if (first.kind !== 'binary' || first.op !== '=') return null;
  const left = [
    a.sources[0],
    ...a.joins
      .filter((j) => j.source.role !== 'lookup')
      .slice(0, joinIndex)
      .map((j) => j.source),
  ];
  if (left.some((s) => s.name === joined.name)) return null;
  const column = (e: Expr): { source: BoundSource; name: string } | null => {
    const u = unparen(e);
    if (u.kind !== 'field' || u.stream === null) return null;
    // resolved as the compiler resolves qualifiers: an alias first, then a stream name
    const source = a.sources.find((s) => s.alias === u.stream) ?? a.sources.find((s) => s.name === u.stream);
    return source ? { source, name: u.name } : null;
  };
  const l = column(first.left);
  const r = column(first.right);
  if (!l || !r) return null;
  const [outer, inner] = l.source === joined ? [r, l] : [l, r];
  if (inner.source !== joined || !left.includes(outer.source)) return null;
  const stream = outer.source.name;
  const leftName = outer.name;
  const rightName = inner.name;
  return {
    left: (row) => readStreamColumn(row, stream, leftName),
    right: (t) => ownRead(t.message, rightName),
  };
}

/** What EXPLAIN needs besides the plan: the conditions where they ended up. */
interface Placement {
  pushed: Expr[][];
  where: Expr | null;
}

/**
 * Where each WHERE conjunct runs (docs/sql.md §4.2): `pushed[i]` filter source i before a processing-time window,
 * `remaining` run after the join. Compiles nothing.
 */
function placeWhere(a: Analysis, canPush: boolean): { pushed: Expr[][]; remaining: Expr[] } {
  const pushed: Expr[][] = a.sources.map(() => []);
  const remaining: Expr[] = [];
  if (a.where) {
    for (const cj of conjuncts(a.where)) {
      if (!canPush) {
        remaining.push(cj);
        continue;
      }
      const i = conjunctSource(cj, a);
      if (i === -2) remaining.push(cj);
      else pushed[i < 0 ? 0 : i].push(cj);
    }
  }
  return { pushed, remaining };
}

/**
 * Whether WHERE may filter each source before the window: never below a watermark, a table or an analytic call, nor
 * when it reads an asynchronous call (those are computed ahead of the rule's WHERE node, which keeps the WHERE whole).
 */
function wherePushesDown(a: Analysis, isEventTime: boolean, hasAnalytic: boolean, whereAsync: boolean): boolean {
  const w = a.window;
  const hasTable = a.sources.some((s) => s.role !== 'stream');
  const timeWindowBelow = w !== null && !isEventTime && WINDOW_TYPES[w.type].closesOnClock;
  // never below a watermark: it must see every event to move on (docs/sql.md §4.2 steps 2 and 6), or rows that pass
  // WHERE would wait for a later row that passes too
  return timeWindowBelow && !hasTable && !hasAnalytic && !whereAsync;
}

/**
 * The stream and table joins; what is left of WHERE after an inner last join is merged into its ON. Returns the joins
 * and the conjuncts still left for the WHERE stage.
 */
function planStreamJoins(
  a: Analysis,
  remaining: Expr[],
  compiler: ExprCompiler,
  whereAsync: boolean,
): { joins: JoinPlan[]; remaining: Expr[] } {
  const streamJoins = a.joins.filter((j) => j.source.role !== 'lookup');
  const lastJoin = streamJoins[streamJoins.length - 1];
  let mergedIntoOn: Expr | null = null;
  let left = remaining;
  if (left.length && lastJoin && lastJoin.clause.type === 'inner' && !whereAsync) {
    mergedIntoOn = andAll(left);
    left = [];
  }
  const joins: JoinPlan[] = streamJoins.map((j) => {
    const on = j === lastJoin && mergedIntoOn ? andAll([...(j.on ? [j.on] : []), mergedIntoOn]) : j.on;
    return {
      kind: j.clause.type,
      stream: j.source.name,
      table: j.source.role === 'table',
      on: on ? joinPredicate(compiler.compile(on)) : null,
      equi: on && j.clause.type !== 'cross' ? equiKeys(on, j.source, a, streamJoins.indexOf(j)) : null,
    };
  });
  return { joins, remaining: left };
}

/** The lookup-table joins: the key columns the ON equates, their values, and the rest of the ON as a predicate. */
function planLookupJoins(a: Analysis, compiler: ExprCompiler): LookupJoinPlan[] {
  return a.joins
    .filter((j) => j.source.role === 'lookup')
    .map((j) => {
      const keys = lookupKeys(j.on as Expr, j.source, a.sources);
      const rest = conjuncts(j.on as Expr).filter((c) => !keys.some((k) => k.conjunct === c));
      const idx = a.sources.indexOf(j.source);
      return {
        table: j.source.name,
        def: j.source.def,
        kind: j.clause.type === 'left' ? 'left' : 'inner',
        // a schemaless table's columns cannot be told from the stream's: fetch every column
        fields: j.source.def.fields === null ? [] : a.columns[idx],
        keys: keys.map((k) => k.key),
        values: keys.map((k) => compiler.compile(k.value)),
        on: rest.length ? joinPredicate(compiler.compile(andAll(rest) as Expr)) : null,
      };
    });
}

/** The sources with their decode schemas, event-time field and pushed-down filter. */
function planSources(a: Analysis, pushed: Expr[][], isEventTime: boolean, compiler: ExprCompiler): SourcePlan[] {
  return a.sources.map((s, i) => ({
    name: s.name,
    alias: s.alias,
    def: s.def,
    role: s.role,
    schema: a.schemas[i],
    timestampField: isEventTime && s.def.options.TIMESTAMP ? s.def.options.TIMESTAMP : null,
    filter: pushed[i].length ? wherePredicate(compiler.compile(andAll(pushed[i]) as Expr)) : null,
  }));
}

/** Length and interval (ms, or rows for a count window) of a window, and the parameter its alignment uses. */
function windowSizes(w: WindowExpr): { unitMs: number; length: number; interval: number; alignParam: number } {
  const unitMs = w.unit ? TIME_UNIT_MS[w.unit] : 1;
  return { unitMs, ...WINDOW_TYPES[w.type].sizes(w.lengths, unitMs) };
}

/** The window of the GROUP BY, with its filter and trigger compiled. */
function planWindow(w: WindowExpr, compiler: ExprCompiler): WindowSpec {
  let triggerUsesHits = false;
  if (w.trigger) {
    walk(w.trigger, (x) => {
      if (x.kind === 'call' && ['last_hit_count', 'last_hit_time'].includes(x.name.toLowerCase()))
        triggerUsesHits = true;
    });
  }
  return {
    type: w.type,
    ...windowSizes(w),
    filter: w.filter ? wherePredicate(compiler.compile(w.filter)) : null,
    trigger: w.trigger ? condition(compiler.compile(w.trigger), 'run Where error: ', true) : null,
    triggerUsesHits,
  };
}

/** The window functions (`row_number()`) the select fields call, each numbered for the call compiler. */
function windowFunctionCalls(a: Analysis, functions: FunctionRegistry, calls: RegistryCalls): CallExpr[] {
  const found: CallExpr[] = [];
  for (const f of a.fields) {
    walk(f.expr, (x) => {
      if (x.kind === 'call' && functions.kindOf(x.name) === 'window' && !calls.windowIndex.has(x)) {
        calls.windowIndex.set(x, found.length);
        found.push(x);
      }
    });
  }
  return found;
}

/** The stages after the join: grouping key, HAVING, window functions, ORDER BY, projection and set-returning fields. */
function planAfterJoin(a: Analysis, deps: PlanDeps, calls: RegistryCalls, compiler: ExprCompiler) {
  const key = a.dims.length ? groupKey(a.dims.map((d) => compiler.compile(d))) : null;
  const singleEvent = a.window === null && a.sources.length === 1;
  const having = a.having
    ? havingStage(
        calls.inAsyncStage('having', () => compiler.compile(a.having as Expr)),
        a.isAggregate,
        singleEvent,
      )
    : null;
  const rowNumberCalls = windowFunctionCalls(a, deps.functions, calls);
  const windowFuncs = rowNumberCalls.length ? windowFuncStage(rowNumberCalls, compiler) : null;
  const order = a.sorts.length ? calls.inAsyncStage('order', () => orderStage(a.sorts, compiler)) : null;
  const projection = calls.inAsyncStage('project', () =>
    compileProjection(a.fields, compiler, deps.functions, deps.options.sendMetaToSink),
  );
  const projectSet = projection.srfKey !== null ? projectSetStage(projection.srfKey) : null;
  const asyncStages: Partial<Record<AsyncConsumer, AsyncStage>> = {};
  for (const consumer of ['where', 'having', 'order', 'project'] as const) {
    const stage = calls.asyncStage(consumer);
    if (stage) asyncStages[consumer] = stage;
  }
  return { key, having, windowFuncs, order, project: { project: projection.project }, projectSet, asyncStages };
}

/**
 * Compiles an analysed SELECT into its plan. Expressions compile in a fixed order (joins, lookups, WHERE, sources,
 * window, the stages after the join), the order generated code and call-site numbering depend on.
 */
function build(sql: string, a: Analysis, deps: PlanDeps, placement?: Placement): QueryPlan {
  const { isEventTime } = deps.options;
  const calls = new RegistryCalls(deps.functions);
  const compiler = new ExprCompiler({
    sources: a.sources.map((s) => ({ name: s.name, alias: s.alias })),
    multi: a.sources.length > 1,
    calls,
    cached: a.cachedExprs,
  });
  const analytic = calls.analyticStage(a.analyticCalls, compiler);

  const whereAsync = a.where !== null && calls.hasAsyncCall(a.where);
  const { pushed, remaining: afterPush } = placeWhere(
    a,
    wherePushesDown(a, isEventTime, analytic !== null, whereAsync),
  );
  const { joins, remaining } = planStreamJoins(a, afterPush, compiler, whereAsync);
  const lookupJoins = planLookupJoins(a, compiler);
  const where = remaining.length
    ? wherePredicate(calls.inAsyncStage('where', () => compiler.compile(andAll(remaining) as Expr)))
    : null;
  if (placement) {
    placement.pushed = pushed;
    placement.where = andAll(remaining);
  }
  const sources = planSources(a, pushed, isEventTime, compiler);
  const window = a.window ? planWindow(a.window, compiler) : null;
  const after = planAfterJoin(a, deps, calls, compiler);

  const nodes = buildNodes(a, {
    decompresses: deps.decompresses ?? (() => false),
    isEventTime,
    sources,
    analytic,
    pushed: pushed.map((p) => p.length > 0),
    window,
    lookupJoins,
    joins,
    where,
    having: after.having,
    windowFuncs: after.windowFuncs,
    order: after.order,
    project: after.project,
    projectSet: after.projectSet,
    asyncStages: after.asyncStages,
  });

  return {
    sql,
    sources,
    nodes,
    isEventTime,
    isAggregate: a.isAggregate,
    analytic,
    window,
    lookupJoins,
    joins,
    where,
    aggregate: a.dims.length ? { key: after.key } : null,
    having: after.having,
    windowFuncs: after.windowFuncs,
    order: after.order,
    project: after.project,
    limit: a.stmt.limit,
    projectSet: after.projectSet,
    usesHits: a.usesHits,
    usesAggHits: a.usesAggHits,
    hits: hitTracker,
    newContext: (ruleId, ruleStart) => new EvalContext(ruleId, ruleStart),
    toUnits: unitBuilder(a.isAggregate, after.key),
  };
}

// ------------------------------------------------------------------------------------------------ nodes

/** The compiled stages the nodes carry, and what decides which nodes there are. */
interface NodeParts {
  decompresses: (def: StreamDef) => boolean;
  isEventTime: boolean;
  /** in FROM/JOIN order, as `a.sources` */
  sources: readonly SourcePlan[];
  analytic: AnalyticStage | null;
  /** per source: whether a WHERE part is pushed to it */
  pushed: boolean[];
  window: WindowSpec | null;
  lookupJoins: readonly LookupJoinPlan[];
  joins: readonly JoinPlan[];
  where: RowPredicate | null;
  having: HavingStage | null;
  windowFuncs: WindowFuncStage | null;
  order: OrderStage | null;
  project: ProjectStage;
  projectSet: ProjectSetStage | null;
  /** stages that read asynchronous calls: an `async` node computing them precedes each */
  asyncStages: Partial<Record<AsyncConsumer, AsyncStage>>;
}

const always: RowPredicate = () => true;

/** Topology nodes with the post-order numbering of docs/runtime.md §1.6, each carrying its stage. */
function buildNodes(a: Analysis, p: NodeParts): PlanNode[] {
  const nodes: PlanNode[] = [];
  let n = 0;
  /** the name of the next node: `op_<N>_<kind>` unless given */
  const next = (kind: NodeKind, name?: string): string => {
    n++;
    return name ?? `op_${n}_${kind}`;
  };
  const add = (node: PlanNode): string[] => {
    nodes.push(node);
    return [node.name];
  };
  // the asynchronous node computing the calls a stage reads, just before that stage
  const ahead = (consumer: AsyncConsumer, inputs: readonly string[]): readonly string[] => {
    const stage = p.asyncStages[consumer];
    return stage ? add({ kind: 'async', name: next('async'), inputs, stage }) : inputs;
  };
  const chain = (s: BoundSource, i: number): string => {
    const source = p.sources[i];
    const mqtt = isMqtt(s);
    let tail = add({ kind: 'source', name: next('source', `source_${s.name}`), inputs: [], source, decodes: !mqtt });
    if (mqtt) {
      const shared = s.def.options.SHARED === true;
      const opName = (kind: NodeKind): string => next(kind, shared ? `op_${s.name}_${n + 1}_${kind}` : undefined);
      if (p.decompresses(s.def)) tail = add({ kind: 'decompress', name: opName('decompress'), inputs: tail, source });
      const fmt = (s.def.options.FORMAT ?? 'json').toLowerCase();
      const preprocessor = p.isEventTime || s.def.options.STRICT_VALIDATION === true || fmt === 'binary';
      tail = add({ kind: 'decoder', name: opName('decoder'), inputs: tail, source, preprocessor });
      if (preprocessor) tail = add({ kind: 'preprocessor', name: opName('preprocessor'), inputs: tail, source });
    }
    if (p.pushed[i])
      tail = add({ kind: 'filter', name: next('filter'), inputs: tail, pred: source.filter ?? always, source: s.name });
    return tail[0];
  };

  const streams: string[] = [];
  a.sources.forEach((s, i) => {
    if (s.role === 'stream') streams.push(chain(s, i));
  });
  let tails: readonly string[] = streams;
  if (p.isEventTime) {
    const emitters = p.sources.filter((s) => s.role === 'stream').map((s) => s.name);
    tails = add({ kind: 'watermark', name: next('watermark'), inputs: tails, streams: emitters });
  }
  if (p.analytic) tails = add({ kind: 'analytic', name: next('analytic'), inputs: tails, stage: p.analytic });
  if (p.window) {
    const spec = p.window;
    if (spec.filter)
      tails = add({ kind: 'windowFilter', name: next('windowFilter'), inputs: tails, pred: spec.filter });
    tails = add({ kind: 'window', name: next('window'), inputs: tails, spec });
  }
  const tables: string[] = [];
  a.sources.forEach((s, i) => {
    if (s.role === 'table') tables.push(chain(s, i));
  });
  a.joins
    .filter((j) => j.source.role === 'lookup')
    .forEach((j, i) => {
      const join = p.lookupJoins.find((l) => l.table === j.source.name) ?? p.lookupJoins[i];
      tails = add({ kind: 'lookup', name: next('lookup', `op_${j.source.name}`), inputs: tails, join });
    });
  if (tables.length) {
    const aligned = p.sources
      .filter((s) => s.role === 'table')
      .map((s) => {
        const r = Number(s.def.options.RETAIN_SIZE);
        return { name: s.name, retain: Number.isFinite(r) && r > 0 ? r : null };
      });
    tails = add({ kind: 'join_aligner', name: next('join_aligner'), inputs: [...tails, ...tables], tables: aligned });
  }
  if (p.joins.length)
    tails = add({ kind: 'join', name: next('join'), inputs: tails, from: p.sources[0].name, joins: p.joins });
  if (p.where) {
    const inputs = ahead('where', tails);
    tails = add({ kind: 'filter', name: next('filter'), inputs, pred: p.where, source: null });
  }
  if (a.dims.length) tails = add({ kind: 'aggregate', name: next('aggregate'), inputs: tails });
  if (p.having) {
    const inputs = ahead('having', tails);
    tails = add({ kind: 'having', name: next('having'), inputs, stage: p.having });
  }
  if (p.windowFuncs) tails = add({ kind: 'windowFunc', name: next('windowFunc'), inputs: tails, stage: p.windowFuncs });
  if (p.order) {
    const inputs = ahead('order', tails);
    tails = add({ kind: 'order', name: next('order'), inputs, stage: p.order });
  }
  const inputs = ahead('project', tails);
  tails = add({ kind: 'project', name: next('project'), inputs, stage: p.project });
  if (p.projectSet) add({ kind: 'projectset', name: next('projectset'), inputs: tails, stage: p.projectSet });
  return nodes;
}

// ------------------------------------------------------------------------------------------------ explain

interface ExplainNode {
  type: string;
  info: string;
  children: ExplainNode[];
}

function fieldsText(exprs: readonly string[]): string {
  return `[ ${exprs.join(', ')} ]`;
}

const WINDOW_TYPE: Record<string, string> = {
  tumbling: 'TUMBLING_WINDOW',
  hopping: 'HOPPING_WINDOW',
  sliding: 'SLIDING_WINDOW',
  session: 'SESSION_WINDOW',
  count: 'COUNT_WINDOW',
};

function explainTree(a: Analysis, plan: QueryPlan, placement: Placement): ExplainNode {
  const leaf = (s: BoundSource, i: number): ExplainNode => {
    const schema = a.schemas[i];
    const info = a.wildcard[i]
      ? `StreamName: ${s.name} wildcard:true`
      : `StreamName: ${s.name}, Fields:${fieldsText(a.columns[i])}, StreamFields:${fieldsText((schema ?? []).map((f) => f.name))}`;
    let node: ExplainNode = { type: 'DataSourcePlan', info, children: [] };
    const pushed = andAll(placement.pushed[i] ?? []);
    if (pushed) node = { type: 'FilterPlan', info: `Condition:{ ${exprToString(pushed)} }, `, children: [node] };
    return node;
  };
  let children: ExplainNode[] = a.sources
    .map((s, i) => (s.role === 'stream' ? leaf(s, i) : null))
    .filter((x): x is ExplainNode => x !== null);
  const wrap = (type: string, info: string): void => {
    children = [{ type, info, children }];
  };
  if (plan.isEventTime) wrap('WatermarkPlan', '');
  if (plan.analytic) wrap('AnalyticFuncsPlan', `Funcs:${fieldsText(a.analyticCalls.map(exprToString))}`);
  if (a.window) {
    const w = plan.window as WindowSpec;
    wrap(
      'WindowPlan',
      `{ length:${w.type === 'count' ? w.length : a.window.lengths[0]}, windowType:${WINDOW_TYPE[w.type]}, limit: 0 }`,
    );
  }
  for (const j of a.joins) {
    if (j.source.role === 'lookup') wrap('LookupPlan', `Join:{ joinType:${j.clause.type}, table:${j.source.name} }`);
  }
  const tables = a.sources
    .map((s, i) => (s.role === 'table' ? leaf(s, i) : null))
    .filter((x): x is ExplainNode => x !== null);
  if (tables.length) children = [{ type: 'JoinAlignPlan', info: '', children: [...children, ...tables] }];
  const streamJoins = a.joins.filter((j) => j.source.role !== 'lookup');
  if (streamJoins.length) {
    wrap(
      'JoinPlan',
      `Joins:[ ${streamJoins.map((j) => `{ joinType:${j.clause.type}, stream:${j.source.name}${j.on ? `, expr:${exprToString(j.on)}` : ''} }`).join(', ')} ]`,
    );
  }
  if (placement.where) wrap('FilterPlan', `Condition:{ ${exprToString(placement.where)} }, `);
  if (a.dims.length) wrap('AggregatePlan', `Dimension:{ ${a.dims.map(exprToString).join(', ')} }`);
  if (a.having) wrap('HavingPlan', `Condition:{ ${exprToString(a.having)} }, `);
  if (plan.windowFuncs) wrap('WindowFuncPlan', '');
  if (a.sorts.length)
    wrap(
      'OrderPlan',
      `SortFields:[ ${a.sorts.map((s) => `${exprToString(s.expr)} ${s.ascending ? 'ASC' : 'DESC'}`).join(', ')} ]`,
    );
  const fields = a.stmt.fields.map((f) =>
    f.expr.kind === 'wildcard' ? exprToString(f.expr) : (f.alias ?? exprToString(f.expr)),
  );
  wrap('ProjectPlan', `Fields:${fieldsText(fields)}${a.stmt.limit !== null ? `, Limit:${a.stmt.limit}` : ''}`);
  if (plan.projectSet) wrap('ProjectSetPlan', '');
  return children[0];
}

/**
 * EXPLAIN text (docs/rest-api.md §4.14): one compact JSON object per logical plan node, depth-first from the root,
 * each followed by an empty line; indentation 0 at depth 0, then 6·depth − 3 spaces.
 */
export function explainQuery(sql: string, deps: PlanDeps): string {
  const a = analyzeSql(sql, deps);
  const placement: Placement = { pushed: [], where: null };
  const plan = coded(() => build(sql, a, deps, placement));
  const root = explainTree(a, plan, placement);
  // ids are assigned depth-first (pre-order) from 0
  const ids = new Map<ExplainNode, number>();
  const number = (node: ExplainNode): void => {
    ids.set(node, ids.size);
    node.children.forEach(number);
  };
  number(root);
  let out = '';
  const print = (node: ExplainNode, depth: number): void => {
    const children = node.children.length ? node.children.map((c) => ids.get(c) as number) : null;
    const line = JSON.stringify({ type: node.type, info: node.info, id: ids.get(node), children });
    out += (depth === 0 ? '' : ' '.repeat(6 * depth - 3)) + line + '\n\n';
    for (const c of node.children) print(c, depth + 1);
  };
  print(root, 0);
  return out;
}

export type { RowPredicate };
