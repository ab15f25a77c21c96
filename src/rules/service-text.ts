/** Text and definition helpers of the rules service (service.ts): stored text, ids, tags, fallbacks. */
import { everyOption } from '../core/rule-options.js';
import { EddyError, ErrorCode, isDefect } from '../core/errors.js';
import type { RuleDef, RuleOptions } from '../contracts/index.js';
import { ruleObject } from './definition.js';

/** Wraps a non-coded planning failure as a rule error (4000). */
export function planError(err: unknown): EddyError {
  if (err instanceof EddyError) return err;
  // a bug met while planning is no fault of the rule: it stays a defect, answered 500 and logged (api/server.ts)
  if (isDefect(err)) throw err;
  return new EddyError(ErrorCode.Rule, err instanceof Error ? err.message : String(err));
}

/**
 * Start and stop re-serialise the rule with every option filled in, as eKuiper does (docs/rest-api.md §4.4): from then
 * on the stored and described rule carries the effective options.
 */
export function fullOptions(o: RuleOptions): Partial<RuleOptions> {
  // the key order of a decoded `options` object, so that stored text survives export and import unchanged
  return everyOption(o);
}

/**
 * The text to store for a body whose masked secrets `restore` may put back: the body as submitted, unless a secret
 * was restored (the submitted text holds the mask, which must not replace the secret).
 */
export function withRestoredSecrets(text: string, body: Record<string, unknown>, restore: () => void): string {
  const before = JSON.stringify(body);
  restore();
  const after = JSON.stringify(body);
  return before === after ? text : after;
}

/**
 * A body that names no id (bundle item, PUT) is stored with the id it got put first (docs/compatibility.md D11), the
 * rest of the text as submitted.
 */
export function withId(text: string, id: string): string {
  let named: unknown;
  try {
    named = (JSON.parse(text) as Record<string, unknown>).id;
  } catch {
    return text;
  }
  if (typeof named === 'string' && named !== '') return text;
  const open = text.indexOf('{');
  const rest = text.slice(open + 1);
  const idField = `"id":${JSON.stringify(id)}`;
  return `${text.slice(0, open + 1)}${idField}${rest.trimStart().startsWith('}') ? '' : ','}${rest}`;
}

export function hasTags(body: Record<string, unknown>): boolean {
  return Object.keys(body).some((k) => k.toLowerCase() === 'tags');
}

/** Whether two definitions of a rule run alike: they differ at most in their tags. */
export function sameRun(a: RuleDef, b: RuleDef): boolean {
  return JSON.stringify(ruleObject({ ...a, tags: [] })) === JSON.stringify(ruleObject({ ...b, tags: [] }));
}

export function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function dedupe(tags: string[]): string[] {
  return [...new Set(tags)];
}

/** What is kept of a stored rule that no longer parses: its id and whatever text fields it has. */
export function fallbackDef(id: string, text: string): RuleDef {
  const def: RuleDef = { id, actions: [], triggered: false };
  try {
    const o = JSON.parse(text) as Record<string, unknown>;
    if (typeof o.sql === 'string') def.sql = o.sql;
    if (typeof o.name === 'string') def.name = o.name;
    if (Array.isArray(o.actions)) def.actions = o.actions as RuleDef['actions'];
    if (typeof o.triggered === 'boolean') def.triggered = o.triggered;
  } catch {
    // keep the bare id
  }
  return def;
}
