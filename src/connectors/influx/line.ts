/**
 * InfluxDB line protocol: one point per line, `measurement,tag=v field=v timestamp`. Integers (`bigint`) carry the
 * `i` suffix, floats are written in their shortest form, strings are quoted; null, NaN and infinite fields are left
 * out (the protocol has no way to write them), as are empty tag values.
 */
import type { Value } from '../../values/value.js';
import { DateTime } from '../../values/value.js';

export type Precision = 'ns' | 'us' | 'ms' | 's';
export const PRECISIONS: readonly Precision[] = ['ns', 'us', 'ms', 's'];

const escapeMeasurement = (s: string): string => s.replace(/[\\, ]/g, (c) => `\\${c}`);
const escapeKey = (s: string): string => s.replace(/[\\,= ]/g, (c) => `\\${c}`);
const escapeString = (s: string): string => s.replace(/[\\"]/g, (c) => `\\${c}`);

/** A field value in line protocol, or undefined when it cannot be written. */
function fieldValue(v: Value): string | undefined {
  if (v === null || v === undefined) return undefined;
  switch (typeof v) {
    case 'bigint':
      return `${v}i`;
    case 'number':
      return Number.isFinite(v) ? String(v) : undefined;
    case 'boolean':
      return v ? 'true' : 'false';
    case 'string':
      return `"${escapeString(v)}"`;
    default:
      if (v instanceof DateTime) return `${v.ms}i`;
      if (v instanceof Uint8Array) return `"${Buffer.from(v).toString('base64')}"`;
      return `"${escapeString(JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? Number(x) : x)))}"`;
  }
}

/** Now in `precision` units. */
export function nowIn(precision: Precision): bigint {
  const ms = BigInt(Date.now());
  switch (precision) {
    case 'ns':
      return ms * 1_000_000n;
    case 'us':
      return ms * 1000n;
    case 'ms':
      return ms;
    case 's':
      return ms / 1000n;
  }
}

/** One point as a line; undefined when no field can be written (the protocol needs at least one). */
export function pointLine(
  measurement: string,
  tags: ReadonlyArray<[string, string]>,
  fields: ReadonlyArray<[string, Value]>,
  timestamp: bigint,
): string | undefined {
  let line = escapeMeasurement(measurement);
  for (const [k, v] of [...tags].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    if (v !== '') line += `,${escapeKey(k)}=${escapeKey(v)}`;
  }
  let sep = ' ';
  let any = false;
  for (const [k, v] of fields) {
    const text = fieldValue(v);
    if (text === undefined) continue;
    line += `${sep}${escapeKey(k)}=${text}`;
    sep = ',';
    any = true;
  }
  return any ? `${line} ${timestamp}` : undefined;
}
