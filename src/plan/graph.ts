/**
 * The graph-rule planner (docs/runtime.md §1.4): a rule given as nodes and edges instead of SQL. Node expressions
 * are SQL fragments, parsed with the SQL parser and compiled with the same expression compiler as SQL rules; every
 * operator becomes a stage of the kind the SQL planner builds (filter and HAVING conditions, projections, group
 * keys, ORDER BY, windows, joins, lookup joins), so the runtime runs graph rules on the same operators.
 *
 * Failures are EddyErrors 2101 whose texts are eKuiper's (`parse filter f with map[expr:a >] error: …`,
 * `no edge defined for source node s`, `node a output does not match node b input: …`).
 */
import type { Expr, SelectField, SelectStatement } from '../sql/ast.js';
import { parseExpression, exprToString } from '../sql/index.js';
import type { StreamCatalog, StreamDef } from '../catalog/types.js';
import type { FunctionRegistry } from '../functions/registry.js';
import type { Props, RuleOptions } from '../contracts/index.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import {
  EvalContext,
  type HavingStage,
  type JoinKind,
  type JoinPlan,
  type LookupJoinPlan,
  type QueryPlan,
  type RowFn,
  type RowPredicate,
  type SourcePlan,
  type WindowSpec,
} from './plan.js';
import { ExprCompiler } from './compile.js';
import { RegistryCalls } from './calls.js';
import { andAll, conjuncts, lookupKeys, type BoundSource } from './analyze.js';
import { walk } from '../sql/visit.js';
import {
  compileProjection,
  groupKey,
  havingStage,
  hitTracker,
  joinPredicate,
  orderStage,
  unitBuilder,
  wherePredicate,
} from './stages.js';
import {
  bool,
  checkScript,
  decodeError,
  exprProp,
  fail,
  field,
  goText,
  inlineStream,
  isObj,
  messageOf,
  objects,
  parseWindow,
  select,
  str,
  strings,
  type Obj,
} from './graph-props.js';
import {
  CollShape,
  Io,
  mapOut,
  misfit,
  OP_IO,
  orderNodes,
  reverseEdges,
  SOURCE_IO,
  type InEdge,
  type IoType,
} from './graph-validate.js';

export interface GraphPlanDeps {
  readonly catalog: StreamCatalog;
  readonly functions: FunctionRegistry;
  readonly options: Pick<RuleOptions, 'isEventTime' | 'sendMetaToSink'>;
}

/** A stream source node (`source_<key>`); tables have no node of their own. */
export interface GraphSource {
  readonly key: string;
  readonly name: string;
  /** the stream read: a created stream, or one defined inline by the node's properties (named after the key) */
  readonly def: StreamDef;
  /** event-time rules: the field holding the event time */
  readonly timestampField: string | null;
  /** the source as the plan's source node carries it (runtime/factories.ts builds it) */
  readonly plan: SourcePlan;
  /** an empty stage plan: a source node runs no SQL stage */
  readonly stage: QueryPlan;
}

/** What one operator node does, with its compiled stages. */
export type GraphOp =
  | { readonly kind: 'filter'; readonly pred: RowPredicate }
  | { readonly kind: 'having'; readonly stage: HavingStage }
  /** function/aggfunc: the call's value stored under `column`; `agg`: evaluated per group */
  | {
      readonly kind: 'function';
      readonly column: string;
      readonly fn: RowFn;
      readonly agg: boolean;
    }
  | { readonly kind: 'pick' }
  | {
      readonly kind: 'window';
      readonly spec: WindowSpec;
      /**
       * Event-time rules whose window has no watermark node upstream: the streams whose progress makes the window's
       * own watermark (eKuiper's graph plans rely on event-time windows working without one). Null otherwise.
       */
      readonly ownWatermark: readonly string[] | null;
    }
  | {
      readonly kind: 'join';
      readonly from: string;
      readonly joins: readonly JoinPlan[];
    }
  | { readonly kind: 'lookup'; readonly join: LookupJoinPlan }
  | { readonly kind: 'groupby' }
  | { readonly kind: 'orderby' }
  | {
      readonly kind: 'switch';
      readonly cases: readonly RowFn[];
      readonly texts: readonly string[];
      readonly stopAtFirstMatch: boolean;
    }
  | {
      readonly kind: 'watermark';
      readonly emitters: readonly string[];
      readonly sendWatermark: boolean;
    }
  | {
      readonly kind: 'script';
      readonly script: string;
      readonly isAgg: boolean;
    };

export interface GraphOpNode {
  readonly key: string;
  /** `op_<key>`; a lookup join `op_<table>` */
  readonly name: string;
  readonly op: GraphOp;
  /**
   * The single-stage plan the SQL operator of this node reads (projection, grouping, ORDER BY, units); the other
   * fields are empty.
   */
  readonly plan: QueryPlan;
  readonly inputs: readonly InEdge[];
  /** what arrives: rows, plain or grouped collections */
  readonly input: IoType;
}

export interface GraphSink {
  readonly key: string;
  /** `sink_<key>` */
  readonly name: string;
  readonly type: string;
  readonly props: Props;
  readonly inputs: readonly InEdge[];
}

export interface GraphPlan {
  /** stream source nodes, in `topo.sources` order */
  readonly sources: readonly GraphSource[];
  /** operators in planning order (every input before its consumers) */
  readonly ops: readonly GraphOpNode[];
  readonly sinks: readonly GraphSink[];
  /** created streams and tables the rule reads (rules using a stream) */
  readonly reads: readonly string[];
  newContext(ruleId: string, ruleStart: number): EvalContext;
}

// ---------------------------------------------------------------------------------------------- helpers
/** A plan carrying only what one SQL operator of a graph node reads. */
function stagePlan(over: Partial<QueryPlan>): QueryPlan {
  return {
    sql: '',
    sources: [],
    nodes: [],
    isEventTime: false,
    isAggregate: false,
    analytic: null,
    window: null,
    lookupJoins: [],
    joins: [],
    where: null,
    aggregate: null,
    having: null,
    windowFuncs: null,
    order: null,
    project: { project: () => ({}) },
    limit: null,
    projectSet: null,
    usesHits: false,
    usesAggHits: false,
    hits: hitTracker,
    newContext: (ruleId, ruleStart) => new EvalContext(ruleId, ruleStart),
    toUnits: unitBuilder(false, null),
    ...over,
  };
}

// ---------------------------------------------------------------------------------------------- node parsing

interface ParsedSource {
  readonly role: 'stream' | 'table' | 'lookup';
  readonly def: StreamDef;
  /** the emitter name: the stream's name, or the node key for an inline stream */
  readonly name: string;
  readonly created: boolean;
}

function parseSource(key: string, nodeType: string, props: Obj, catalog: StreamCatalog): ParsedSource {
  const sourceType = str(props, 'sourceType') || 'stream';
  if (sourceType !== 'stream' && sourceType !== 'table') fail(`source type ${sourceType} not supported`);
  const sourceName = str(props, 'sourceName');
  if (sourceName === '') {
    if (sourceType === 'table') fail('anonymouse table source is not supported, please create it prior to the rule');
    return {
      role: 'stream',
      def: inlineStream(key, nodeType, props),
      name: key,
      created: false,
    };
  }
  const def = catalog.get(sourceName) ?? fail(`fail to get stream ${sourceName}, please check if stream is created`);
  if (def.kind === 'stream' && sourceType === 'table') fail(`stream ${sourceName} is not a table`);
  if (def.kind === 'table' && sourceType === 'stream') fail(`table ${sourceName} is not a stream`);
  const st = def.options.TYPE || 'mqtt';
  if (st !== nodeType) fail(`source type ${nodeType} does not match the stream type ${st}`);
  const role = def.kind === 'stream' ? 'stream' : def.options.KIND === 'lookup' ? 'lookup' : 'table';
  return { role, def, name: def.name, created: true };
}

// ---------------------------------------------------------------------------------------------- planning

interface RawNode {
  readonly type: unknown;
  readonly nodeType: string;
  readonly props: Obj;
}

/** Operator node before the data-flow check: how to build its op once the input kind is known. */
interface PendingOp {
  readonly nodeType: string;
  readonly build: (input: IoType) => { op: GraphOp; plan: QueryPlan } | null;
}

/**
 * Plans a graph rule. Throws EddyError 2101 with eKuiper's texts; nothing is built or opened.
 */
export function planGraph(graph: Obj, deps: GraphPlanDeps): GraphPlan {
  try {
    return build(graph, deps);
  } catch (e) {
    if (e instanceof EddyError) throw e;
    throw new EddyError(ErrorCode.Plan, messageOf(e));
  }
}

function readNodes(graph: Obj): Map<string, RawNode> {
  const nodes = field(graph, 'nodes');
  const out = new Map<string, RawNode>();
  if (!isObj(nodes)) return out;
  for (const [k, v] of Object.entries(nodes)) {
    if (!isObj(v)) decodeError(`nodes[${k}]`, 'api.GraphNode', v);
    const nt = field(v, 'nodeType');
    const props = field(v, 'props');
    if (nt !== undefined && nt !== null && typeof nt !== 'string') decodeError('nodeType', 'string', nt);
    if (props !== undefined && props !== null && !isObj(props)) decodeError('props', 'map[string]interface {}', props);
    out.set(k, {
      type: field(v, 'type'),
      nodeType: (nt as string | undefined) ?? '',
      props: (props as Obj | undefined) ?? {},
    });
  }
  return out;
}

function readTopo(graph: Obj): {
  sources: string[];
  edges: Map<string, Array<string | string[]>>;
} {
  const topo = field(graph, 'topo');
  const t = isObj(topo) ? topo : {};
  const sources = strings(t, 'sources');
  const edges = new Map<string, Array<string | string[]>>();
  const raw = field(t, 'edges');
  if (isObj(raw)) {
    for (const [from, tos] of Object.entries(raw)) {
      if (!Array.isArray(tos)) decodeError(`edges[${from}]`, '[]interface {}', tos);
      edges.set(
        from,
        (tos as unknown[]).map((to) => {
          if (typeof to === 'string') return to;
          if (Array.isArray(to) && to.every((x) => typeof x === 'string')) return to as string[];
          return fail(`invalid edge toNode ${goText(to)}`);
        }),
      );
    }
  }
  return { sources, edges };
}

function build(graph: Obj, deps: GraphPlanDeps): GraphPlan {
  const nodes = readNodes(graph);
  const { sources: srcKeys, edges } = readTopo(graph);
  const { catalog, functions, options } = deps;

  // ---- sources
  const parsed = new Map<string, ParsedSource>();
  const sourceNames: string[] = [];
  const streamEmitters = new Set<string>();
  const scanTables: string[] = [];
  const lookups = new Map<string, StreamDef>();
  for (const key of srcKeys) {
    const gn = nodes.get(key) ?? fail(`source node ${key} not defined`);
    if (!edges.has(key)) fail(`no edge defined for source node ${key}`);
    let ps: ParsedSource;
    try {
      ps = parseSource(key, gn.nodeType, gn.props, catalog);
    } catch (e) {
      return fail(`parse source ${key} with ${goText(gn.props)} error: ${messageOf(e)}`);
    }
    parsed.set(key, ps);
    sourceNames.push(ps.name);
    if (ps.role === 'stream') streamEmitters.add(ps.name);
    else if (ps.role === 'table') scanTables.push(ps.name);
    else lookups.set(ps.name, ps.def);
  }

  const compiler = new ExprCompiler({
    sources: sourceNames.map((name) => ({ name, alias: name })),
    multi: true,
    calls: new RegistryCalls(functions),
  });
  const bound: BoundSource[] = [...parsed.values()].map((p) => ({
    name: p.name,
    alias: p.name,
    def: p.def,
    role: p.role,
    join: null,
  }));

  const scope: Scope = { compiler, functions, options, streamEmitters, scanTables, lookups, bound };

  // ---- operators and sinks
  const pending = new Map<string, PendingOp>();
  const sinks = new Map<string, { type: string; props: Props }>();
  for (const [key, gn] of nodes) {
    switch (gn.type) {
      case 'source':
        continue;
      case 'sink':
        if (edges.has(key)) fail(`sink ${key} has edge`);
        sinks.set(key, { type: gn.nodeType, props: gn.props });
        continue;
      case 'operator':
        break;
      default:
        fail(`unknown node type ${goText(gn.type)}`);
    }
    if (!edges.has(key)) fail(`no edge defined for operator node ${key}`);
    pending.set(key, parseOperator(key, gn, scope));
  }

  for (const key of srcKeys) if (nodes.get(key)?.type !== 'source') fail(`source ${key} is not a source type node`);

  // ---- edges, order and the kinds flowing along them
  const inbound = reverseEdges(edges, (n) => nodes.has(n));
  const order = orderNodes(srcKeys, edges, inbound, nodes.size);
  const flow = new Map<string, IoType>();
  const ops: GraphOpNode[] = [];
  const sinkPlans: GraphSink[] = [];
  // tables have no node: their edges only declare what a join reads
  const isStreamSource = (key: string): boolean => parsed.get(key)?.role === 'stream';
  const wired = (ins: readonly InEdge[]): InEdge[] =>
    ins.filter((e) => nodes.get(e.from)?.type !== 'source' || isStreamSource(e.from));
  for (const key of order) {
    const gn = nodes.get(key) ?? fail(`can't find node ${key}`);
    if (gn.type === 'source') {
      flow.set(key, SOURCE_IO);
      continue;
    }
    const ins = inbound.get(key) ?? [];
    if (gn.type === 'sink') {
      const s = sinks.get(key) as { type: string; props: Props };
      sinkPlans.push({
        key,
        name: `sink_${key}`,
        type: s.type,
        props: s.props,
        inputs: wired(ins),
      });
      continue;
    }
    const io = OP_IO[gn.nodeType.toLowerCase()] ?? fail(`can't find the io definition for node type ${gn.nodeType}`);
    const accept = io[0];
    if (ins.length > 1) {
      if (!accept.multi) fail(`operator ${key} of type ${gn.nodeType} does not allow multiple inputs`);
      if (gn.nodeType === 'join' && ins.filter((e) => parsed.get(e.from)?.role !== 'lookup').length > 1) {
        fail(`join node ${key} does not allow multiple stream inputs`);
      }
    } else if (ins.length === 0) {
      fail(`operator ${key} of type ${gn.nodeType} has no input`);
    }
    for (const e of ins) {
      const why = misfit(flow.get(e.from) ?? SOURCE_IO, accept);
      if (why) fail(`node ${e.from} output does not match node ${key} input: ${why}`);
    }
    const input = flow.get(ins[0].from) ?? SOURCE_IO;
    flow.set(key, mapOut(input, io[1]));
    const built = (pending.get(key) as PendingOp).build(input) ?? fail(`node ${key} is not defined`);
    // a lookup join is named after its table, as in SQL rules (docs/runtime.md §1.6)
    const name = built.op.kind === 'lookup' ? `op_${built.op.join.table}` : `op_${key}`;
    ops.push({
      key,
      name,
      op: built.op,
      plan: built.plan,
      inputs: wired(ins),
      input,
    });
  }

  if (options.isEventTime) giveWindowsWatermarks(ops, (key) => parsed.get(key));

  // only a switch has one output per case
  const switches = new Set(ops.filter((o) => o.op.kind === 'switch').map((o) => o.key));
  for (const n of [...ops, ...sinkPlans]) {
    const bad = n.inputs.find((e) => e.port > 0 && !switches.has(e.from));
    if (bad) fail(`node ${bad.from} is not a switch node but have multiple output`);
  }

  const sources: GraphSource[] = [];
  for (const key of srcKeys) {
    const p = parsed.get(key) as ParsedSource;
    if (p.role !== 'stream') continue;
    const timestampField = options.isEventTime ? (p.def.options.TIMESTAMP ?? null) || null : null;
    sources.push({
      key,
      name: `source_${key}`,
      def: p.def,
      timestampField,
      // the whole payload, typed by the stream's declared fields
      plan: {
        name: p.def.name,
        alias: key,
        def: p.def,
        role: 'stream',
        schema: p.def.fields,
        timestampField,
        filter: null,
      },
      stage: stagePlan({}),
    });
  }
  const reads = [...parsed.values()].filter((p) => p.created).map((p) => p.name);
  return {
    sources,
    ops,
    sinks: sinkPlans,
    reads,
    newContext: (ruleId, ruleStart) => new EvalContext(ruleId, ruleStart),
  };
}

/**
 * Event time: a window with no watermark node above it keeps its own watermark over the streams that reach it, so
 * that it closes as event time advances.
 */
function giveWindowsWatermarks(ops: GraphOpNode[], sourceOf: (key: string) => ParsedSource | undefined): void {
  const upstream = new Map<string, { watermarked: boolean; streams: Set<string> }>();
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i];
    const info = { watermarked: o.op.kind === 'watermark', streams: new Set<string>() };
    for (const e of o.inputs) {
      const src = sourceOf(e.from);
      if (src) {
        if (src.role === 'stream') info.streams.add(src.name);
        continue;
      }
      const up = upstream.get(e.from);
      if (!up) continue;
      if (up.watermarked) info.watermarked = true;
      for (const st of up.streams) info.streams.add(st);
    }
    upstream.set(o.key, info);
    if (o.op.kind === 'window' && !info.watermarked) {
      ops[i] = { ...o, op: { ...o.op, ownWatermark: [...info.streams] } };
    }
  }
}

/** What operator parsing reads: the compiler over every source, and the sources by role. */
interface Scope {
  readonly compiler: ExprCompiler;
  readonly functions: FunctionRegistry;
  readonly options: GraphPlanDeps['options'];
  readonly streamEmitters: ReadonlySet<string>;
  readonly scanTables: readonly string[];
  readonly lookups: ReadonlyMap<string, StreamDef>;
  readonly bound: readonly BoundSource[];
}

/** What the operator node `key` becomes once its input kind is known; throws eKuiper's parse errors. */
function parseOperator(key: string, gn: RawNode, scope: Scope): PendingOp {
  const { compiler, functions, options, streamEmitters, scanTables, lookups, bound } = scope;
  const expr = (text: string): Expr => parseExpression(text);
  const nt = gn.nodeType.toLowerCase();
  const wrap = <R>(what: string, f: () => R): R => {
    try {
      return f();
    } catch (e) {
      return fail(`parse ${what} ${key} with ${goText(gn.props)} error: ${messageOf(e)}`);
    }
  };
  const props = gn.props;
  switch (nt) {
    case 'watermark': {
      const w = wrap('watermark', () => {
        const emitters = strings(props, 'emitters');
        const sendWatermark = bool(props, 'sendWatermark');
        if (emitters.length === 0) fail('watermark must have at least one emitter');
        for (const e of emitters) if (!streamEmitters.has(e)) fail(`emitter ${e} does not exist`);
        return { emitters, sendWatermark };
      });
      return {
        nodeType: nt,
        build: () => ({
          op: { kind: 'watermark', ...w },
          plan: stagePlan({}),
        }),
      };
    }
    case 'function':
    case 'aggfunc': {
      const f = wrap(nt, () => {
        const text = exprProp(props);
        const fld: SelectField = select(`select ${text} from nonexist`).fields[0];
        // meta()/mqtt() are calls in eKuiper's AST, a node of their own here
        if (fld.expr.kind !== 'call' && fld.expr.kind !== 'meta') fail(`expr ${text} is not ast.Call`);
        const column = fld.alias ?? fld.name;
        const fn = compiler.compile(fld.expr);
        // eKuiper decides by the output name, so an alias hides an aggregate call
        return {
          column,
          fn,
          agg: nt === 'aggfunc' || functions.kindOf(column) === 'aggregate',
        };
      });
      return {
        nodeType: nt,
        build: () => ({
          op: { kind: 'function', ...f },
          plan: stagePlan({ toUnits: unitBuilder(true, null) }),
        }),
      };
    }
    case 'filter': {
      const fn = wrap('filter', () => compiler.compile(expr(exprProp(props))));
      return {
        nodeType: nt,
        build: (input) =>
          input.type === Io.Collection && input.coll === CollShape.Grouped
            ? {
                op: { kind: 'having', stage: havingStage(fn, true, false) },
                plan: stagePlan({ isAggregate: true }),
              }
            : {
                op: { kind: 'filter', pred: wherePredicate(fn) },
                plan: stagePlan({}),
              },
      };
    }
    case 'pick': {
      const plan = wrap('pick', () => {
        const fields = strings(props, 'fields');
        const stmt = select(`select ${fields.join(',')} from nonexist`);
        // an aggregate call in the fields makes the projection aggregate, as the `isAgg` property does
        let isAgg = bool(props, 'isAgg');
        for (const f of stmt.fields) {
          walk(f.expr, (x) => {
            if (x.kind === 'call' && functions.kindOf(x.name) === 'aggregate') isAgg = true;
          });
        }
        const projection = compileProjection(
          stmt.fields.map((f) => ({ field: f, expr: f.expr })),
          compiler,
          functions,
          options.sendMetaToSink,
        );
        return stagePlan({
          isAggregate: isAgg,
          project: { project: projection.project },
          toUnits: unitBuilder(isAgg, null),
        });
      });
      return {
        nodeType: nt,
        build: () => ({ op: { kind: 'pick' }, plan }),
      };
    }
    case 'window': {
      let spec: WindowSpec;
      try {
        spec = parseWindow(props);
      } catch (e) {
        return fail(`parse window conf ${key} with ${goText(props)} error: ${messageOf(e)}`);
      }
      return {
        nodeType: nt,
        build: () => ({ op: { kind: 'window', spec, ownWatermark: null }, plan: stagePlan({}) }),
      };
    }
    case 'join': {
      const op = wrap('join', () => planJoin(props, compiler, streamEmitters, scanTables, lookups, bound));
      return {
        nodeType: nt,
        build: () => (op ? { op, plan: stagePlan({}) } : null),
      };
    }
    case 'groupby': {
      const key0 = wrap('groupby', () => {
        const dims = strings(props, 'dimensions');
        if (dims.length === 0) fail('groupby must have at least one dimension');
        let stmt: SelectStatement;
        try {
          stmt = select(`SELECT * FROM unknown Group By ${dims.join(',')}`);
        } catch (e) {
          return fail(`invalid join statement error: ${messageOf(e)}`);
        }
        const exprs = stmt.dimensions.filter((d): d is Expr => d.kind !== 'window');
        return groupKey(exprs.map((d) => compiler.compile(d)));
      });
      return {
        nodeType: nt,
        build: () => ({
          op: { kind: 'groupby' },
          plan: stagePlan({
            isAggregate: true,
            aggregate: { key: key0 },
            toUnits: unitBuilder(true, key0),
          }),
        }),
      };
    }
    case 'orderby': {
      const order = wrap('orderby', () => {
        let sql = 'SELECT * FROM unknown ORDER BY';
        for (const s of objects(props, 'sorts')) {
          sql += ` ${str(s, 'field')} `;
          if (bool(s, 'desc')) sql += 'DESC';
        }
        let stmt: SelectStatement;
        try {
          stmt = select(sql);
        } catch (e) {
          return fail(`invalid order by statement error: ${messageOf(e)}`);
        }
        if (stmt.sorts.length === 0) fail('order by statement is empty');
        return orderStage(stmt.sorts, compiler);
      });
      return {
        nodeType: nt,
        build: () => ({
          op: { kind: 'orderby' },
          plan: stagePlan({ order }),
        }),
      };
    }
    case 'switch': {
      const sw = wrap('switch', () => {
        const cases = strings(props, 'cases');
        const stopAtFirstMatch = bool(props, 'stopAtFirstMatch');
        if (cases.length === 0) fail('switch node must have at least one case');
        const parsedCases = cases.map((c, i) => {
          try {
            const e = expr(c);
            return { fn: compiler.compile(e), text: exprToString(e) };
          } catch (e) {
            return fail(`parse case ${i} error: ${messageOf(e)}`);
          }
        });
        return {
          cases: parsedCases.map((c) => c.fn),
          texts: parsedCases.map((c) => c.text),
          stopAtFirstMatch,
        };
      });
      return {
        nodeType: nt,
        build: () => ({
          op: { kind: 'switch', ...sw },
          plan: stagePlan({ toUnits: unitBuilder(true, null) }),
        }),
      };
    }
    case 'script': {
      const script = str(props, 'script');
      const isAgg = bool(props, 'isAgg');
      if (script === '') fail('script node must have script');
      checkScript(script);
      return {
        nodeType: nt,
        build: () => ({
          op: { kind: 'script', script, isAgg },
          plan: stagePlan({}),
        }),
      };
    }
    default:
      return fail(`unknown operator type ${gn.nodeType}`);
  }
}

function planJoin(
  props: Obj,
  compiler: ExprCompiler,
  streams: ReadonlySet<string>,
  scanTables: readonly string[],
  lookups: ReadonlyMap<string, StreamDef>,
  bound: readonly BoundSource[],
): GraphOp | null {
  const from = str(props, 'from');
  let sql = `SELECT * FROM ${from}`;
  for (const j of objects(props, 'joins')) sql += ` ${str(j, 'type')} JOIN ${str(j, 'name')} ON ${str(j, 'on')}`;
  const stmt = select(sql);
  if (!streams.has(stmt.from.name)) fail(`join source ${stmt.from.name} is not a stream`);
  if (stmt.joins.length === 0) return null;
  let lookup: LookupJoinPlan | null = null;
  const rest = [];
  for (const j of stmt.joins) {
    if (lookup !== null && lookups.size > 0) fail('only support to join one lookup table with one stream');
    const def = lookups.get(j.source.name);
    if (def === undefined) {
      rest.push(j);
      continue;
    }
    const table = bound.find((b) => b.name === def.name) as BoundSource;
    const on = j.on;
    const keys = on ? lookupKeys(on, table, bound) : [];
    if (keys.length === 0)
      fail(`join condition ${on ? exprToString(on) : ''} is invalid, at least one equi-join predicate is required`);
    const others = conjuncts(on as Expr).filter((c) => !keys.some((k) => k.conjunct === c));
    lookup = {
      table: def.name,
      def,
      kind: j.type === 'left' ? 'left' : 'inner',
      fields: [],
      keys: keys.map((k) => k.key),
      values: keys.map((k) => compiler.compile(k.value)),
      on: others.length ? joinPredicate(compiler.compile(andAll(others) as Expr)) : null,
    };
  }
  if (lookup !== null) return { kind: 'lookup', join: lookup };
  if (scanTables.length > 0) fail(`do not support scan table [${scanTables.join(' ')}] yet`);
  const joins: JoinPlan[] = rest.map((j) => ({
    kind: j.type as JoinKind,
    stream: j.source.name,
    table: false,
    on: j.on ? joinPredicate(compiler.compile(j.on)) : null,
  }));
  return { kind: 'join', from: stmt.from.name, joins };
}
