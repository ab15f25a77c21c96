/**
 * Where a rule runs (docs/runtime.md §1.10), decided on the main thread without planning the rule: from its SQL
 * statement (parsed once, for the names it reads and the functions it calls), the catalog's definitions of those
 * streams, and the declarations of its connectors and formats (connectors/declaration.ts `threads`). The planning
 * itself, with its errors, happens on the worker.
 *
 * Also here: the text naming the node a rule was stopped in, when one record held its worker too long.
 */
import type { Props, RuleDef, RuleOptions } from '../contracts/index.js';
import type { StreamCatalog } from '../catalog/types.js';
import type { FunctionRegistry } from '../functions/registry.js';
import type { Registry } from '../connectors/registry.js';
import { prop } from '../connectors/props.js';
import { resolveSource } from '../runtime/source.js';
import { exprToString, identToString, parseSelect, parseStatement, windowToString } from '../sql/index.js';
import { walk } from '../plan/analyze.js';

export interface PlacementDeps {
  catalog: StreamCatalog;
  /** the main thread's registry */
  functions: FunctionRegistry;
  /** the built-ins a worker has */
  builtins: FunctionRegistry;
  connectors: Registry;
}

type Select = ReturnType<typeof parseSelect>;

/** Whether the rule needs nothing that exists only on the main thread. */
export function movable(rule: RuleDef, options: RuleOptions, deps: PlacementDeps): boolean {
  // a rule's own log file (and debug level) belong to the main thread's loggers
  if (options.logFilename || options.debug) return false;
  // graph rules are planned where they run too, but the main thread's builder is the only one that checks them today
  if (rule.sql === undefined) return false;
  let stmt: Select;
  try {
    // parsed already when the rule's definition was checked (rules/definition.ts): the same tree, kept by parseSelect
    const parsed = parseStatement(rule.sql);
    if (parsed.kind !== 'select') return false;
    stmt = parsed;
  } catch {
    // not a statement: the main thread answers the parser's error as it always did
    return false;
  }
  const connectors = deps.connectors;
  for (const name of [stmt.from.name, ...stmt.joins.map((j) => j.source.name)]) {
    if (name === '') continue;
    const def = deps.catalog.get(name);
    // unknown here: the worker's planner answers `fail to get stream …`
    if (!def) continue;
    // a lookup table is opened by the rule's own thread (runtime/lookup.ts), a scan table is read by the rule itself
    const kind = def.kind === 'table' && def.options.KIND === 'lookup' ? 'lookup' : 'source';
    let type: string;
    let props: Props;
    try {
      ({ type, props } = resolveSource(connectors, def));
    } catch {
      continue;
    }
    if (!connectors.placement(kind, type, props).worker) return false;
    if (!connectors.placement('format', String(props.format), props).worker) return false;
  }
  for (const action of rule.actions) {
    for (const [type, raw] of Object.entries(action)) {
      const own = (raw ?? {}) as Props;
      const resourceId = prop(own, 'resourceId');
      const props = {
        ...connectors.sinkProps(type, typeof resourceId === 'string' ? resourceId : undefined),
        ...own,
      };
      if (!connectors.placement('sink', type, props).worker) return false;
      const format = prop(props, 'format');
      const name = typeof format === 'string' && format !== '' ? format : 'json';
      if (!connectors.placement('format', name, props).worker) return false;
    }
  }
  let onWorker = true;
  const check = (e: Parameters<typeof walk>[0]) =>
    walk(e, (x) => {
      if (x.kind !== 'call') return;
      const def = deps.functions.get(x.name);
      if (def === undefined || def === deps.builtins.get(x.name)) return;
      // declared by what registered it: JavaScript and native plugin functions load on every worker
      if (def.worker !== true) onWorker = false;
    });
  for (const f of stmt.fields) check(f.expr);
  if (stmt.where) check(stmt.where);
  if (stmt.having) check(stmt.having);
  for (const d of stmt.dimensions) if (d.kind !== 'window') check(d);
  for (const s of stmt.sorts) check(s.expr);
  for (const j of stmt.joins) if (j.on) check(j.on);
  return onWorker;
}

/** Deterministic placement: a hash of the rule id over `size` workers. */
export function placeById(ruleId: string, size: number): number {
  let h = 2166136261;
  for (let i = 0; i < ruleId.length; i++) h = Math.imul(h ^ ruleId.charCodeAt(i), 16777619);
  return (h >>> 0) % size;
}

/**
 * What a node of each kind evaluates, for the error of a rule stopped in it: the clause, and its text when the
 * statement names it apart (the text comes from the rule's SQL, since the planned node keeps only compiled code).
 */
const NODE_WORK: Array<[RegExp, string, (stmt: Select) => string | undefined]> = [
  [
    /_project$/,
    'the SELECT list',
    (q) =>
      q.fields
        .map((f) => (f.alias === null ? exprToString(f.expr) : `${exprToString(f.expr)} AS ${identToString(f.alias)}`))
        .join(', '),
  ],
  [/_filter$/, 'the WHERE condition', (q) => (q.where ? exprToString(q.where) : undefined)],
  [/_having$/, 'the HAVING condition', (q) => (q.having ? exprToString(q.having) : undefined)],
  [
    /_order$/,
    'the ORDER BY',
    (q) => q.sorts.map((o) => `${exprToString(o.expr)}${!o.ascending ? ' DESC' : ''}`).join(', '),
  ],
  [
    /_aggregate$/,
    'the GROUP BY',
    (q) => q.dimensions.map((d) => (d.kind === 'window' ? windowToString(d) : exprToString(d))).join(', '),
  ],
  [
    /_join$/,
    'the join condition',
    (q) =>
      q.joins
        .filter((j) => j.on)
        .map((j) => exprToString(j.on!))
        .join('; ') || undefined,
  ],
  [/_analytic$/, 'the analytic functions', () => undefined],
  [/_windowFilter$/, 'the window FILTER', (q) => (q.window?.filter ? exprToString(q.window.filter) : undefined)],
];

/** Longest expression text an error quotes. */
const QUOTE_CHARS = 200;

/** The node, with the clause it evaluates and that clause's text when the rule's SQL tells them. */
export function describeNode(sql: string | undefined, node: string): string {
  const work = NODE_WORK.find(([re]) => re.test(node));
  if (!work) return node;
  let text: string | undefined;
  try {
    text = work[2](parseSelect(sql ?? ''));
  } catch {
    // planned once already: a statement that no longer parses only loses the quote
  }
  if (!text) return `${node} (${work[1]})`;
  if (text.length > QUOTE_CHARS) text = `${text.slice(0, QUOTE_CHARS - 1)}…`;
  return `${node} (${work[1]} \`${text}\`)`;
}
