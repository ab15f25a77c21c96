/** Request-body field access shared by the REST layer, the bundle reader and the script records. */
import { goJsonSyntaxError } from './gojson.js';

/** A fixed request field matched case-insensitively, exact spelling first (docs/rest-api.md §1.3). */
export function field(obj: Record<string, unknown>, name: string): unknown {
  if (name in obj) return obj[name];
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) return obj[k];
  return undefined;
}

/** Whether `v` is a JSON object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The string fields of a stored JSON record (a bundle's upload and schema items): a reader giving each field's text,
 * matched as {@link field} matches it, '' when absent or not a string. Throws `refuse("invalid <what> record: …")`
 * when the text is not a JSON object.
 */
export function recordFields(text: string, what: string, refuse: (msg: string) => Error): (name: string) => string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw refuse(`invalid ${what} record: ${goJsonSyntaxError(text) ?? (e as Error).message}`);
  }
  if (!isRecord(v)) throw refuse(`invalid ${what} record: not a JSON object`);
  return (name) => {
    const val = field(v, name);
    return typeof val === 'string' ? val : '';
  };
}
