/**
 * Bounds on untrusted input shared by the REST layer, the catalogs and the decoders: the longest id, the deepest JSON
 * nesting and the default request body size. One place so that what can be created can also be addressed.
 */

/**
 * The longest id (UTF-16 code units, after percent-decoding) of a stream, table, rule, trial run, schema, service, plugin,
 * JavaScript function or upload. The REST router is configured with the same value as its longest path parameter,
 * so every id that can be created can also be read, updated and deleted.
 */
export const MAX_ID_LENGTH = 256;

/** The deepest nesting of arrays and objects accepted in a request body or a decoded JSON message. */
export const MAX_JSON_DEPTH = 512;

/** Default of `basic.maxBodySize`: the largest request body the REST API reads (bytes). */
export const DEFAULT_MAX_BODY_SIZE = 32 * 1024 * 1024;

/** Why `id` is too long to be an id (`what` names it, e.g. `rule id`), or undefined when it is not. */
export function idTooLong(what: string, id: string): string | undefined {
  if (id.length <= MAX_ID_LENGTH) return undefined;
  return `${what} ${id.slice(0, 32)}… is ${id.length} characters long; ids are limited to ${MAX_ID_LENGTH} characters`;
}

/**
 * Whether the arrays and objects of a JSON text nest deeper than `max`. Brackets inside strings are not counted;
 * for text that is not JSON the answer only bounds its brackets. Linear, no allocation.
 */
export function jsonTooDeep(text: string, max: number = MAX_JSON_DEPTH): boolean {
  // more than `max` levels need more than `max` opening brackets: short texts need no scan
  if (text.length <= max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c /* \ */) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      if (depth > 0) depth--;
    }
  }
  return false;
}

/** The error text of a body or message nested deeper than {@link MAX_JSON_DEPTH}. */
export const TOO_DEEP_MESSAGE = `exceeded max depth (JSON nesting is limited to ${MAX_JSON_DEPTH} levels)`;

/**
 * The longest SQL text (UTF-16 code units) of a rule, a stream or a query. Parsing, planning and compiling grow with
 * the text; past this size a statement is refused before any of it, so that no request can keep a thread busy for
 * seconds (docs/runtime.md §1.6). 256 KiB is some hundred times the longest statement a person writes.
 */
export const MAX_SQL_LENGTH = 256 * 1024;

/** The deepest expression tree the SQL parser accepts (deeper input is an error, not a stack overflow later). */
export const MAX_EXPR_DEPTH = 1000;

/** The most WHEN branches of one CASE expression: each becomes a compiled test evaluated per record. */
export const MAX_CASE_BRANCHES = 1000;

/** The most expression nodes (operands, operators, calls) of one SQL statement. */
export const MAX_EXPR_NODES = 50_000;

/** Why `sql` is too long to be parsed (`what` names it, e.g. `rule r1`), or undefined when it is not. */
export function sqlTooLong(what: string, sql: string): string | undefined {
  if (sql.length <= MAX_SQL_LENGTH) return undefined;
  return `the SQL of ${what} is ${sql.length} characters long; SQL is limited to ${MAX_SQL_LENGTH} characters`;
}
