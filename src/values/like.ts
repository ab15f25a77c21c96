/**
 * LIKE pattern translation (docs/sql.md §6.5), with eKuiper's quirks: `%` → `.*`, `_` → `.`, every backslash is a
 * literal backslash and keeps a following `%`/`_` literal too; other regex metacharacters are not escaped. The result runs
 * on RE2 (re2js), like eKuiper's Go regexp: linear time, RE2 syntax.
 */
import { RE2JS } from 're2js';
import { EvalError } from './errors.js';
import { textOf } from './text.js';
import type { Value } from './value.js';

const cache = new Map<string, RE2JS>();

/** The anchored regular expression of a LIKE pattern (cached); throws `invalid LIKE pattern` when it cannot compile. */
export function likeToRegExp(pattern: string): RE2JS {
  let re = cache.get(pattern);
  if (re) return re;
  let src = '^';
  let escaped = false;
  for (const c of pattern) {
    if (c === '\\') {
      src += '\\\\';
      escaped = true;
      continue;
    }
    if (c === '%') src += escaped ? '%' : '.*';
    else if (c === '_') src += escaped ? '_' : '.';
    else src += c;
    escaped = false;
  }
  src += '$';
  try {
    re = RE2JS.compile(src);
  } catch {
    throw new EvalError(`invalid LIKE pattern ${pattern}`);
  }
  if (cache.size > 10_000) cache.clear();
  cache.set(pattern, re);
  return re;
}

/** `s LIKE pattern` at runtime, with eKuiper's operand errors. */
export function like(s: Value, pattern: Value): boolean {
  if (typeof s !== 'string') {
    throw new EvalError(
      `LIKE operator left operand expects string, but found ${s === null || s === undefined ? '<nil>' : textOf(s)}`,
    );
  }
  if (typeof pattern !== 'string') {
    throw new EvalError(
      `invalid LIKE pattern, must be a string but got ${pattern === null || pattern === undefined ? '<nil>' : textOf(pattern)}`,
    );
  }
  return likeToRegExp(pattern).test(s);
}
