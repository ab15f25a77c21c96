/**
 * Where a rule runs (docs/runtime.md §1.10), decided on the main thread without planning the rule: from its SQL
 * statement (parsed once, for the names it reads and the functions it calls) or its graph's nodes, the catalog's
 * definitions of those streams and tables, and the declarations of its connectors and formats
 * (connectors/declaration.ts `threads`). The planning itself, with its errors, happens on the worker.
 *
 * Also here: the text naming the node a rule was stopped in, when one record held its worker too long.
 */
import type { RuleDef } from '../contracts/index.js';
import type { StreamCatalog, StreamDef } from '../catalog/types.js';
import type { FunctionRegistry } from '../functions/registry.js';
import type { Registry } from '../connectors/registry.js';
import { readerUses, sinkUses, type ConnectorUse } from '../connectors/uses.js';
import { exprToString, identToString, parseSelect, parseStatement, windowToString } from '../sql/index.js';
import { walk } from '../plan/analyze.js';
import { callableFromWorker } from './main-functions.js';
import { inlineStream, isObj, str } from '../plan/graph-props.js';
import type { Expr } from '../sql/ast.js';

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
export function movable(rule: RuleDef, deps: PlacementDeps): boolean {
  if (rule.sql === undefined) return rule.graph !== undefined && graphMovable(rule.graph, deps);
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
  for (const name of [stmt.from.name, ...stmt.joins.map((j) => j.source.name)]) {
    if (name === '') continue;
    const def = deps.catalog.get(name);
    // unknown here: the worker's planner answers `fail to get stream …`
    if (def && !readsOnWorker(def, deps.connectors)) return false;
  }
  for (const action of rule.actions)
    for (const [type, raw] of Object.entries(action)) if (!sinksOnWorker(type, raw, deps.connectors)) return false;
  const exprs: Expr[] = [...stmt.fields.map((f) => f.expr), ...stmt.sorts.map((s) => s.expr)];
  if (stmt.where) exprs.push(stmt.where);
  if (stmt.having) exprs.push(stmt.having);
  for (const d of stmt.dimensions) if (d.kind !== 'window') exprs.push(d);
  for (const j of stmt.joins) if (j.on) exprs.push(j.on);
  return callsOnWorker(exprs, deps);
}

/**
 * A graph rule (docs/runtime.md §1.4) from its nodes: the streams and tables its source nodes read (created, or
 * defined inline by the node), its sinks, and the functions its operators call. Every string of an operator's
 * properties that reads as a select field is searched for calls (expressions, fields with aliases, join conditions);
 * the rest (window types, scripts) names no function. What does not parse is left to the worker's planner.
 */
function graphMovable(graph: Record<string, unknown>, deps: PlacementDeps): boolean {
  const nodes = isObj(graph.nodes) ? graph.nodes : {};
  const exprs: Expr[] = [];
  for (const [key, node] of Object.entries(nodes)) {
    if (!isObj(node)) continue;
    const nodeType = typeof node.nodeType === 'string' ? node.nodeType : '';
    const props = isObj(node.props) ? node.props : {};
    if (node.type === 'source') {
      let def: StreamDef | undefined;
      try {
        const sourceName = str(props, 'sourceName');
        def = sourceName === '' ? inlineStream(key, nodeType, props) : deps.catalog.get(sourceName);
      } catch {
        continue;
      }
      if (def && !readsOnWorker(def, deps.connectors)) return false;
    } else if (node.type === 'sink') {
      if (!sinksOnWorker(nodeType, props, deps.connectors)) return false;
    } else {
      for (const text of stringsIn(props)) {
        try {
          exprs.push(...parseSelect(`select ${text} from t`).fields.map((f) => f.expr));
        } catch {
          // not an expression
        }
      }
    }
  }
  return callsOnWorker(exprs, deps);
}

function stringsIn(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) stringsIn(x, out);
  else if (isObj(v)) for (const x of Object.values(v)) stringsIn(x, out);
  return out;
}

/**
 * Whether the stream or table `def` can be read on a worker: a lookup table is opened by the rule's own thread
 * (runtime/lookup.ts), a stream or scan table is read by the rule's own source.
 */
function readsOnWorker(def: StreamDef, connectors: Registry): boolean {
  let uses: ConnectorUse[];
  try {
    uses = readerUses(def, connectors);
  } catch {
    // the worker's planner answers the error
    return true;
  }
  return uses.every((u) => connectors.placement(u.kind, u.type, u.props).worker);
}

/** Whether the sink of type `type` with its own properties `raw` (and its resource's) can send from a worker. */
function sinksOnWorker(type: string, raw: unknown, connectors: Registry): boolean {
  return sinkUses(type, raw, connectors).every((u) => connectors.placement(u.kind, u.type, u.props).worker);
}

/** Whether every function `exprs` call exists on the workers. */
function callsOnWorker(exprs: readonly Expr[], deps: PlacementDeps): boolean {
  let onWorker = true;
  for (const e of exprs)
    walk(e, (x) => {
      if (x.kind !== 'call') return;
      const def = deps.functions.get(x.name);
      if (def === undefined || def === deps.builtins.get(x.name)) return;
      // JavaScript and native plugin functions load on every worker; service and portable-plugin functions, which
      // answer asynchronously, are called on the main thread through a stand-in (main-functions.ts)
      if (!callableFromWorker(def)) onWorker = false;
    });
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
