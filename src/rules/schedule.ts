/**
 * Time helpers of scheduled rules (docs/runtime.md §1.3): cron specs (5/6 fields through croner, `@every <duration>`),
 * Go durations, `cronDatetimeRange` windows, and the restart back-off.
 */
import { Cron } from 'croner';
import type { RuleOptions } from '../contracts/index.js';

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60000,
  h: 3600000,
};

/** Go duration text (`30s`, `1h30m`, `1.5h`, `500ms`) → ms; undefined when malformed. */
export function parseGoDuration(text: string): number | undefined {
  let s = text.trim();
  if (s === '') return undefined;
  let sign = 1;
  if (s[0] === '-' || s[0] === '+') {
    if (s[0] === '-') sign = -1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]];
    pos = re.lastIndex;
  }
  return sign * total;
}

/** When a schedule fires: `next(t)` is the first firing strictly after Unix ms t (undefined: never again). */
export interface CronSchedule {
  next(after: number): number | undefined;
}

/** Parses a rule's `cron` option; throws with a readable message. */
export function parseCronSpec(spec: string, timezone?: string): CronSchedule {
  const text = spec.trim();
  if (text.toLowerCase().startsWith('@every ')) {
    const every = parseGoDuration(text.slice(7));
    if (every === undefined || every <= 0) throw new Error(`bad duration in ${spec}`);
    // like Go's cron: first firing one interval after the reference, at whole seconds
    const step = Math.max(1000, Math.floor(every / 1000) * 1000);
    return { next: (after) => Math.floor(after / 1000) * 1000 + step };
  }
  const tz = timezone && timezone.toLowerCase() !== 'local' ? timezone : undefined;
  const cron = new Cron(text, { paused: true, ...(tz ? { timezone: tz } : {}) });
  return {
    next(after) {
      const d = cron.nextRun(new Date(after));
      return d ? d.getTime() : undefined;
    },
  };
}

/** Offset (ms) of a named time zone from UTC at a given instant. */
function zoneOffset(ms: number, timezone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(ms));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value ?? 0);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return asUtc - Math.floor(ms / 1000) * 1000;
}

function namedZone(timezone?: string): string | undefined {
  if (!timezone || timezone.toLowerCase() === 'local') return undefined;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return timezone;
  } catch {
    return undefined;
  }
}

/** `YYYY-MM-DD hh:mm:ss` in the configured zone → Unix ms; undefined when malformed. */
export function parseRangeTime(text: string, timezone?: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(text.trim());
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59) return undefined;
  const zone = namedZone(timezone);
  if (!zone) return new Date(y, mo - 1, d, h, mi, s).getTime();
  const guess = Date.UTC(y, mo - 1, d, h, mi, s);
  return guess - zoneOffset(guess - zoneOffset(guess, zone), zone);
}

/** A `cronDatetimeRange` item as [begin, end] Unix ms. */
export function rangeBounds(
  range: RuleOptions['cronDatetimeRange'][number],
  timezone?: string,
): [number, number] | undefined {
  if ((range.beginTimestamp ?? 0) > 0 && (range.endTimestamp ?? 0) > 0)
    return [range.beginTimestamp!, range.endTimestamp!];
  const b = parseRangeTime(range.begin ?? '', timezone);
  const e = parseRangeTime(range.end ?? '', timezone);
  return b === undefined || e === undefined ? undefined : [b, e];
}

/** true when there are no ranges or `t` lies inside one of them. */
export function inRanges(ranges: RuleOptions['cronDatetimeRange'] | undefined, t: number, timezone?: string): boolean {
  if (!ranges || ranges.length === 0) return true;
  return ranges.some((r) => {
    const b = rangeBounds(r, timezone);
    return b !== undefined && t >= b[0] && t <= b[1];
  });
}

/** true when ranges exist and all of them ended before `t`. */
export function rangesEnded(
  ranges: RuleOptions['cronDatetimeRange'] | undefined,
  t: number,
  timezone?: string,
): boolean {
  if (!ranges || ranges.length === 0) return false;
  return ranges.every((r) => {
    const b = rangeBounds(r, timezone);
    return b === undefined || b[1] < t;
  });
}

/**
 * Delay before restart number `n` (0-based): delay × multiplier^n capped at maxDelay, with ±jitterFactor applied,
 * kept within (0, maxDelay].
 */
export function restartDelay(
  strategy: RuleOptions['restartStrategy'],
  n: number,
  random: () => number = Math.random,
): number {
  const base = Math.min(strategy.delay * Math.pow(strategy.multiplier, n), strategy.maxDelay);
  const jitter = base * strategy.jitterFactor * (random() * 2 - 1);
  return Math.max(1, Math.min(strategy.maxDelay, Math.round(base + jitter)));
}

/** `YYYY-MM-DDTHH:MM:SS.ffffff` in the configured zone with trailing fractional zeros trimmed; never → year 1. */
export function formatInvocation(ms: number, timezone?: string): string {
  if (!ms) return '0001-01-01T00:00:00';
  const zone = namedZone(timezone);
  const local = zone ? ms + zoneOffset(ms, zone) : ms - new Date(ms).getTimezoneOffset() * 60000;
  const d = new Date(local);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const base = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  const frac = `${pad(d.getUTCMilliseconds(), 3)}000`.replace(/0+$/, '');
  return frac === '' ? base : `${base}.${frac}`;
}
