/**
 * An estimate of the memory a buffered row holds (the rule option `memoryLimit`, docs/runtime.md §1.10): its values
 * walked once, strings at two bytes a character, numbers and small values at their V8 sizes, plus a fixed overhead
 * per object and array slot. It is an estimate: V8 shares strings, packs small integers and keeps hidden classes,
 * so the true cost may be lower, and a value nested beyond {@link MAX_DEPTH} levels is counted at a flat size.
 */
import type { Row } from '../contracts/index.js';
import { DateTime, type Value } from '../values/index.js';

const MAX_DEPTH = 64;
const OBJECT = 48;
const SLOT = 16;

/** Estimated bytes of one value. */
export function valueBytes(v: Value | undefined, depth = 0): number {
  if (v === null || v === undefined || typeof v === 'boolean' || typeof v === 'number') return 8;
  if (typeof v === 'string') return 16 + 2 * v.length;
  if (typeof v === 'bigint') return 24;
  if (depth > MAX_DEPTH) return OBJECT;
  if (v instanceof Uint8Array) return OBJECT + v.byteLength;
  if (v instanceof DateTime) return OBJECT;
  if (Array.isArray(v)) {
    let n = OBJECT + SLOT * v.length;
    for (const x of v) n += valueBytes(x, depth + 1);
    return n;
  }
  let n = OBJECT;
  for (const k in v) n += SLOT + 2 * k.length + valueBytes(v[k], depth + 1);
  return n;
}

const sizes = new WeakMap<Row, number>();

/** Estimated bytes of a row (message and metadata; every side of a joined row), remembered per row. */
export function rowBytes(row: Row): number {
  let n = sizes.get(row);
  if (n !== undefined) return n;
  n = OBJECT;
  if (row.kind === 'tuple') n += valueBytes(row.message) + valueBytes(row.meta);
  else for (const t of row.tuples) n += OBJECT + valueBytes(t.message) + valueBytes(t.meta);
  sizes.set(row, n);
  return n;
}
