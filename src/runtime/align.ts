/**
 * Window units and the alignment of a window's first boundary (docs/sql.md §5.3). Alignment follows the host's local
 * time zone (minute/hour/day starts), not the engine's `timezone` setting.
 */
import { TIME_UNIT_MS, type TimeUnit as SqlTimeUnit } from '../sql/ast.js';
export type TimeUnit = 'dd' | 'hh' | 'mi' | 'ss' | 'ms';

const UNITS: readonly TimeUnit[] = ['dd', 'hh', 'mi', 'ss', 'ms'];

/** A unit's length in ms, from the SQL layer's one table. */
export function unitMs(unit: TimeUnit): number {
  return TIME_UNIT_MS[unit.toUpperCase() as SqlTimeUnit];
}

/** The first window end after reference time `t` for the raw parameter `n` of `unit`. */
export function alignBoundary(t: number, n: number, unit: TimeUnit): number {
  const d = new Date(t);
  let parentStart: number;
  let within: number;
  switch (unit) {
    case 'dd': {
      d.setHours(0, 0, 0, 0);
      d.setDate(d.getDate() + n);
      return d.getTime();
    }
    case 'hh':
      within = d.getHours();
      d.setHours(0, 0, 0, 0);
      parentStart = d.getTime();
      break;
    case 'mi':
      within = d.getMinutes();
      d.setMinutes(0, 0, 0);
      parentStart = d.getTime();
      break;
    case 'ss':
      within = d.getSeconds();
      d.setSeconds(0, 0);
      parentStart = d.getTime();
      break;
    case 'ms':
      within = d.getMilliseconds();
      parentStart = t - within;
      break;
  }
  const k = within <= n ? 1 : Math.floor(within / n) + 1;
  return parentStart + k * n * unitMs(unit);
}

/** The unit keyword of a unit length in ms (count windows, unit 1, read as `ms`). */
export function unitOf(length: number): TimeUnit {
  return UNITS.find((u) => unitMs(u) === length) ?? 'ms';
}
