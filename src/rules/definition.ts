/**
 * Rule definitions: decoding and validating a rule body (docs/rest-api.md §4.1–4.2 step 1, docs/runtime.md §1.1–1.2), merging
 * options over the server defaults, masking secrets for describe (docs/rest-api.md §5.3) and restoring them on update (docs/rest-api.md §4.5 step 3).
 */
import type { Props, RuleAction, RuleDef, RuleOptions } from '../contracts/index.js';
import { parseGoDuration, parseCronSpec, parseRangeTime } from './schedule.js';
import { MASK, maskUrl } from '../connectors/secrets.js';
import { checkRuleId } from '../core/ids.js';
import { sqlTooLong } from '../core/limits.js';
import { isDefect } from '../core/errors.js';
import {
  DATETIME_RANGE_FIELDS,
  GO_TYPE,
  NESTED_RULE_OPTIONS,
  RESTART_STRATEGY_OPTIONS,
  SCALAR_RULE_OPTIONS,
  optionValueProblems,
  type OptionKind,
} from '../core/rule-options.js';

/** A definition error; `detail` is the text after `invalid rule json: `. */
export class RuleDefError extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'RuleDefError';
  }
}

/** What the definition checker needs from the SQL layer. */
export interface SqlChecker {
  /** 'select' for a SELECT statement, 'other' for any other statement; throws with the parser's message otherwise */
  statementKind(sql: string): 'select' | 'other';
}

export interface ParsedRule {
  /** normalised definition as stored (options as given, canonical keys) */
  def: RuleDef;
  /** options merged over the server defaults */
  options: RuleOptions;
}

export interface ParseContext {
  defaults: RuleOptions;
  sql: SqlChecker;
  /** the id used when the body has none (path id on update, map key on import) */
  defaultId?: string;
  /** the body's id must equal defaultId (update) */
  requireSameId?: boolean;
  /** time zone of `cronDatetimeRange` begin/end texts */
  timezone?: string;
}

const FIELD_NAMES = ['id', 'name', 'sql', 'graph', 'actions', 'triggered', 'options', 'tags'] as const;

/** Decodes the body text; failures read `Parse rule <text> error : <decoder message>.` */
export function decodeRuleText(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    const msg = text.trim() === '' ? 'unexpected end of JSON input' : (e as Error).message;
    throw new RuleDefError(`Parse rule ${text} error : ${msg}.`);
  }
  // like Go's decoder, `null` leaves the rule empty (then: Missing rule id.)
  if (v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) {
    throw new RuleDefError(
      `Parse rule ${text} error : json: cannot unmarshal ${jsonKind(v)} into Go value of type api.Rule.`,
    );
  }
  return v as Record<string, unknown>;
}

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'number':
      return 'number';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    default:
      return 'object';
  }
}

/** A fixed field, matched case-insensitively with the exact spelling first (docs/rest-api.md §1.3). */
function pick(obj: Record<string, unknown>, name: string): unknown {
  if (Object.prototype.hasOwnProperty.call(obj, name)) return obj[name];
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) return obj[k];
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Go's unmarshal error text for a field of the wrong JSON type. */
function typeError(text: string, value: unknown, field: string, goType: string, struct = 'Rule'): RuleDefError {
  const kind = typeof value === 'number' ? `number ${value}` : jsonKind(value);
  return new RuleDefError(
    `Parse rule ${text} error : json: cannot unmarshal ${kind} into Go struct field ${struct}.${field} of type ${goType}.`,
  );
}

/**
 * Validates a decoded rule body and normalises it. `text` is the body as received (for Parse error texts).
 * Throws {@link RuleDefError}.
 */
export function parseRule(body: Record<string, unknown>, text: string, ctx: ParseContext): ParsedRule {
  const raw: Partial<Record<(typeof FIELD_NAMES)[number], unknown>> = {};
  for (const f of FIELD_NAMES) raw[f] = pick(body, f);

  // JSON types first: a wrong type is a decoding error in eKuiper
  for (const f of ['id', 'name', 'sql'] as const) {
    if (raw[f] !== undefined && raw[f] !== null && typeof raw[f] !== 'string')
      throw typeError(text, raw[f], f, 'string');
  }
  if (raw.triggered !== undefined && raw.triggered !== null && typeof raw.triggered !== 'boolean') {
    throw typeError(text, raw.triggered, 'triggered', 'bool');
  }
  if (raw.graph !== undefined && raw.graph !== null && !isObject(raw.graph))
    throw typeError(text, raw.graph, 'graph', 'api.RuleGraph');
  if (raw.options !== undefined && raw.options !== null && !isObject(raw.options))
    throw typeError(text, raw.options, 'options', 'api.RuleOption');
  if (raw.actions !== undefined && raw.actions !== null) {
    if (!Array.isArray(raw.actions)) throw typeError(text, raw.actions, 'actions', '[]map[string]interface {}');
    for (const a of raw.actions) {
      if (!isObject(a)) throw typeError(text, a, 'actions', 'map[string]interface {}');
    }
  }
  let tags: string[] | undefined;
  if (raw.tags !== undefined && raw.tags !== null) {
    if (!Array.isArray(raw.tags) || raw.tags.some((t) => typeof t !== 'string'))
      throw typeError(text, raw.tags, 'tags', '[]string');
    tags = raw.tags as string[];
  }
  const partial = raw.options ? decodeOptions(raw.options as Record<string, unknown>, text) : {};

  let id = (raw.id as string | undefined) ?? '';
  if (ctx.requireSameId && id !== '' && ctx.defaultId !== undefined && id !== ctx.defaultId) {
    throw new RuleDefError('RuleId is not consistent with rule id.');
  }
  if (id === '' && ctx.defaultId) id = ctx.defaultId;
  if (id === '') throw new RuleDefError('Missing rule id.');
  const idErr = checkRuleId(id);
  if (idErr) throw new RuleDefError(idErr);

  const sql = (raw.sql as string | undefined) ?? '';
  const graph = raw.graph as Record<string, unknown> | undefined | null;
  if (sql !== '' && graph) throw new RuleDefError(`Rule ${id} has both sql and graph.`);
  if (sql === '' && !graph) throw new RuleDefError(`Rule ${id} has neither sql nor graph.`);
  const actions = (raw.actions as RuleAction[] | undefined | null) ?? [];
  if (sql !== '') {
    // refused before parsing, without echoing the text (docs/runtime.md §1.6)
    const tooLong = sqlTooLong(`rule ${id}`, sql);
    if (tooLong) throw new RuleDefError(tooLong);
    let kind: 'select' | 'other';
    try {
      kind = ctx.sql.statementKind(sql);
    } catch (e) {
      if (isDefect(e)) throw e;
      throw new RuleDefError(`Parse SQL ${sql} error: ${e instanceof Error ? e.message : String(e)}.`);
    }
    if (kind !== 'select') throw new RuleDefError(`SQL ${sql} is not a select statement.`);
    if (actions.length === 0) throw new RuleDefError('Missing rule actions.');
  } else if (graph) {
    checkGraph(id, graph);
  }

  const options = mergeOptions(ctx.defaults, partial);
  const problems = validateOptions(options, ctx.timezone);
  if (problems.length > 0) throw new RuleDefError(`Rule ${id} has invalid options: ${problems.join('\n')}.`);

  const def: RuleDef = { id, actions };
  const name = raw.name as string | undefined | null;
  if (name) def.name = name;
  if (sql !== '') def.sql = sql;
  else def.graph = graph as Record<string, unknown>;
  if (raw.options) def.options = partial;
  def.triggered = (raw.triggered as boolean | undefined | null) ?? true;
  if (tags) def.tags = [...tags];
  return { def, options };
}

/** Minimal structural check of a graph rule; the planner checks the rest (docs/runtime.md §1.4). */
function checkGraph(id: string, graph: Record<string, unknown>): void {
  const nodes = pick(graph, 'nodes');
  const topo = pick(graph, 'topo');
  if (!isObject(nodes) || Object.keys(nodes).length === 0) throw new RuleDefError(`Rule ${id} graph has no nodes.`);
  if (!isObject(topo)) throw new RuleDefError(`Rule ${id} graph has no topo.`);
}

/** The created streams and tables a graph rule's source nodes name (`sourceName`), for stream usage. */
export function graphSources(graph: Record<string, unknown>): string[] {
  const topo = pick(graph, 'topo');
  const nodes = pick(graph, 'nodes');
  if (!isObject(topo) || !isObject(nodes)) return [];
  const sources = pick(topo, 'sources');
  if (!Array.isArray(sources)) return [];
  const out: string[] = [];
  for (const key of sources) {
    const node = typeof key === 'string' ? nodes[key] : undefined;
    const props = isObject(node) ? pick(node, 'props') : undefined;
    const name = isObject(props) ? pick(props, 'sourceName') : undefined;
    if (typeof name === 'string' && name !== '') out.push(name);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------- options

function fitsKind(v: unknown, kind: OptionKind): boolean {
  switch (kind) {
    case 'bool':
      return typeof v === 'boolean';
    case 'string':
      return typeof v === 'string';
    case 'int':
      // Go's int is 64 bits: a larger number does not decode
      return typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 63;
    case 'float':
      return typeof v === 'number' && Number.isFinite(v);
  }
}

/**
 * The declared fields of `obj` (matched case-insensitively), with `kinds`; nulls are absent, a wrong JSON type is a
 * decoding error naming `options.<path><field>`.
 */
function decodeFields(
  obj: Record<string, unknown>,
  kinds: ReadonlyArray<readonly [string, OptionKind]>,
  path: string,
  text: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, kind] of kinds) {
    const v = pick(obj, name);
    if (v === undefined || v === null) continue;
    if (!fitsKind(v, kind)) throw typeError(text, v, `options.${path}${name}`, GO_TYPE[kind], 'RuleOption');
    out[name] = v;
  }
  return out;
}

const kindsOf = (fields: Record<string, { kind: OptionKind }>): Array<[string, OptionKind]> =>
  Object.entries(fields).map(([name, spec]) => [name, spec.kind]);
const SCALAR_KINDS = kindsOf(SCALAR_RULE_OPTIONS);
const RESTART_KINDS = kindsOf(RESTART_STRATEGY_OPTIONS);
const RANGE_KINDS = Object.entries(DATETIME_RANGE_FIELDS);

/** Canonical-keyed partial options; unknown keys are dropped, wrong JSON types are decoding errors. */
function decodeOptions(obj: Record<string, unknown>, text: string): Partial<RuleOptions> {
  const out = decodeFields(obj, SCALAR_KINDS, '', text);
  const { restartStrategy, cronDatetimeRange } = NESTED_RULE_OPTIONS;
  const rs = pick(obj, 'restartStrategy');
  if (rs !== undefined && rs !== null) {
    if (!isObject(rs)) throw typeError(text, rs, 'options.restartStrategy', restartStrategy.goType, 'RuleOption');
    out.restartStrategy = decodeFields(rs, RESTART_KINDS, 'restartStrategy.', text);
  }
  const ranges = pick(obj, 'cronDatetimeRange');
  if (ranges !== undefined && ranges !== null) {
    if (!Array.isArray(ranges))
      throw typeError(text, ranges, 'options.cronDatetimeRange', cronDatetimeRange.goType, 'RuleOption');
    out.cronDatetimeRange = ranges.map((item) => {
      if (!isObject(item))
        throw typeError(text, item, 'options.cronDatetimeRange', cronDatetimeRange.itemGoType, 'RuleOption');
      return decodeFields(item, RANGE_KINDS, 'cronDatetimeRange.', text);
    });
  }
  return out as Partial<RuleOptions>;
}

/** Options given field-wise over the defaults, `restartStrategy` per sub-field; `debug` is never inherited. */
export function mergeOptions(defaults: RuleOptions, partial: Partial<RuleOptions>): RuleOptions {
  return {
    ...defaults,
    debug: false,
    cronDatetimeRange: [...(defaults.cronDatetimeRange ?? [])],
    ...partial,
    restartStrategy: { ...defaults.restartStrategy, ...(partial.restartStrategy ?? {}) },
  };
}

/** The problems of merged options (empty when valid), docs/runtime.md §1.2. */
export function validateOptions(o: RuleOptions, timezone?: string): string[] {
  const p = optionValueProblems(o);
  if (o.cron) {
    try {
      parseCronSpec(o.cron, timezone);
    } catch (e) {
      p.push(`invalid cron ${o.cron}: ${(e as Error).message}`);
    }
  }
  if (o.duration) {
    const d = parseGoDuration(o.duration);
    if (d === undefined || d <= 0) p.push(`invalid duration ${o.duration}`);
  }
  for (const range of o.cronDatetimeRange ?? []) {
    const problem = checkRange(range, timezone);
    if (problem) p.push(problem);
  }
  return p;
}

function checkRange(range: RuleOptions['cronDatetimeRange'][number], timezone?: string): string | undefined {
  if ((range.beginTimestamp ?? 0) > 0 && (range.endTimestamp ?? 0) > 0) {
    return range.beginTimestamp! > range.endTimestamp!
      ? `cronDatetimeRange beginTimestamp ${range.beginTimestamp} is after endTimestamp ${range.endTimestamp}`
      : undefined;
  }
  const begin = parseRangeTime(range.begin ?? '', timezone);
  const end = parseRangeTime(range.end ?? '', timezone);
  if (begin === undefined)
    return `cronDatetimeRange begin ${JSON.stringify(range.begin ?? '')} is not a time of layout YYYY-MM-DD hh:mm:ss`;
  if (end === undefined)
    return `cronDatetimeRange end ${JSON.stringify(range.end ?? '')} is not a time of layout YYYY-MM-DD hh:mm:ss`;
  if (begin > end) return `cronDatetimeRange begin ${range.begin} is after end ${range.end}`;
  return undefined;
}

// ---------------------------------------------------------------------------------------------- masking

export { MASK, maskUrl, maskSecrets } from '../connectors/secrets.js';

/** Looks up a sink config key's properties (`resourceId`), when the connectors layer offers it. */
export type SinkConfKeyLookup = (sinkType: string, resourceId: string) => Props | undefined;

/**
 * Puts back secrets a client sent masked (docs/rest-api.md §4.5 step 3): `password`/`token` equal to the mask take the
 * old action's value when the sink type at that index is the same; with `resourceId`, masked values come from the
 * config key. Mutates and returns `body`.
 */
export function restoreSecrets(
  body: Record<string, unknown>,
  oldActions: readonly RuleAction[] | undefined,
  confKey?: SinkConfKeyLookup,
): Record<string, unknown> {
  const actions = pick(body, 'actions');
  if (!Array.isArray(actions)) return body;
  actions.forEach((action, i) => {
    if (!isObject(action)) return;
    for (const [type, props] of Object.entries(action)) {
      if (!isObject(props)) continue;
      const old = oldActions?.[i]?.[type];
      if (isObject(old)) {
        for (const k of Object.keys(props)) {
          const lk = k.toLowerCase();
          if ((lk === 'password' || lk === 'token') && props[k] === MASK && k in old) props[k] = old[k];
        }
      }
      const resourceId = pick(props, 'resourceId');
      if (confKey && typeof resourceId === 'string' && resourceId !== '') {
        let stored: Props | undefined;
        try {
          stored = confKey(type, resourceId);
        } catch {
          stored = undefined;
        }
        if (stored) restoreFromConfKey(props, stored);
      }
    }
  });
  return body;
}

function restoreFromConfKey(props: Record<string, unknown>, stored: Props): void {
  for (const k of Object.keys(props)) {
    const lk = k.toLowerCase();
    const v = props[k];
    const storedKey = Object.keys(stored).find((s) => s.toLowerCase() === lk);
    if (storedKey === undefined) continue;
    const sv = stored[storedKey];
    if ((lk === 'password' || lk === 'token') && v === MASK) props[k] = sv;
    else if (lk === 'url' && typeof v === 'string' && typeof sv === 'string' && v.includes(MASK) && maskUrl(sv) === v)
      props[k] = sv;
  }
}

/** The normalised JSON object of a definition (describe, storage, export): fixed key order. */
export function ruleObject(def: RuleDef): Record<string, unknown> {
  const o: Record<string, unknown> = { id: def.id };
  if (def.name) o.name = def.name;
  if (def.sql !== undefined) o.sql = def.sql;
  if (def.graph !== undefined) o.graph = def.graph;
  o.actions = def.actions;
  if (def.options !== undefined) o.options = def.options;
  o.triggered = def.triggered ?? true;
  if (def.tags !== undefined) o.tags = def.tags;
  return o;
}
