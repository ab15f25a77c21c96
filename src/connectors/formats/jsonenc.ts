/**
 * JSON text of sink data with Go's `encoding/json` rules (docs/runtime.md §3.3, docs/sql.md §6.8): sorted object keys and
 * `<`, `>`, `&` escaped, on top of the value serialisation of `values/json.ts`.
 *
 * This runs once per sink message, so data holding only JSON-native values (strings, finite numbers, booleans,
 * null, plain objects and arrays) is handed to `JSON.stringify`, with objects whose keys are out of order copied
 * in sorted order first; anything else (bigint, datetime, bytes, keys starting with a digit, which JS enumerates
 * in numeric order) takes the general serialiser.
 */
import { escapeJsonHtml, toJson } from '../../values/json.js';
import type { Value } from '../../values/value.js';

const GO_RULES = { sortKeys: true, escapeHtml: true } as const;

/** marks data the fast path cannot take */
const SLOW: unique symbol = Symbol('slow');
const MAX_DEPTH = 64;

/** `v` ready for `JSON.stringify` with Go's key order (the value itself when already in order), or SLOW. */
function sortedNative(v: unknown, depth: number): unknown {
  if (v === null || v === undefined) return v;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? v : SLOW;
    case 'object':
      break;
    default:
      return SLOW;
  }
  if (depth > MAX_DEPTH) return SLOW;
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const e: unknown = v[i];
      const x = typeof e === 'object' && e !== null ? sortedNative(e, depth + 1) : scalar(e);
      if (x === SLOW) return SLOW;
      if (x !== e) {
        if (out === undefined) out = v.slice(0, i);
        out.push(x);
      } else if (out !== undefined) out.push(x);
    }
    return out ?? v;
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return SLOW;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  const order = sortedKeys(keys, depth);
  if (order === null) return SLOW;
  let changed = false;
  for (let i = 0; i < keys.length; i++) {
    const e = o[keys[i]];
    if (typeof e === 'object' && e !== null) {
      const x = sortedNative(e, depth + 1);
      if (x === SLOW) return SLOW;
      if (x !== e) changed = true;
    } else if (scalar(e) === SLOW) return SLOW;
  }
  if (order === keys && !changed) return o;
  const out: Record<string, unknown> = {};
  for (let i = 0; i < order.length; i++) {
    const k = order[i];
    const e = o[k];
    out[k] = changed && typeof e === 'object' && e !== null ? sortedNative(e, depth + 1) : e;
  }
  return out;
}

/**
 * Sink rows of one rule mostly share their key order, so the sorted order of the last key list seen at each depth
 * is kept: comparing the (interned) keys is far cheaper than sorting again.
 */
interface KeyOrder {
  keys: string[];
  /** the sorted keys; `keys` itself when already in order; null when a key starts with a digit */
  order: string[] | null;
}
const KEY_CACHE: KeyOrder[] = [];

function sortedKeys(keys: string[], depth: number): string[] | null {
  let c = KEY_CACHE[depth];
  if (c !== undefined) {
    const last = c.keys;
    const n = keys.length;
    if (n === last.length) {
      let i = 0;
      while (i < n && keys[i] === last[i]) i++;
      if (i === n) return c.order === last ? keys : c.order;
    }
  } else if (depth < 8) {
    c = KEY_CACHE[depth] = { keys: [], order: [] };
  }
  let order: string[] | null = keys;
  let inOrder = true;
  for (let i = 0; i < keys.length; i++) {
    const ch = keys[i].charCodeAt(0);
    // digit keys enumerate in numeric order; an own `__proto__` key cannot be copied by assignment
    if ((ch >= 48 && ch <= 57) || (ch === 95 && keys[i] === '__proto__')) {
      order = null;
      break;
    }
    if (i > 0 && keys[i - 1] > keys[i]) inOrder = false;
  }
  if (order !== null && !inOrder) order = keys.slice().sort();
  if (c !== undefined) {
    c.keys = keys;
    c.order = order;
  }
  return order;
}

function scalar(e: unknown): unknown {
  switch (typeof e) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return e;
    case 'number':
      return Number.isFinite(e) ? e : SLOW;
    default:
      return e === null ? e : SLOW;
  }
}

/** Go-compatible JSON text of a value; throws on non-finite floats. */
export function encodeJson(v: unknown): string {
  const ready = sortedNative(v, 0);
  if (ready === SLOW) return toJson(v as Value, GO_RULES);
  const s = JSON.stringify(ready) ?? 'null';
  return escapeJsonHtml(s);
}
