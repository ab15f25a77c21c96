/**
 * Test fixtures for the planner: a catalog built from real CREATE statements, the function registry, rows.
 */
import { parseDdl } from '../../src/sql/index.js';
import type { StreamCatalog, StreamDef, StreamKind } from '../../src/catalog/types.js';
import { createBuiltinRegistry, type FunctionDef, type FunctionRegistry } from '../../src/functions/index.js';
import { Tuple, JoinTuple } from '../../src/contracts/index.js';
import type { ValueObject } from '../../src/values/value.js';
import { planQuery, type PlanDeps } from '../../src/plan/planner.js';
import type { QueryPlan } from '../../src/plan/plan.js';

export function catalogOf(...ddl: string[]): StreamCatalog {
  const defs = new Map<string, StreamDef>();
  for (const sql of ddl) {
    const st = parseDdl(sql);
    if (st.kind !== 'createStream') throw new Error('not a CREATE');
    defs.set(st.name, { name: st.name, kind: st.streamKind, fields: st.fields, options: st.options, sql });
  }
  return {
    get: (n) => defs.get(n),
    list: (k: StreamKind) => [...defs.values()].filter((d) => d.kind === k),
  };
}

/** The registry with every built-in function (the real one the server uses). */
export function registry(): FunctionRegistry {
  return createBuiltinRegistry();
}

export function deps(catalog: StreamCatalog, opts: Partial<PlanDeps['options']> = {}): PlanDeps {
  return { catalog, functions: registry(), options: { isEventTime: false, sendMetaToSink: false, ...opts } };
}

export function tuple(message: ValueObject, emitter = 's', meta: ValueObject = {}, ts = 1000): Tuple {
  return new Tuple(emitter, message, meta, ts);
}

export function joined(...tuples: Tuple[]): JoinTuple {
  return new JoinTuple(tuples, tuples[0]?.timestamp ?? 0);
}

export const SCHEMALESS = 'CREATE STREAM s () WITH (DATASOURCE="t", FORMAT="json", TYPE="memory")';

/** Plans `sql` over a schemaless stream `s` (or the given catalog). */
export function plan(
  sql: string,
  catalog: StreamCatalog = catalogOf(SCHEMALESS),
  opts: Partial<PlanDeps['options']> = {},
): QueryPlan {
  return planQuery(sql, deps(catalog, opts));
}

/** Runs a windowless single-stream plan on one message: null when WHERE drops it. */
export function run(p: QueryPlan, message: ValueObject, meta: ValueObject = {}): ValueObject | null {
  const ctx = p.newContext('rule1', 0);
  const row = tuple(message, p.sources[0].name, meta);
  ctx.bindRow();
  p.analytic?.compute(row, ctx);
  if (p.sources[0].filter && !p.sources[0].filter(row, ctx)) return null;
  if (p.where && !p.where(row, ctx)) return null;
  return p.project.project(row, ctx);
}

export type { FunctionDef };

/**
 * Runs a whole windowed emission through the plan's stages the way the runtime does (docs/sql.md §4.2): analytic and
 * pushed-down filter per tuple, then WHERE, grouping, HAVING, row_number, ORDER BY, projection, LIMIT, unnest.
 */
export function runWindow(
  p: QueryPlan,
  messages: ValueObject[],
  bounds: { start?: number; end?: number } = { start: 0, end: 10 },
  ctx = p.newContext('rule1', 0),
): ValueObject[] {
  const rows: Tuple[] = [];
  for (const [i, m] of messages.entries()) {
    const row = tuple(m, p.sources[0].name, {}, 1000 + i);
    ctx.setWindow(undefined, undefined);
    ctx.bindRow();
    p.analytic?.compute(row, ctx);
    if (p.sources[0].filter && !p.sources[0].filter(row, ctx)) continue;
    rows.push(row);
  }
  ctx.setWindow(bounds.start, bounds.end);
  ctx.bindRow();
  const kept = p.where ? rows.filter((r) => p.where!(r, ctx)) : rows;
  let units = p.toUnits(kept, ctx);
  if (p.having) units = p.having.apply(units, ctx);
  if (p.windowFuncs) units = p.windowFuncs.apply(units, ctx);
  p.order?.sort(units, ctx);
  let out: ValueObject[] = [];
  for (const u of units) {
    ctx.bindUnit(u);
    out.push(p.project.project(u.row, ctx));
  }
  if (p.projectSet) out = out.flatMap((o) => p.projectSet!.expand(o));
  if (p.limit !== null) out = out.slice(0, p.limit);
  return out;
}

/** Runs a windowless single-stream plan over a sequence of events, with hit bookkeeping: outputs per event. */
export function runEach(p: QueryPlan, messages: ValueObject[]): Array<ValueObject[] | null> {
  const ctx = p.newContext('rule1', 0);
  return messages.map((m, i) => {
    const row = tuple(m, p.sources[0].name, {}, 1000 + i);
    ctx.setWindow(undefined, undefined);
    ctx.bindRow();
    p.analytic?.compute(row, ctx);
    if (p.where && !p.where(row, ctx)) return null;
    let out = [p.project.project(row, ctx)];
    if (p.usesHits) p.hits.hit(ctx, row.timestamp);
    if (p.projectSet) out = out.flatMap((o) => p.projectSet!.expand(o));
    return out;
  });
}
