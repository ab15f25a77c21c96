/** JSON functions (docs/sql.md §7.5). */
import { DateTime, EvalError, isObject, textOf, toJson, utf8Text, type Value } from '../values/index.js';
import type { FunctionDef } from './registry.js';
import { scalar } from './define.js';
import { compilePath, queryPath } from './jsonpath.js';
import { all, exactly, mustBe, NUM_LIT, BOOL_EXPR, rejects, STRING } from './validate.js';

/** Go's `encoding/json` error wording for the common failures. */
function goJsonError(text: string, e: Error): string {
  const m = /position (\d+)/.exec(e.message);
  let pos = m ? Number(m[1]) : -1;
  if (pos < 0) {
    if (/Unexpected end|unterminated|Unterminated/i.test(e.message) || text.trim() === '')
      return 'unexpected end of JSON input';
    pos = 0;
    while (pos < text.length && /\s/.test(text[pos])) pos++;
  }
  if (pos >= text.length) return 'unexpected end of JSON input';
  const c = text[pos];
  let before = pos - 1;
  while (before >= 0 && /\s/.test(text[before])) before--;
  if (before < 0) return `invalid character '${c}' looking for beginning of value`;
  try {
    JSON.parse(text.slice(0, pos));
    return `invalid character '${c}' after top-level value`;
  } catch {
    const prev = text[before];
    if (prev === '{' || prev === ',') {
      if (c !== '"') return `invalid character '${c}' looking for beginning of object key string`;
    }
    if (prev === ':' || prev === '[') return `invalid character '${c}' looking for beginning of value`;
    if (prev === '"' || /[\d\w\]}]/.test(prev)) {
      return `invalid character '${c}' after ${/[{,]/.test(findOpener(text, before)) ? 'object key' : 'array element'}`;
    }
    return `invalid character '${c}' looking for beginning of value`;
  }
}

function findOpener(text: string, from: number): string {
  let depth = 0;
  for (let i = from; i >= 0; i--) {
    const c = text[i];
    if (c === '}' || c === ']') depth++;
    else if (c === '{' || c === '[') {
      if (depth === 0) return c;
      depth--;
    }
  }
  return '';
}

/** Decodes JSON text the way a schemaless stream does: numbers are floats. */
export function parseJsonText(text: string): Value {
  try {
    return JSON.parse(text) as Value;
  } catch (e) {
    throw new EvalError(`fail to parse json: ${goJsonError(text, e as Error)}`);
  }
}

/** The data argument of the json_path functions: an object, an array or a string holding JSON. */
function pathData(v: Value): Value {
  if (v === null || v === undefined) throw new EvalError('invalid data nil for jsonpath');
  if (Array.isArray(v) || isObject(v)) return v;
  if (typeof v === 'string' || v instanceof Uint8Array) {
    const text = typeof v === 'string' ? v : utf8Text(v);
    try {
      return JSON.parse(text) as Value;
    } catch {
      throw new EvalError(`invalid data ${textOf(v)} for jsonpath`);
    }
  }
  if (v instanceof DateTime) throw new EvalError(`invalid data ${textOf(v)} for jsonpath`);
  throw new EvalError(`invalid data ${textOf(v)} for jsonpath`);
}

function query(a: Value[]): Value {
  const data = pathData(a[0]);
  return queryPath(data, compilePath(textOf(a[1])));
}

const pathValidate = all(exactly(2), mustBe(1, STRING, ['string']));

export const jsonFunctions: FunctionDef[] = [
  scalar('to_json', 'N', exactly(1), (a) => {
    try {
      return toJson(a[0], { sortKeys: true, escapeHtml: true });
    } catch {
      throw new EvalError(`fail to convert ${textOf(a[0])} to json`);
    }
  }),
  scalar('parse_json', 'none', all(exactly(1), rejects(0, STRING, [...NUM_LIT, ...BOOL_EXPR])), (a) => {
    const v = a[0];
    if (v === null || v === undefined || v === 'null') return null;
    if (typeof v === 'string') return parseJsonText(v);
    if (v instanceof Uint8Array) return parseJsonText(utf8Text(v));
    throw new EvalError(`fail to convert ${textOf(v)} to string`);
  }),
  scalar('json_path_query', 'none', pathValidate, (a) => query(a)),
  scalar('json_path_query_first', 'none', pathValidate, (a) => {
    const r = query(a);
    if (!Array.isArray(r)) throw new EvalError(`query result (${textOf(r)}) is not an array`);
    return r.length ? r[0] : null;
  }),
  scalar('json_path_exists', 'none', pathValidate, (a) => {
    try {
      const r = query(a);
      if (r === null || r === undefined) return false;
      return Array.isArray(r) ? r.length > 0 : true;
    } catch {
      return false;
    }
  }),
];
