/**
 * JSON text of sink data with Go's `encoding/json` rules (runtime.md §3.3, sql.md §6.8): sorted object keys and
 * `<`, `>`, `&` escaped, on top of the value serialisation of `values/json.ts`.
 */
import { toJson } from '../../values/json.js';
import type { Value } from '../../values/value.js';

const GO_RULES = { sortKeys: true, escapeHtml: true } as const;

/** Go-compatible JSON text of a value; throws on non-finite floats. */
export function encodeJson(v: unknown): string {
  return toJson(v as Value, GO_RULES);
}
