/**
 * Datetimes (docs/sql.md §7.8): time zones, calendar fields, Go-layout parsing and formatting, eKuiper's format
 * notation (`yyyy-MM-dd HH:mm:ssSSS`) and the list of layouts tried when a string is auto-parsed.
 *
 * Both notations compile to the same token list ({@link Layout}), so one parser and one formatter serve
 * `cast(x, "datetime")`, `TIMESTAMP_FORMAT`, `format_time` and every clock function. Zones use Node's Intl data;
 * no dependency is needed.
 */
import { readlinkSync } from 'node:fs';
import { DateTime } from './value.js';
import { EvalError } from './errors.js';

// ---------------------------------------------------------------------------------------------------------------
// Zones

interface Zone {
  /** The name stored in {@link DateTime.zone}. */
  readonly name: string;
  /** Fixed offset in seconds, or undefined for an IANA zone (then `fmt` is set). */
  readonly fixed?: number;
  readonly fmt?: Intl.DateTimeFormat;
  /** offset (seconds) per 15-minute bucket of UTC ms: offsets only change on such boundaries. */
  readonly cache?: Map<number, number>;
}

const zones = new Map<string, Zone>();
const UTC_ZONE: Zone = { name: 'UTC', fixed: 0 };
zones.set('UTC', UTC_ZONE);

/** Names the system gives UTC by (`TZ`, the target of `/etc/localtime`). */
const UTC_NAMES = new Set(['', 'UTC', 'Etc/UTC', 'UCT', 'Etc/UCT', 'Universal', 'Etc/Universal', 'Zulu', 'Etc/Zulu']);

let host: string | undefined;

/**
 * The host's IANA zone (what Go calls `Local`). A host on UTC — most containers and edge images — is recognised from
 * `TZ` or the zone file `/etc/localtime` links to, as the C library and ICU read them: asking Intl instead maps ICU's
 * zone data into the process (about 6 MB resident) for a zone that needs none of it. Any other zone is Intl's answer.
 */
export function hostZone(): string {
  return (host ??= systemUtc() ? 'UTC' : Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC');
}

function systemUtc(): boolean {
  const tz = process.env.TZ;
  if (tz !== undefined) return UTC_NAMES.has(tz.startsWith(':') ? tz.slice(1) : tz);
  let link: string;
  try {
    link = readlinkSync('/etc/localtime');
  } catch {
    // no link (a copied zone file, or no file at all): Intl knows
    return false;
  }
  const at = link.lastIndexOf('zoneinfo/');
  return at >= 0 && UTC_NAMES.has(link.slice(at + 'zoneinfo/'.length));
}

let configuredZone: string | undefined;

/** The engine's zone (`basic.timezone`, default the host zone) used to read wall-clock strings and for clocks. */
export function defaultZone(): string {
  return (configuredZone ??= hostZone());
}

/** Sets the engine's zone; throws `unknown time zone X` for an unknown name. */
export function setDefaultZone(zone: string | undefined): void {
  configuredZone = zone ? checkZone(zone) : undefined;
}

const FIXED_RE = /^([+-])(\d\d):?(\d\d)(?::?(\d\d))?$/;

function lookupZone(name: string): Zone | undefined {
  let z = zones.get(name);
  if (z) return z;
  const m = FIXED_RE.exec(name);
  if (m) {
    const off = (Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4] ?? 0)) * (m[1] === '-' ? -1 : 1);
    z = { name, fixed: off };
  } else {
    const iana = name === 'Local' ? hostZone() : name;
    if (iana === 'UTC' || iana === 'Etc/UTC') {
      z = { name, fixed: 0 };
    } else {
      try {
        const fmt = new Intl.DateTimeFormat('en-US', {
          timeZone: iana,
          hourCycle: 'h23',
          year: 'numeric',
          month: 'numeric',
          day: 'numeric',
          hour: 'numeric',
          minute: 'numeric',
          second: 'numeric',
          era: 'short',
        });
        z = { name: iana, fmt, cache: new Map() };
      } catch {
        return undefined;
      }
    }
  }
  zones.set(name, z);
  return z;
}

/** Resolves a zone name (`UTC`, `Local`, an IANA name, `+08:00`); throws `unknown time zone X` otherwise. */
export function checkZone(name: string): string {
  const z = lookupZone(name);
  if (!z) throw new EvalError(`unknown time zone ${name}`);
  return z.name;
}

function zoneOf(name: string): Zone {
  return lookupZone(name) ?? UTC_ZONE;
}

function ianaOffset(z: Zone, ms: number): number {
  const bucket = Math.floor(ms / 900_000);
  const cache = z.cache!;
  let off = cache.get(bucket);
  if (off !== undefined) return off;
  const parts = z.fmt!.formatToParts(new Date(bucket * 900_000));
  let y = 0,
    mo = 0,
    d = 0,
    h = 0,
    mi = 0,
    s = 0,
    bc = false;
  for (const p of parts) {
    switch (p.type) {
      case 'year':
        y = Number(p.value);
        break;
      case 'month':
        mo = Number(p.value);
        break;
      case 'day':
        d = Number(p.value);
        break;
      case 'hour':
        h = Number(p.value);
        break;
      case 'minute':
        mi = Number(p.value);
        break;
      case 'second':
        s = Number(p.value);
        break;
      case 'era':
        bc = p.value.startsWith('B');
        break;
    }
  }
  if (bc) y = 1 - y;
  const local = utcMs(y, mo, d, h, mi, s);
  off = Math.round((local - bucket * 900_000) / 1000);
  if (cache.size > 4096) cache.clear();
  cache.set(bucket, off);
  return off;
}

/** Offset east of UTC, in seconds, of `zone` at the instant `ms`. */
export function zoneOffset(zone: string, ms: number): number {
  const z = zoneOf(zone);
  return z.fixed !== undefined ? z.fixed : ianaOffset(z, ms);
}

/** The UTC instant of a wall-clock time (given as if it were UTC ms) in `zone`. */
export function localToUtc(zone: string, localMs: number): number {
  const z = zoneOf(zone);
  if (z.fixed !== undefined) return localMs - z.fixed * 1000;
  const o1 = ianaOffset(z, localMs);
  const guess = localMs - o1 * 1000;
  const o2 = ianaOffset(z, guess);
  return o1 === o2 ? guess : localMs - o2 * 1000;
}

const abbrevCache = new Map<string, string>();

function numericAbbrev(off: number): string {
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  const h = Math.floor(a / 3600);
  const m = Math.floor((a % 3600) / 60);
  return sign + pad2(h) + (m ? pad2(m) : '');
}

/** Zone abbreviation as Go prints it for `MST` (e.g. `UTC`, `EST`, `CET`; `+08` when the zone has none). */
export function zoneAbbrev(zone: string, ms: number): string {
  const z = zoneOf(zone);
  if (z.fixed !== undefined) {
    if (z.name === 'UTC' || (z.fixed === 0 && z.name !== zone)) return 'UTC';
    // Go names an anonymous fixed zone by its `-0700` offset.
    const a = Math.abs(z.fixed);
    return (z.fixed < 0 ? '-' : '+') + pad2(Math.floor(a / 3600)) + pad2(Math.floor((a % 3600) / 60));
  }
  const off = ianaOffset(z, ms);
  const key = z.name + '|' + off;
  let a = abbrevCache.get(key);
  if (a !== undefined) return a;
  a = numericAbbrev(off);
  for (const locale of ['en-US', 'en-GB']) {
    const part = new Intl.DateTimeFormat(locale, { timeZone: z.name, timeZoneName: 'short' })
      .formatToParts(new Date(ms))
      .find((p) => p.type === 'timeZoneName')?.value;
    if (part && !/^GMT[+-]/.test(part) && !/^UTC[+-]/.test(part)) {
      a = part;
      break;
    }
  }
  abbrevCache.set(key, a);
  return a;
}

// ---------------------------------------------------------------------------------------------------------------
// Calendar fields

/** Wall-clock fields of a datetime in its zone. */
export interface TimeFields {
  year: number;
  month: number; // 1..12
  day: number; // 1..31
  hour: number;
  minute: number;
  second: number;
  nanos: number; // 0..999_999_999
  weekday: number; // 0 = Sunday
  yearDay: number; // 1..366
  offset: number; // seconds east of UTC
}

export function fieldsOf(dt: DateTime): TimeFields {
  const offset = zoneOffset(dt.zone, dt.ms);
  const local = dt.ms + offset * 1000;
  const d = new Date(local);
  const year = d.getUTCFullYear();
  const ms = ((local % 1000) + 1000) % 1000;
  return {
    year,
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    nanos: ms * 1_000_000 + dt.nanos,
    weekday: d.getUTCDay(),
    yearDay: Math.floor((local - utcYearStart(year)) / 86_400_000) + 1,
    offset,
  };
}

function utcYearStart(year: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, 0, 1);
  d.setUTCHours(0, 0, 0, 0);
  return d.getTime();
}

/** Epoch ms of a wall-clock date in UTC, valid for any year (Date.UTC maps 0..99 to 19xx). */
export function utcMs(year: number, month: number, day: number, h = 0, mi = 0, s = 0, ms = 0): number {
  const t = Date.UTC(year, month - 1, day, h, mi, s, ms);
  if (year >= 100 || year < 0) return t;
  const d = new Date(t);
  d.setUTCFullYear(year);
  return d.getTime();
}

/** A datetime from epoch nanoseconds (bigint) in a zone. */
export function fromEpochNanos(ns: bigint, zone: string): DateTime {
  const ms = ns / 1_000_000n;
  let rem = Number(ns - ms * 1_000_000n);
  let m = Number(ms);
  if (rem < 0) {
    rem += 1_000_000;
    m -= 1;
  }
  return new DateTime(m, zone, rem);
}

export function epochNanos(dt: DateTime): bigint {
  return BigInt(dt.ms) * 1_000_000n + BigInt(dt.nanos);
}

// ---------------------------------------------------------------------------------------------------------------
// Layout tokens

type Pad = '' | '0' | '_';
export type Tok =
  | { k: 'lit'; s: string }
  | { k: 'year4' }
  | { k: 'year2' }
  | { k: 'month'; w: 1 | 2 | 3 | 4 } // 1, 01, Jan, January
  | { k: 'day'; pad: Pad }
  | { k: 'yday'; pad: Pad }
  | { k: 'wday'; long: boolean }
  | { k: 'hour'; pad: Pad } // 24-hour: `15` (Go's 15 accepts one or two digits and prints two)
  | { k: 'hour12'; pad: Pad }
  | { k: 'min'; pad: Pad }
  | { k: 'sec'; pad: Pad }
  | { k: 'frac'; n: number; nines: boolean; sep: string }
  | { k: 'ampm'; upper: boolean }
  | { k: 'tzname' }
  | { k: 'tzoff'; z: boolean; style: 'hh' | 'hhmm' | 'hh:mm' | 'hhmmss' | 'hh:mm:ss' }
  | { k: 'era' };

/** A compiled layout: a token list used for both formatting and parsing. */
export type Layout = readonly Tok[];

const layoutCache = new Map<string, Layout>();

/** Compiles a Go reference-time layout (`2006-01-02 15:04:05`). */
export function goLayout(layout: string): Layout {
  let l = layoutCache.get('g' + layout);
  if (l) return l;
  l = compileGo(layout);
  layoutCache.set('g' + layout, l);
  return l;
}

function pushLit(out: Tok[], s: string): void {
  const last = out[out.length - 1];
  if (last && last.k === 'lit') out[out.length - 1] = { k: 'lit', s: last.s + s };
  else out.push({ k: 'lit', s });
}

function compileGo(layout: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const starts = (p: string) => layout.startsWith(p, i);
  while (i < layout.length) {
    const c = layout[i];
    let tok: Tok | undefined;
    let len = 0;
    switch (c) {
      case 'J':
        if (starts('January')) {
          tok = { k: 'month', w: 4 };
          len = 7;
        } else if (starts('Jan')) {
          tok = { k: 'month', w: 3 };
          len = 3;
        }
        break;
      case 'M':
        if (starts('Monday')) {
          tok = { k: 'wday', long: true };
          len = 6;
        } else if (starts('Mon')) {
          tok = { k: 'wday', long: false };
          len = 3;
        } else if (starts('MST')) {
          tok = { k: 'tzname' };
          len = 3;
        }
        break;
      case '0':
        if (starts('002')) {
          tok = { k: 'yday', pad: '0' };
          len = 3;
        } else if (starts('01')) {
          tok = { k: 'month', w: 2 };
          len = 2;
        } else if (starts('02')) {
          tok = { k: 'day', pad: '0' };
          len = 2;
        } else if (starts('03')) {
          tok = { k: 'hour12', pad: '0' };
          len = 2;
        } else if (starts('04')) {
          tok = { k: 'min', pad: '0' };
          len = 2;
        } else if (starts('05')) {
          tok = { k: 'sec', pad: '0' };
          len = 2;
        } else if (starts('06')) {
          tok = { k: 'year2' };
          len = 2;
        }
        break;
      case '1':
        if (starts('15')) {
          tok = { k: 'hour', pad: '' };
          len = 2;
        } else {
          tok = { k: 'month', w: 1 };
          len = 1;
        }
        break;
      case '2':
        if (starts('2006')) {
          tok = { k: 'year4' };
          len = 4;
        } else {
          tok = { k: 'day', pad: '' };
          len = 1;
        }
        break;
      case '_':
        if (starts('_2')) {
          if (starts('_2006')) {
            pushLit(out, '_');
            tok = { k: 'year4' };
            len = 5;
          } else {
            tok = { k: 'day', pad: '_' };
            len = 2;
          }
        } else if (starts('__2')) {
          tok = { k: 'yday', pad: '_' };
          len = 3;
        }
        break;
      case '3':
        tok = { k: 'hour12', pad: '' };
        len = 1;
        break;
      case '4':
        tok = { k: 'min', pad: '' };
        len = 1;
        break;
      case '5':
        tok = { k: 'sec', pad: '' };
        len = 1;
        break;
      case 'P':
        if (starts('PM')) {
          tok = { k: 'ampm', upper: true };
          len = 2;
        }
        break;
      case 'p':
        if (starts('pm')) {
          tok = { k: 'ampm', upper: false };
          len = 2;
        }
        break;
      case '-':
      case 'Z': {
        const z = c === 'Z';
        const rest = z ? 'Z' : '-';
        for (const [suffix, style] of [
          ['070000', 'hhmmss'],
          ['07:00:00', 'hh:mm:ss'],
          ['0700', 'hhmm'],
          ['07:00', 'hh:mm'],
          ['07', 'hh'],
        ] as const) {
          if (starts(rest + suffix)) {
            tok = { k: 'tzoff', z, style };
            len = 1 + suffix.length;
            break;
          }
        }
        break;
      }
      case '.':
      case ',': {
        const d = layout[i + 1];
        if (d === '0' || d === '9') {
          let j = i + 1;
          while (layout[j] === d) j++;
          if (!(layout[j] >= '0' && layout[j] <= '9')) {
            tok = { k: 'frac', n: j - i - 1, nines: d === '9', sep: c };
            len = j - i;
          }
        }
        break;
      }
    }
    if (tok) {
      out.push(tok);
      i += len;
    } else {
      pushLit(out, c);
      i++;
    }
  }
  return out;
}

/**
 * Compiles eKuiper's (Java-like) format notation (docs/sql.md §7.8): `YYYY-MM-dd HH:mm:ssSSS`. Throws an EvalError for
 * an invalid letter count.
 */
export function ekuiperLayout(format: string): Layout {
  let l = layoutCache.get('e' + format);
  if (l) return l;
  l = compileEkuiper(format);
  layoutCache.set('e' + format, l);
  return l;
}

function compileEkuiper(f: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < f.length) {
    const c = f[i];
    if (c === '\\') {
      if (i + 1 < f.length) pushLit(out, f[i + 1]);
      i += 2;
      continue;
    }
    if (c === "'") {
      if (f[i + 1] === "'") {
        pushLit(out, "'");
        i += 2;
        continue;
      }
      // Quoted text; inside it a doubled quote stands for one quote.
      let j = i + 1;
      let text = '';
      for (;;) {
        if (j >= f.length) throw new EvalError(`unterminated quote in format ${f}`);
        if (f[j] === "'") {
          if (f[j + 1] === "'") {
            text += "'";
            j += 2;
            continue;
          }
          break;
        }
        text += f[j++];
      }
      pushLit(out, text);
      i = j + 1;
      continue;
    }
    let j = i;
    while (f[j] === c) j++;
    const n = j - i;
    let tok: Tok | undefined;
    switch (c) {
      case 'Y':
      case 'y':
        if (n === 4) tok = { k: 'year4' };
        else if (n === 2) tok = { k: 'year2' };
        else throw new EvalError(`invalid time format: ${f}, the letter ${c} must occur 2 or 4 times`);
        break;
      case 'M':
        tok = { k: 'month', w: Math.min(n, 4) as 1 | 2 | 3 | 4 };
        break;
      case 'd':
        tok = n >= 2 ? { k: 'day', pad: '0' } : { k: 'day', pad: '' };
        break;
      case 'E':
        tok = { k: 'wday', long: n >= 4 };
        break;
      case 'H':
        if (n < 2) throw new EvalError(`invalid time format: ${f}, the letter H must occur 2 times`);
        tok = { k: 'hour', pad: '0' };
        break;
      case 'h':
        tok = { k: 'hour12', pad: n >= 2 ? '0' : '' };
        break;
      case 'a':
        tok = { k: 'ampm', upper: true };
        break;
      case 'm':
        tok = { k: 'min', pad: n >= 2 ? '0' : '' };
        break;
      case 's':
        tok = { k: 'sec', pad: n >= 2 ? '0' : '' };
        break;
      case 'S':
        tok = { k: 'frac', n, nines: false, sep: '.' };
        break;
      case 'z':
        tok = { k: 'tzname' };
        break;
      case 'Z':
        tok = { k: 'tzoff', z: false, style: 'hhmm' };
        break;
      case 'X':
        tok = { k: 'tzoff', z: false, style: n === 1 ? 'hh' : n === 2 ? 'hhmm' : 'hh:mm' };
        break;
      case 'G':
        tok = { k: 'era' };
        break;
    }
    if (tok) out.push(tok);
    else pushLit(out, f.slice(i, j));
    i = j;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Formatting

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
export const MONTH_NAMES: readonly string[] = MONTHS;
export const DAY_NAMES: readonly string[] = DAYS;

function pad2(n: number): string {
  return n < 10 ? '0' + n : String(n);
}

function padN(n: number, w: number): string {
  let s = String(n);
  while (s.length < w) s = '0' + s;
  return s;
}

function fmtOffset(off: number, style: string, z: boolean): string {
  if (z && off === 0) return 'Z';
  const sign = off < 0 ? '-' : '+';
  const a = Math.abs(off);
  const h = pad2(Math.floor(a / 3600));
  const m = pad2(Math.floor((a % 3600) / 60));
  const s = pad2(a % 60);
  switch (style) {
    case 'hh':
      return sign + h;
    case 'hhmm':
      return sign + h + m;
    case 'hh:mm':
      return sign + h + ':' + m;
    case 'hhmmss':
      return sign + h + m + s;
    default:
      return sign + h + ':' + m + ':' + s;
  }
}

/** Formats a datetime with a compiled layout, in the datetime's own zone. */
export function formatLayout(dt: DateTime, layout: Layout): string {
  const f = fieldsOf(dt);
  let out = '';
  for (const t of layout) {
    switch (t.k) {
      case 'lit':
        out += t.s;
        break;
      case 'year4':
        out += f.year < 0 ? '-' + padN(-f.year, 4) : padN(f.year, 4);
        break;
      case 'year2':
        out += pad2(((f.year % 100) + 100) % 100);
        break;
      case 'month':
        out +=
          t.w === 1
            ? String(f.month)
            : t.w === 2
              ? pad2(f.month)
              : t.w === 3
                ? MONTHS[f.month - 1].slice(0, 3)
                : MONTHS[f.month - 1];
        break;
      case 'day':
        out += t.pad === '0' ? pad2(f.day) : t.pad === '_' && f.day < 10 ? ' ' + f.day : String(f.day);
        break;
      case 'yday':
        out +=
          t.pad === '0' ? padN(f.yearDay, 3) : t.pad === '_' ? String(f.yearDay).padStart(3, ' ') : String(f.yearDay);
        break;
      case 'wday':
        out += t.long ? DAYS[f.weekday] : DAYS[f.weekday].slice(0, 3);
        break;
      case 'hour':
        out += pad2(f.hour);
        break;
      case 'hour12': {
        const h = f.hour % 12 === 0 ? 12 : f.hour % 12;
        out += t.pad === '0' ? pad2(h) : String(h);
        break;
      }
      case 'min':
        out += t.pad === '0' ? pad2(f.minute) : String(f.minute);
        break;
      case 'sec':
        out += t.pad === '0' ? pad2(f.second) : String(f.second);
        break;
      case 'frac': {
        let digits = padN(f.nanos, 9).slice(0, Math.min(t.n, 9));
        if (t.nines) {
          digits = digits.replace(/0+$/, '');
          if (digits) out += t.sep + digits;
        } else out += t.sep + digits;
        break;
      }
      case 'ampm':
        out += f.hour >= 12 ? (t.upper ? 'PM' : 'pm') : t.upper ? 'AM' : 'am';
        break;
      case 'tzname':
        out += zoneAbbrev(dt.zone, dt.ms);
        break;
      case 'tzoff':
        out += fmtOffset(f.offset, t.style, t.z);
        break;
      case 'era':
        out += f.year > 0 ? 'AD' : 'BC';
        break;
    }
  }
  return out;
}

const GO_STRING = goLayout('2006-01-02 15:04:05.999999999 -0700 MST');
const RFC3339_NANO = goLayout('2006-01-02T15:04:05.999999999Z07:00');
const DATETIME_SQL = goLayout('2006-01-02 15:04:05');

/** Go's `time.Time.String()` form: `2006-01-02 15:04:05.999999999 -0700 MST`. */
export function formatGoTime(dt: DateTime): string {
  return formatLayout(dt, GO_STRING);
}

/** RFC 3339 with a trimmed nanosecond fraction, in the datetime's zone (how JSON shows datetimes). */
export function formatRfc3339(dt: DateTime): string {
  return formatLayout(dt, RFC3339_NANO);
}

/** `YYYY-MM-DD HH:mm:ss` (the string most date functions return). */
export function formatSqlDateTime(dt: DateTime): string {
  return formatLayout(dt, DATETIME_SQL);
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing

const LOWER_MONTHS = MONTHS.map((m) => m.toLowerCase());
const LOWER_DAYS = DAYS.map((d) => d.toLowerCase());

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

interface Parsed {
  year?: number;
  month?: number;
  day?: number;
  yday?: number;
  hour: number;
  minute: number;
  second: number;
  nanos: number;
  pm?: boolean;
  offset?: number;
  zoneName?: string;
}

class ParseFail extends Error {}

/**
 * Parses `s` with a compiled layout. Wall-clock values without an offset are read in `zone`. Missing date parts
 * follow eKuiper's auto-parse rules: no year → the current year; a time-only layout → today's date.
 * Returns undefined when the text does not match.
 */
export function parseLayout(s: string, layout: Layout, zone: string, nowMs: number = Date.now()): DateTime | undefined {
  let p: Parsed;
  try {
    p = parseTokens(s, layout);
  } catch (e) {
    if (e instanceof ParseFail) return undefined;
    throw e;
  }
  let { year, month, day } = p;
  if (year === undefined || (month === undefined && day === undefined && p.yday === undefined)) {
    const today = fieldsOf(new DateTime(nowMs, zone));
    if (month === undefined && day === undefined && p.yday === undefined) {
      if (year === undefined) {
        month = today.month;
        day = today.day;
      }
    }
    year ??= today.year;
  }
  month ??= 1;
  day ??= 1;
  let hour = p.hour;
  if (p.pm !== undefined) {
    if (hour > 12) return undefined;
    if (p.pm && hour < 12) hour += 12;
    else if (!p.pm && hour === 12) hour = 0;
  }
  if (p.yday !== undefined) {
    const d = new Date(utcMs(year, 1, 1) + (p.yday - 1) * 86_400_000);
    month = d.getUTCMonth() + 1;
    day = d.getUTCDate();
  }
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  const local = utcMs(year, month, day, hour, p.minute, p.second);
  const ms = Math.floor(p.nanos / 1_000_000);
  const nanos = p.nanos % 1_000_000;
  if (p.offset !== undefined) {
    const utc = local - p.offset * 1000 + ms;
    // Keep the configured zone when it shows the same offset at that instant (as Go's ParseInLocation does).
    const z =
      zoneOffset(zone, utc) === p.offset
        ? zone
        : p.offset === 0 && p.zoneName === 'UTC'
          ? 'UTC'
          : fmtOffset(p.offset, 'hh:mm', false);
    return new DateTime(utc, z, nanos);
  }
  if (p.zoneName !== undefined && p.zoneName !== 'UTC' && p.zoneName !== 'GMT') {
    // An unknown abbreviation records a zero offset unless it is the configured zone's own abbreviation.
    const guess = localToUtc(zone, local);
    if (zoneAbbrev(zone, guess) === p.zoneName) return new DateTime(guess + ms, zone, nanos);
    return new DateTime(local + ms, '+00:00', nanos);
  }
  if (p.zoneName !== undefined) return new DateTime(local + ms, 'UTC', nanos);
  return new DateTime(localToUtc(zone, local) + ms, zone, nanos);
}

export function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
}

/** Thrown (preallocated, no stack capture) when a layout does not match. */
const PARSE_FAIL = new ParseFail();

/** Reads one string against one layout; every method advances `i` or throws PARSE_FAIL. */
class Scanner {
  i = 0;
  readonly p: Parsed = { hour: 0, minute: 0, second: 0, nanos: 0 };
  constructor(readonly s: string) {}

  fail(): never {
    throw PARSE_FAIL;
  }

  num(fixed: boolean, min: number, max: number): number {
    const s = this.s;
    const i = this.i;
    if (!isDigit(s[i])) this.fail();
    let n: number;
    if (isDigit(s[i + 1])) {
      n = (s.charCodeAt(i) - 48) * 10 + (s.charCodeAt(i + 1) - 48);
      this.i += 2;
    } else {
      if (fixed) this.fail();
      n = s.charCodeAt(i) - 48;
      this.i += 1;
    }
    if (n < min || n > max) this.fail();
    return n;
  }

  lookup(names: string[], short: boolean): number {
    for (let k = 0; k < names.length; k++) {
      const n = short ? names[k].slice(0, 3) : names[k];
      if (this.s.slice(this.i, this.i + n.length).toLowerCase() === n) {
        this.i += n.length;
        return k;
      }
    }
    return this.fail();
  }

  /** Digits after a `.`/`,` separator: as many as there are (up to 9 kept). */
  fraction(): void {
    const s = this.s;
    const i = this.i;
    const sep = s[i];
    if ((sep !== '.' && sep !== ',') || !isDigit(s[i + 1])) return;
    let j = i + 1;
    while (isDigit(s[j])) j++;
    this.p.nanos = Number(s.slice(i + 1, Math.min(j, i + 10)).padEnd(9, '0'));
    this.i = j;
  }
}

function parseTokens(s: string, layout: Layout): Parsed {
  const sc = new Scanner(s);
  const p = sc.p;
  for (let t = 0; t < layout.length; t++) {
    const tok = layout[t];
    switch (tok.k) {
      case 'lit': {
        // A run of spaces in the layout matches one or more spaces in the text.
        const lit = tok.s;
        let k = 0;
        while (k < lit.length) {
          if (lit[k] === ' ') {
            if (s[sc.i] !== ' ') sc.fail();
            while (lit[k] === ' ') k++;
            while (s[sc.i] === ' ') sc.i++;
            continue;
          }
          if (s[sc.i] !== lit[k]) sc.fail();
          sc.i++;
          k++;
        }
        break;
      }
      case 'year4': {
        if (!(isDigit(s[sc.i]) && isDigit(s[sc.i + 1]) && isDigit(s[sc.i + 2]) && isDigit(s[sc.i + 3]))) sc.fail();
        p.year = Number(s.slice(sc.i, sc.i + 4));
        sc.i += 4;
        break;
      }
      case 'year2': {
        const y = sc.num(true, 0, 99);
        p.year = y >= 69 ? 1900 + y : 2000 + y;
        break;
      }
      case 'month':
        if (tok.w >= 3) p.month = sc.lookup(LOWER_MONTHS, tok.w === 3) + 1;
        else p.month = sc.num(tok.w === 2, 1, 12);
        break;
      case 'day':
        if (tok.pad === '_' && s[sc.i] === ' ') sc.i++;
        p.day = sc.num(tok.pad === '0', 1, 31);
        break;
      case 'yday': {
        let j = sc.i;
        while (isDigit(s[j]) && j - sc.i < 3) j++;
        if (j === sc.i || (tok.pad === '0' && j - sc.i !== 3)) sc.fail();
        p.yday = Number(s.slice(sc.i, j));
        sc.i = j;
        if (p.yday < 1 || p.yday > 366) sc.fail();
        break;
      }
      case 'wday':
        sc.lookup(LOWER_DAYS, !tok.long);
        break;
      case 'hour':
        p.hour = sc.num(false, 0, 23);
        break;
      case 'hour12':
        p.hour = sc.num(tok.pad === '0', 0, 12);
        break;
      case 'min':
        p.minute = sc.num(tok.pad === '0', 0, 59);
        break;
      case 'sec': {
        p.second = sc.num(tok.pad === '0', 0, 59);
        // Go accepts a fractional second here unless the layout itself continues with one.
        const next = layout[t + 1];
        if (!(next && next.k === 'frac')) sc.fraction();
        break;
      }
      case 'frac': {
        if (tok.nines) {
          if (s[sc.i] === tok.sep || s[sc.i] === '.' || s[sc.i] === ',') sc.fraction();
        } else {
          if (s[sc.i] !== tok.sep) sc.fail();
          let j = sc.i + 1;
          for (let k = 0; k < tok.n; k++) if (!isDigit(s[j++])) sc.fail();
          p.nanos = Number(s.slice(sc.i + 1, sc.i + 1 + Math.min(tok.n, 9)).padEnd(9, '0'));
          sc.i = j;
        }
        break;
      }
      case 'ampm': {
        const a = s.slice(sc.i, sc.i + 2).toUpperCase();
        if (a !== 'AM' && a !== 'PM') sc.fail();
        p.pm = a === 'PM';
        sc.i += 2;
        break;
      }
      case 'tzname': {
        if (s.startsWith('UTC', sc.i)) {
          p.zoneName = 'UTC';
          sc.i += 3;
          break;
        }
        let j = sc.i;
        while (j < s.length && ((s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= 'a' && s[j] <= 'z'))) j++;
        if (j - sc.i < 3) {
          // Go also accepts numeric abbreviations such as `+08` / `-0530`.
          const m = /^[+-]\d\d?(?!\d)/.exec(s.slice(sc.i));
          if (!m) sc.fail();
          p.zoneName = m![0];
          sc.i += m![0].length;
          break;
        }
        p.zoneName = s.slice(sc.i, j);
        sc.i = j;
        if (p.zoneName.startsWith('GMT')) {
          const m = /^[+-]\d{1,2}/.exec(s.slice(sc.i));
          if (m) {
            p.offset ??= Number(m[0]) * 3600;
            sc.i += m[0].length;
          }
        }
        break;
      }
      case 'tzoff': {
        if (tok.z && s[sc.i] === 'Z') {
          sc.i++;
          p.offset = 0;
          p.zoneName = 'UTC';
          break;
        }
        const sign = s[sc.i];
        if (sign !== '+' && sign !== '-') sc.fail();
        sc.i++;
        const h = sc.num(true, 0, 99);
        let m = 0;
        let sec = 0;
        if (tok.style !== 'hh') {
          if (tok.style.includes(':')) {
            if (s[sc.i] !== ':') sc.fail();
            sc.i++;
          }
          m = sc.num(true, 0, 99);
          if (tok.style === 'hhmmss' || tok.style === 'hh:mm:ss') {
            if (tok.style === 'hh:mm:ss') {
              if (s[sc.i] !== ':') sc.fail();
              sc.i++;
            }
            sec = sc.num(true, 0, 99);
          }
        }
        p.offset = (h * 3600 + m * 60 + sec) * (sign === '-' ? -1 : 1);
        break;
      }
      case 'era':
        if (s.startsWith('AD', sc.i)) sc.i += 2;
        else sc.fail();
        break;
    }
  }
  if (sc.i !== s.length) sc.fail();
  return p;
}

/** Layouts tried, in order, when a string is converted to a datetime without an explicit format (docs/sql.md §7.8). */
const AUTO: Layout[] = [
  '2006',
  '2006-1',
  '2006-1-2',
  '2006-1-2 15',
  '2006-1-2 15:4',
  '2006-1-2 15:4:5',
  '1-2',
  '15:4:5',
  '15:4',
  '15',
  '15:4:5 Jan 2, 2006 MST',
  '2006-01-02 15:04:05.999999999 -0700 MST',
  '2006-01-02T15:04:05Z0700',
  '2006-01-02T15:04:05Z07',
  '2006.1.2',
  '2006.1.2 15:04:05',
  '2006.01.02',
  '2006.01.02 15:04:05',
  '2006.01.02 15:04:05.999999999',
  '1/2/2006',
  '1/2/2006 15:4:5',
  '2006/01/02',
  '20060102',
  '2006/01/02 15:04:05',
  'Mon Jan _2 15:04:05 2006', // ANSIC
  'Mon Jan _2 15:04:05 MST 2006', // UnixDate
  'Mon Jan 02 15:04:05 -0700 2006', // RubyDate
  '02 Jan 06 15:04 MST', // RFC822
  '02 Jan 06 15:04 -0700', // RFC822Z
  'Monday, 02-Jan-06 15:04:05 MST', // RFC850
  'Mon, 02 Jan 2006 15:04:05 MST', // RFC1123
  'Mon, 02 Jan 2006 15:04:05 -0700', // RFC1123Z
  '2006-01-02T15:04:05Z07:00', // RFC3339
  '2006-01-02T15:04:05.999999999Z07:00', // RFC3339Nano
  '3:04PM', // Kitchen
  'Jan _2 15:04:05', // Stamp
  'Jan _2 15:04:05.000',
  'Jan _2 15:04:05.000000',
  'Jan _2 15:04:05.000000000',
  '2006-01-02T15:04:05.000Z07:00',
  '2006-01-02T15:04:05',
].map(goLayout);

/** Parses a datetime string by trying every auto-detected layout; throws `Can't parse string as time: …`. */
export function parseAuto(s: string, zone: string): DateTime {
  // Streams repeat one format: remember which layout matched strings of the same shape and try it first.
  let shape = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    shape += c >= 48 && c <= 57 ? '9' : s[i];
  }
  const hit = shapeCache.get(shape);
  if (hit !== undefined) {
    const dt = parseLayout(s, AUTO[hit], zone);
    if (dt) return dt;
  }
  for (let i = 0; i < AUTO.length; i++) {
    if (i === hit) continue;
    const dt = parseLayout(s, AUTO[i], zone);
    if (dt) {
      if (shapeCache.size > 1000) shapeCache.clear();
      shapeCache.set(shape, i);
      return dt;
    }
  }
  throw new EvalError(`Can't parse string as time: ${s}`);
}

const shapeCache = new Map<string, number>();

/** Parses with an eKuiper format (`yyyy-MM-dd HH:mm:ss`); throws when the text does not match. */
export function parseWithFormat(s: string, format: string, zone: string): DateTime {
  const dt = parseLayout(s, ekuiperLayout(format), zone);
  if (!dt) throw new EvalError(`Can't parse string as time: ${s} with format ${format}`);
  return dt;
}

/** A datetime moved to another zone (same instant). */
export function inZone(dt: DateTime, zone: string): DateTime {
  return dt.zone === zone ? dt : new DateTime(dt.ms, zone, dt.nanos);
}
