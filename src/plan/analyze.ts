/**
 * Binding and static checks of a parsed SELECT (docs/sql.md §4.15): resolves streams, expands aliases, checks every
 * clause with eKuiper's messages, and collects what the planner needs (analytic calls, the fields each source
 * must decode, aggregate-ness).
 */
import type {
  CallExpr,
  Expr,
  FieldRef,
  JoinClause,
  SelectField,
  SelectStatement,
  SortField,
  WindowExpr,
} from '../sql/ast.js';
import { isBoolShaped, isWindow, unparen } from '../sql/ast.js';
import { windowFunctionType } from '../sql/windows.js';
import { forEachChild, mapChildren, walk } from '../sql/visit.js';
import type { StreamCatalog, StreamDef } from '../catalog/types.js';
import type { FieldType, StreamField } from '../sql/schema.js';
import type { RuleOptions } from '../contracts/index.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import { exprToString as exprText } from '../sql/print.js';
import { PlanError } from './compile.js';
import type { ArgInfo, FuncKind, FunctionRegistry } from '../functions/registry.js';

/** How an argument is written, for the registry's creation-time validation (docs/sql.md §7.0). */
export function argInfo(e: Expr): ArgInfo {
  switch (e.kind) {
    case 'integer':
      return { kind: 'int', literal: e.value };
    case 'float':
      return { kind: 'float', literal: e.value };
    case 'string':
      return { kind: 'string', literal: e.value };
    case 'boolean':
      return { kind: 'bool', literal: e.value };
    case 'timeUnit':
      return { kind: 'unit', name: e.unit };
    case 'field':
      return { kind: 'field', name: e.stream ? `${e.stream}.${e.name}` : e.name };
    case 'wildcard':
      return { kind: 'wildcard' };
    default:
      return isBoolShaped(e) && e.kind !== 'paren' ? { kind: 'boolExpr' } : { kind: 'other' };
  }
}

export interface BoundSource {
  readonly name: string;
  readonly alias: string;
  readonly def: StreamDef;
  readonly role: 'stream' | 'table' | 'lookup';
  /** the JOIN clause that brought it in, null for FROM */
  readonly join: JoinClause | null;
}

/** A select field with its expression after alias expansion. */
export interface BoundField {
  readonly field: SelectField;
  readonly expr: Expr;
}

export interface BoundJoin {
  readonly clause: JoinClause;
  readonly source: BoundSource;
  readonly on: Expr | null;
}

/** Per source: `null` = keep everything (wildcard or schemaless), else the declared fields read (narrowed). */
export type ReadSchema = StreamField[] | null;

export interface Analysis {
  readonly stmt: SelectStatement;
  readonly sources: readonly BoundSource[];
  readonly fields: readonly BoundField[];
  readonly joins: readonly BoundJoin[];
  readonly where: Expr | null;
  /** non-window GROUP BY dimensions, aliases expanded */
  readonly dims: readonly Expr[];
  readonly window: WindowExpr | null;
  readonly having: Expr | null;
  readonly sorts: readonly SortField[];
  readonly isAggregate: boolean;
  /** distinct analytic calls in evaluation order (inner calls first) */
  readonly analyticCalls: readonly CallExpr[];
  readonly usesHits: boolean;
  readonly usesAggHits: boolean;
  /**
   * Alias expressions that other clauses or fields reference: evaluated once per row and context, their value
   * reused (docs/sql.md §4.3). Plain columns and literals are left out (nothing to save).
   */
  readonly cachedExprs: ReadonlySet<Expr>;
  /** decode schema per source, same order as `sources` */
  readonly schemas: readonly ReadSchema[];
  /** referenced column names per source (lookup tables: the fields to fetch; empty = all) */
  readonly columns: readonly string[][];
  /** per source: the rule reads it whole (`*`, `s.*`) */
  readonly wildcard: readonly boolean[];
}

export interface AnalyzeDeps {
  readonly catalog: StreamCatalog;
  readonly functions: FunctionRegistry;
  readonly options: Pick<RuleOptions, 'isEventTime' | 'sendMetaToSink'>;
}

const planError = (msg: string): EddyError => new EddyError(ErrorCode.Plan, msg);

const HIT_FUNCS = new Set(['last_hit_count', 'last_hit_time']);
const AGG_HIT_FUNCS = new Set(['last_agg_hit_count', 'last_agg_hit_time']);

function lowerName(e: CallExpr): string {
  return e.name.toLowerCase();
}

// ------------------------------------------------------------------------------------------------ aliases

/** Replaces alias references by the (expanded) aliased expressions; detects cycles (docs/sql.md §4.3). */
class AliasExpander {
  private readonly defs = new Map<string, Expr>();
  private readonly done = new Map<string, Expr>();
  private readonly visiting = new Set<string>();
  /** alias expressions referenced from somewhere else than their own field */
  readonly referenced = new Set<Expr>();

  constructor(fields: readonly SelectField[]) {
    for (const f of fields) if (f.alias !== null && f.expr.kind !== 'wildcard') this.defs.set(f.alias, f.expr);
  }

  has(name: string): boolean {
    return this.defs.has(name);
  }

  /** The expanded expression of alias `name` (same object every time: analytic calls inside keep one identity). */
  alias(name: string): Expr {
    const hit = this.done.get(name);
    if (hit) return hit;
    if (this.visiting.has(name)) throw planError('select fields have cycled alias');
    this.visiting.add(name);
    const out = this.expand(this.defs.get(name) as Expr, name);
    this.visiting.delete(name);
    this.done.set(name, out);
    return out;
  }

  /** Expands `e`; `self` is the alias being defined (a reference to it inside its own definition is a column). */
  expand(e: Expr, self: string | null): Expr {
    if (e.kind === 'field' && e.stream === null && e.name !== self && this.defs.has(e.name)) {
      const x = this.alias(e.name);
      this.referenced.add(x);
      return x;
    }
    if (e.kind === 'meta') return e;
    return mapChildren(e, (c) => this.expand(c, self));
  }
}

// ------------------------------------------------------------------------------------------------ analysis

type Clause = 'select' | 'where' | 'groupby' | 'having' | 'order' | 'join' | 'windowFilter' | 'trigger';

interface FieldUse {
  /** the column name as written */
  name: string;
  /** index of the source, or -1 for unresolved (schemaless FROM fallback handled by the caller) */
  source: number;
  /** navigation path below the column (struct narrowing); null = read whole */
  path: string[] | null;
  declared: StreamField | null;
}

/** Where an expression being checked sits. */
interface Ctx {
  clause: Clause;
  /** name of the enclosing aggregate call, or null */
  agg: string | null;
  /** inside any function call's arguments */
  inCall: boolean;
  /** the clause's expression as written (named by the reference's aggregate-placement messages) */
  root: Expr | null;
}

/** The clauses of the statement with every alias reference replaced by its expression. */
interface ExpandedClauses {
  readonly fields: BoundField[];
  readonly where: Expr | null;
  /** non-window GROUP BY dimensions as written, and expanded */
  readonly dimsRaw: Expr[];
  readonly dims: Expr[];
  readonly having: Expr | null;
  readonly sorts: SortField[];
  readonly joins: BoundJoin[];
}

/** The decode plan of every source, same order as the sources. */
interface DecodePlan {
  readonly schemas: ReadSchema[];
  readonly columns: string[][];
  readonly wildcard: boolean[];
}

export function analyze(stmt: SelectStatement, deps: AnalyzeDeps): Analysis {
  const { catalog, functions, options } = deps;
  const { sources, joinSources } = bindSources(stmt, catalog);
  checkWindowsAndJoins(stmt, sources, options);
  const aliases = new AliasExpander(stmt.fields);
  const clauses = expandAliases(stmt, aliases, joinSources);
  const aggQuery = stmt.window !== null || stmt.dimensions.length > 0 || stmt.joins.length > 0;
  const checker = new ExprChecker(sources, aliases, functions, aggQuery);
  checker.checkClauses(stmt, clauses);
  checkLookupJoins(clauses.joins, sources);
  const decode = planDecoding(sources, checker, options);
  return {
    stmt,
    sources,
    fields: clauses.fields,
    joins: clauses.joins,
    where: clauses.where,
    dims: clauses.dims,
    window: stmt.window,
    having: clauses.having,
    sorts: clauses.sorts,
    isAggregate: clauses.dims.length > 0 || checker.hasAggInSelect,
    analyticCalls: checker.analytic,
    usesHits: checker.usesHits,
    usesAggHits: checker.usesAggHits,
    schemas: decode.schemas,
    columns: decode.columns,
    wildcard: decode.wildcard,
    cachedExprs: new Set(
      [...aliases.referenced].filter(
        (x) => !['field', 'integer', 'float', 'string', 'boolean'].includes(unparen(x).kind),
      ),
    ),
  };
}

/** The FROM source then every JOIN source, in statement order; a lookup table cannot be the FROM source. */
function bindSources(
  stmt: SelectStatement,
  catalog: StreamCatalog,
): { sources: BoundSource[]; joinSources: BoundSource[] } {
  const sources: BoundSource[] = [];
  const bind = (name: string, alias: string | null, join: JoinClause | null): BoundSource => {
    const def = catalog.get(name);
    if (!def) throw planError(`fail to get stream ${name}, please check if stream is created`);
    const role: BoundSource['role'] =
      def.kind === 'stream' ? 'stream' : def.options.KIND === 'lookup' ? 'lookup' : 'table';
    const s: BoundSource = { name: def.name, alias: alias ?? def.name, def, role, join };
    sources.push(s);
    return s;
  };
  const from = bind(stmt.from.name, stmt.from.alias, null);
  const joinSources = stmt.joins.map((j) => bind(j.source.name, j.source.alias, j));
  if (from.role === 'lookup') throw planError(`cannot find lookup table ${from.name} in any join`);
  return { sources, joinSources };
}

/** Windows, GROUP BY, joins and the options that depend on them (docs/sql.md §4.5, §4.7, §5). */
function checkWindowsAndJoins(
  stmt: SelectStatement,
  sources: readonly BoundSource[],
  options: AnalyzeDeps['options'],
): void {
  const window = stmt.window;
  const groupsByNonWindow = stmt.dimensions.some((d) => !isWindow(d));
  if (groupsByNonWindow && !window) throw planError('select stmt group by should be used with window');
  const streamCount = sources.filter((s) => s.role === 'stream').length;
  if (window && streamCount === 0) throw planError('cannot run window for TABLE sources');
  if (window && window.type === 'count' && options.isEventTime) throw planError('unsupported window type');
  if (streamCount > 1 && !window) throw planError('a time window or count window is required to join multiple streams');
  if (options.isEventTime) {
    for (const s of sources) {
      const ts = s.def.options.TIMESTAMP;
      if (ts && s.def.fields !== null && !findDecl(s.def.fields, ts))
        throw planError(`timestamp field ${ts} not found`);
    }
  }
  if (options.sendMetaToSink && (sources.length > 1 || stmt.dimensions.length > 0)) {
    throw planError('Invalid option sendMetaToSink, it can not be applied to window');
  }
}

/** Expands the aliases of every clause, in the order fields, WHERE, GROUP BY, HAVING, ORDER BY, JOIN ON. */
function expandAliases(
  stmt: SelectStatement,
  aliases: AliasExpander,
  joinSources: readonly BoundSource[],
): ExpandedClauses {
  const fields: BoundField[] = stmt.fields.map((f) => ({
    field: f,
    expr: f.alias !== null && f.expr.kind !== 'wildcard' ? aliases.alias(f.alias) : aliases.expand(f.expr, null),
  }));
  const ex = (e: Expr | null): Expr | null => (e ? aliases.expand(e, null) : null);
  const where = ex(stmt.where);
  const dimsRaw = stmt.dimensions.filter((d): d is Expr => !isWindow(d));
  const dims = dimsRaw.map((d) => aliases.expand(d, null));
  const having = ex(stmt.having);
  const sorts = stmt.sorts.map((s) => ({ expr: aliases.expand(s.expr, null), ascending: s.ascending }));
  const joins: BoundJoin[] = stmt.joins.map((j, i) => ({ clause: j, source: joinSources[i], on: ex(j.on) }));
  return { fields, where, dimsRaw, dims, having, sorts, joins };
}

/**
 * Checks every expression of the statement with eKuiper's messages, and records on the way what the planner needs:
 * the columns each source must decode, the analytic calls, whether hits functions or an aggregate in SELECT occur.
 */
class ExprChecker {
  /** distinct analytic calls, inner calls first */
  readonly analytic: CallExpr[] = [];
  private readonly analyticSeen = new Set<CallExpr>();
  usesHits = false;
  usesAggHits = false;
  hasAggInSelect = false;
  private srfCount = 0;
  /** every column read */
  readonly uses: FieldUse[] = [];
  /** `*` is selected */
  wildcardAll = false;
  /** sources selected whole with `s.*` */
  readonly wildcardSources = new Set<number>();

  constructor(
    private readonly sources: readonly BoundSource[],
    private readonly aliases: AliasExpander,
    private readonly functions: FunctionRegistry,
    /** the query groups rows (window, GROUP BY or join) */
    private readonly aggQuery: boolean,
  ) {}

  /**
   * Every clause, in the order that decides which error wins: SELECT, JOIN ON, WHERE, GROUP BY, window filter,
   * trigger, HAVING, ORDER BY.
   */
  checkClauses(stmt: SelectStatement, c: ExpandedClauses): void {
    const top = (clause: Clause, root: Expr | null = null): Ctx => ({ clause, agg: null, inCall: false, root });
    const windowFilter = stmt.window?.filter ?? null;
    const trigger = stmt.window?.trigger ?? null;
    for (const f of c.fields) {
      if (f.field.expr.kind === 'wildcard' && f.field.alias !== null) throw planError('alias is not supported for *');
      this.check(f.expr, top('select'));
    }
    for (const j of c.joins) if (j.on) this.check(j.on, top('join'));
    if (c.where) this.check(c.where, top('where', stmt.where));
    c.dims.forEach((d, i) => this.check(d, top('groupby', c.dimsRaw[i])));
    if (windowFilter) this.check(windowFilter, top('windowFilter', windowFilter));
    if (trigger) this.check(trigger, top('trigger'));
    if (stmt.having && !this.allAggregate(stmt.having)) {
      throw planError(`Not allowed to call non-aggregate functions in HAVING clause: ${exprText(stmt.having)}.`);
    }
    if (c.having) this.check(c.having, top('having'));
    for (const s of c.sorts) this.check(s.expr, top('order'));
  }

  private check(e: Expr, cx: Ctx, path: string[] | null = null): void {
    switch (e.kind) {
      case 'field':
        this.resolveField(e, path);
        return;
      case 'wildcard':
        this.recordWildcard(e.stream);
        for (const r of e.replace) this.check(r.expr, cx);
        return;
      case 'navigate': {
        // collect the navigation path down to a column for struct narrowing
        const p: string[] = [e.member, ...(path ?? [])];
        const down = unparen(e.object).kind === 'field' || unparen(e.object).kind === 'navigate';
        this.check(e.object, cx, down ? p : null);
        return;
      }
      case 'slice':
        checkSliceBounds(e.start, e.end);
        break;
      case 'case':
        if (e.value === null) {
          for (const w of e.whens)
            if (!isBoolShaped(w.when)) throw planError('WHEN expression must be a bool condition');
        }
        break;
      case 'meta':
        return;
      case 'call':
        this.checkCall(e, cx);
        return;
      default:
        break;
    }
    forEachChild(e, (c) => this.check(c, cx));
  }

  private recordWildcard(stream: string | null): void {
    if (stream === null) {
      this.wildcardAll = true;
      return;
    }
    const idx = this.sources.findIndex((s) => s.alias === stream || s.name === stream);
    if (idx < 0) throw planError(`unknown stream ${stream}`);
    this.wildcardSources.add(idx);
  }

  /** Binds a column reference to its source: by stream or alias when qualified, else the one source declaring it. */
  private resolveField(ref: FieldRef, path: string[] | null): void {
    if (ref.stream !== null) {
      this.resolveQualified(ref, ref.stream, path);
      return;
    }
    const { sources } = this;
    let found = -1;
    let decl: StreamField | null = null;
    let schemaless = -1;
    for (let i = 0; i < sources.length; i++) {
      const fs = sources[i].def.fields;
      if (fs === null) {
        if (schemaless < 0) schemaless = i;
        continue;
      }
      const d = findDecl(fs, ref.name);
      if (d) {
        if (found >= 0) throw planError(`ambiguous field ${ref.name}`);
        found = i;
        decl = d;
      }
    }
    if (found >= 0) this.uses.push({ name: ref.name, source: found, path, declared: decl });
    else if (schemaless >= 0) this.uses.push({ name: ref.name, source: schemaless, path, declared: null });
    else throw planError(`unknown field ${ref.name}`);
  }

  private resolveQualified(ref: FieldRef, stream: string, path: string[] | null): void {
    const { sources } = this;
    const byAlias = sources.findIndex((s) => s.alias === stream);
    const idx = byAlias >= 0 ? byAlias : sources.findIndex((s) => s.name === stream);
    if (idx < 0) {
      // `q.c` with q not a source: navigation into column q
      this.resolveField({ kind: 'field', stream: null, name: stream }, [ref.name, ...(path ?? [])]);
      return;
    }
    const fields = sources[idx].def.fields;
    if (fields === null) {
      this.uses.push({ name: ref.name, source: idx, path, declared: null });
      return;
    }
    const decl = findDecl(fields, ref.name);
    if (!decl) throw planError(`unknown field ${stream}.${ref.name}`);
    this.uses.push({ name: ref.name, source: idx, path, declared: decl });
  }

  private checkCall(e: CallExpr, cx: Ctx): void {
    const name = lowerName(e);
    if (windowFunctionType(name) !== undefined)
      throw planError(`window function ${name} can only be used in GROUP BY clause`);
    const kind = this.functions.kindOf(name);
    if (kind === undefined) throw planError(`function ${e.name} not found`);
    if (e.over && kind !== 'analytic' && kind !== 'window')
      throw planError(`Found OVER after non analytic function ${name}`);
    const err = this.functions.validateCall(e.name, e.args.map(argInfo));
    if (err !== undefined) throw planError(err);
    this.recordHits(name, cx);
    const inner = this.checkPlacement(name, kind, cx);
    for (const a of e.args) this.check(a, inner);
    if (e.over) {
      const ov: Ctx = { ...inner, agg: null };
      for (const p of e.over.partitionBy) this.check(p, ov);
      for (const s of e.over.orderBy) this.check(s.expr, ov);
      if (e.over.when) this.check(e.over.when, ov);
    }
    if (kind === 'analytic' && !this.analyticSeen.has(e)) {
      this.analyticSeen.add(e);
      this.analytic.push(e); // after its arguments: inner analytic calls come first
    }
  }

  private recordHits(name: string, cx: Ctx): void {
    if (HIT_FUNCS.has(name)) {
      if (this.aggQuery && cx.clause !== 'trigger' && cx.clause !== 'windowFilter')
        throw planError(`function ${name} is not allowed in an aggregate query`);
      this.usesHits = true;
    }
    if (AGG_HIT_FUNCS.has(name)) this.usesAggHits = true;
  }

  /** Checks where a call of this kind may appear; returns the context of its arguments. */
  private checkPlacement(name: string, kind: FuncKind, cx: Ctx): Ctx {
    const inner: Ctx = { ...cx, inCall: true };
    switch (kind) {
      case 'aggregate':
        if (cx.clause === 'where' || cx.clause === 'windowFilter') {
          throw planError(
            `Not allowed to call aggregate functions in WHERE clause: ${cx.root ? exprText(cx.root) : ''}.`,
          );
        }
        if (cx.clause === 'groupby') {
          throw planError(
            `Not allowed to call aggregate functions in GROUP BY clause: ${cx.root ? exprText(cx.root) : ''}.`,
          );
        }
        if (cx.agg !== null) throw planError(`invalid argument for func ${cx.agg}: aggregate argument is not allowed`);
        if (cx.clause === 'select') this.hasAggInSelect = true;
        return { ...inner, agg: name };
      case 'window':
        if (cx.clause !== 'select') throw planError('window functions can only be in select fields');
        return inner;
      case 'srf':
        if (cx.clause !== 'select') throw planError("select statement shouldn't has srf except fields");
        if (cx.inCall || ++this.srfCount > 1) {
          throw planError("select fields shouldn't has nested / multi set-returning-functions");
        }
        return inner;
      case 'multicol':
        if (cx.clause !== 'select' || cx.inCall)
          throw planError(`function ${name} can only be used inside the select clause`);
        return inner;
      default:
        return inner;
    }
  }

  /** Contains an aggregate call, directly or through an alias (aliases already expanded). */
  private containsAggregate(e: Expr): boolean {
    let hit = false;
    walk(e, (x) => {
      if (x.kind === 'call' && this.functions.kindOf(x.name) === 'aggregate') hit = true;
    });
    return hit;
  }

  /**
   * The HAVING check as eKuiper performs it (docs/sql.md §4.8), on the condition as written: the operands of
   * arithmetic, comparison and logical operators are checked recursively; a column reference or a function call
   * must be (or contain) an aggregate; anything else passes as a whole — a parenthesised expression, CASE, a
   * literal, an index, a slice or `->` navigation (so `c[2]->temp > 20` with `c` an alias of `collect(*)` passes).
   * The BETWEEN bounds and an IN list are not looked at.
   */
  private allAggregate(e: Expr): boolean {
    switch (e.kind) {
      case 'binary':
        return this.allAggregate(e.left) && this.allAggregate(e.right);
      case 'in':
        return this.allAggregate(e.value) && (e.array === null || this.allAggregate(e.array));
      case 'between':
        return this.allAggregate(e.value);
      case 'like':
        return this.allAggregate(e.value) && this.allAggregate(e.pattern);
      case 'field':
        // `x.y` with x not a source is navigation
        if (e.stream !== null) return !this.sources.some((x) => x.alias === e.stream || x.name === e.stream);
        return this.aliases.has(e.name) && this.containsAggregate(this.aliases.alias(e.name));
      case 'call':
        return this.containsAggregate(this.aliases.expand(e, null));
      case 'meta':
        return false;
      default:
        return true;
    }
  }
}

/** Constant bounds of a slice must be increasing. */
function checkSliceBounds(start: Expr | null, end: Expr | null): void {
  const s = start && unparen(start);
  const en = end && unparen(end);
  if (
    s &&
    en &&
    s.kind === 'integer' &&
    en.kind === 'integer' &&
    s.value >= 0n &&
    en.value >= 0n &&
    s.value >= en.value
  ) {
    throw planError(`start index ${s.value} must be less than end index ${en.value}`);
  }
}

/** A lookup join needs at least one equi-join predicate on the table (docs/sql.md §3.5). */
function checkLookupJoins(joins: readonly BoundJoin[], sources: readonly BoundSource[]): void {
  for (const j of joins) {
    if (j.source.role !== 'lookup') continue;
    if (!j.on || lookupKeys(j.on, j.source, sources).length === 0) {
      throw planError(
        `join condition ${j.on ? exprText(j.on) : ''} is invalid, at least one equi-join predicate is required`,
      );
    }
  }
}

/**
 * What each source decodes: everything when read with a wildcard or schemaless, else the declared fields it reads
 * (docs/sql.md §3.4).
 */
function planDecoding(
  sources: readonly BoundSource[],
  reads: ExprChecker,
  options: AnalyzeDeps['options'],
): DecodePlan {
  const schemas: ReadSchema[] = [];
  const columns: string[][] = [];
  const wildcard: boolean[] = [];
  for (let i = 0; i < sources.length; i++) {
    const s = sources[i];
    const mine = reads.uses.filter((u) => u.source === i);
    const cols = [...new Set(mine.map((u) => u.declared?.name ?? u.name))];
    const wild = reads.wildcardAll || reads.wildcardSources.has(i);
    wildcard.push(wild);
    columns.push(wild ? [] : cols);
    if (s.def.fields === null || wild) {
      schemas.push(null);
      continue;
    }
    schemas.push(narrow(s.def.fields, mine, options.isEventTime ? s.def.options.TIMESTAMP : undefined));
  }
  return { schemas, columns, wildcard };
}

/** Case-insensitive lookup of a declared field (binding is case-insensitive, docs/sql.md §1.3). */
export function findDecl(fields: readonly StreamField[], name: string): StreamField | undefined {
  const exact = fields.find((f) => f.name === name);
  if (exact) return exact;
  const low = name.toLowerCase();
  return fields.find((f) => f.name.toLowerCase() === low);
}

/** Merge the reads of one typed source into its narrowed decode schema. */
function narrow(fields: readonly StreamField[], uses: readonly FieldUse[], tsField: string | undefined): StreamField[] {
  const out: StreamField[] = [];
  for (const f of fields) {
    const mine = uses.filter((u) => u.declared === f);
    const isTs = tsField !== undefined && f.name.toLowerCase() === tsField.toLowerCase();
    if (mine.length === 0 && !isTs) continue;
    if (isTs) {
      out.push(f);
      continue;
    }
    const t = narrowType(
      f.type,
      mine.map((u) => u.path),
    );
    if (t) out.push({ name: f.name, type: t });
  }
  return out;
}

/**
 * A struct column is known only through the members the rule navigates to; a struct read only whole is not known
 * at all (⚠ eKuiper quirk, docs/sql.md §3.4). Other types are kept as declared.
 */
function narrowType(t: FieldType, paths: (string[] | null)[]): FieldType | null {
  if (t.kind !== 'struct') return t;
  const navigated = paths.filter((p): p is string[] => p !== null && p.length > 0);
  if (navigated.length === 0) return null;
  const members: StreamField[] = [];
  for (const m of t.fields) {
    const sub = navigated
      .filter((p) => p[0].toLowerCase() === m.name.toLowerCase())
      .map((p) => (p.length > 1 ? p.slice(1) : null));
    if (sub.length === 0) continue;
    const mt = narrowType(m.type, sub);
    if (mt) members.push({ name: m.name, type: mt });
  }
  return members.length ? { kind: 'struct', fields: members } : null;
}

/**
 * The equi-join predicates `table.col = <stream-side expr>` of a lookup join's ON (AND-conjuncts only).
 */
export function lookupKeys(
  on: Expr,
  table: BoundSource,
  sources: readonly BoundSource[],
): Array<{ key: string; value: Expr; conjunct: Expr }> {
  const out: Array<{ key: string; value: Expr; conjunct: Expr }> = [];
  for (const c of conjuncts(on)) {
    const u = unparen(c);
    if (u.kind !== 'binary' || u.op !== '=') continue;
    const l = tableColumn(u.left, table, sources);
    const r = tableColumn(u.right, table, sources);
    if (l !== null && r === null && !refersTo(u.right, table)) out.push({ key: l, value: u.right, conjunct: c });
    else if (r !== null && l === null && !refersTo(u.left, table)) out.push({ key: r, value: u.left, conjunct: c });
  }
  return out;
}

function tableColumn(e: Expr, table: BoundSource, sources: readonly BoundSource[]): string | null {
  const u = unparen(e);
  if (u.kind !== 'field') return null;
  if (u.stream !== null) return u.stream === table.alias || u.stream === table.name ? u.name : null;
  // unqualified: a column declared by the table and by no stream
  if (table.def.fields && findDecl(table.def.fields, u.name)) {
    const elsewhere = sources.some((s) => s !== table && s.def.fields && findDecl(s.def.fields, u.name));
    return elsewhere ? null : u.name;
  }
  return null;
}

function refersTo(e: Expr, table: BoundSource): boolean {
  let hit = false;
  const visit = (x: Expr): void => {
    if (x.kind === 'field' && x.stream !== null && (x.stream === table.alias || x.stream === table.name)) hit = true;
    forEachChild(x, visit);
  };
  visit(e);
  return hit;
}

/** AND-conjuncts of a condition. */
export function conjuncts(e: Expr): Expr[] {
  const u = unparen(e);
  if (u.kind === 'binary' && u.op === 'AND') return [...conjuncts(u.left), ...conjuncts(u.right)];
  return [e];
}

/** Joins conditions with AND (null for none). */
export function andAll(es: readonly Expr[]): Expr | null {
  if (es.length === 0) return null;
  return es.reduce((l, r) => ({ kind: 'binary', op: 'AND', left: l, right: r }));
}

/** The pre-order walker of `sql/visit.ts`, also named here for the planner's other callers. */
export { walk } from '../sql/visit.js';

export { PlanError };
