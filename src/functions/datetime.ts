/** Date and time functions (docs/sql.md §7.8). Datetime arguments accept a datetime, epoch-ms numbers or strings. */
import {
  checkZone,
  DateTime,
  DAY_NAMES,
  daysIn,
  defaultZone,
  ekuiperLayout,
  epochNanos,
  EvalError,
  fieldsOf,
  formatLayout,
  formatSqlDateTime,
  fromEpochNanos,
  goLayout,
  hostZone,
  inZone,
  MONTH_NAMES,
  textOf,
  toDateTime,
  typedText,
  type Value,
} from '../values/index.js';
import type { FunctionDef } from './registry.js';
import { scalar } from './define.js';
import {
  all,
  between,
  datetimeArg,
  exactly,
  INT,
  mustBe,
  NUM_LIT,
  BOOL_EXPR,
  rejects,
  STRING,
  type Validator,
} from './validate.js';

const dt1: Validator = all(exactly(1), datetimeArg(0));

const UNIT_NS: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, μs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Go's time.ParseDuration, in nanoseconds (bigint). */
export function parseDuration(s: string): bigint {
  const bad = () => new EvalError(`time: invalid duration ${JSON.stringify(s)}`);
  let i = 0;
  let neg = false;
  if (s[0] === '-' || s[0] === '+') {
    neg = s[0] === '-';
    i = 1;
  }
  if (s.slice(i) === '0') return 0n;
  if (i >= s.length) throw bad();
  let total = 0n;
  while (i < s.length) {
    const m = /^(\d*)(?:\.(\d*))?/.exec(s.slice(i))!;
    if (m[0] === '' || m[0] === '.' || (m[1] === '' && (m[2] ?? '') === '')) throw bad();
    i += m[0].length;
    const u = /^[^\d.]+/.exec(s.slice(i));
    if (!u) throw new EvalError(`time: missing unit in duration ${JSON.stringify(s)}`);
    const unit = UNIT_NS[u[0]];
    if (unit === undefined)
      throw new EvalError(`time: unknown unit ${JSON.stringify(u[0])} in duration ${JSON.stringify(s)}`);
    i += u[0].length;
    const whole = BigInt(m[1] || '0') * BigInt(unit);
    let frac = 0n;
    if (m[2]) frac = BigInt(Math.floor(Number('0.' + m[2]) * unit));
    total += whole + frac;
  }
  return neg ? -total : total;
}

function clock(zone: string, layout: string, fsp: Value): string {
  const dt = new DateTime(Date.now(), zone, 0);
  let s = formatLayout(dt, goLayout(layout));
  if (fsp !== undefined && fsp !== null) {
    if (typeof fsp !== 'bigint' && !(typeof fsp === 'number' && Number.isInteger(fsp))) {
      throw new EvalError(`${'Expect int type for parameter 1'}, but got ${typedText(fsp)}`);
    }
    const n = Number(fsp);
    if (n > 0) {
      const frac = String(dt.ms % 1000).padStart(3, '0') + '000000';
      s += '.' + frac.slice(0, Math.min(n, 9));
    }
  }
  return s;
}

const fspValidate: Validator = all(between(0, 1), mustBe(0, INT, ['int']));

function part(name: string, get: (d: DateTime) => Value): FunctionDef {
  return scalar(name, 'none', dt1, (a) => get(toDateTime(a[0], defaultZone())));
}

function dateOnly(d: DateTime): string {
  return formatLayout(d, goLayout('2006-01-02'));
}

/** An integer argument (from_days, from_unix_time): ints, floats without fraction. */
function intOf(v: Value): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw new EvalError(`cannot convert ${typedText(v)} to int`);
}

export const datetimeFunctions: FunctionDef[] = [
  ...['now', 'current_timestamp', 'local_time', 'local_timestamp'].map((name) =>
    scalar(name, 'none', fspValidate, (a) => clock(defaultZone(), '2006-01-02 15:04:05', a[0])),
  ),
  ...['cur_date', 'current_date'].map((name) =>
    scalar(name, 'none', exactly(0), () => clock(hostZone(), '2006-01-02', undefined)),
  ),
  ...['cur_time', 'current_time'].map((name) =>
    scalar(name, 'none', between(0, 1), (a) => clock(defaultZone(), '15:04:05', a[0])),
  ),
  scalar('format_time', 'N', all(exactly(2), datetimeArg(0), rejects(1, STRING, [...NUM_LIT, ...BOOL_EXPR])), (a) => {
    const d = toDateTime(a[0], defaultZone());
    return formatLayout(d, ekuiperLayout(textOf(a[1])));
  }),
  scalar('date_calc', 'none', all(exactly(2), datetimeArg(0), mustBe(1, STRING, ['string'])), (a) => {
    const d = toDateTime(a[0], defaultZone());
    const dur = parseDuration(textOf(a[1]));
    return formatSqlDateTime(fromEpochNanos(epochNanos(d) + dur, d.zone));
  }),
  scalar('date_diff', 'none', all(exactly(2), datetimeArg(0), datetimeArg(1)), (a) => {
    const t1 = toDateTime(a[0], defaultZone());
    const t2 = toDateTime(a[1], defaultZone());
    return BigInt.asIntN(64, epochNanos(t2) - epochNanos(t1));
  }),
  part('day_name', (d) => DAY_NAMES[fieldsOf(d).weekday]),
  part('day_of_month', (d) => BigInt(fieldsOf(d).day)),
  part('day', (d) => BigInt(fieldsOf(d).day)),
  part('day_of_week', (d) => BigInt(fieldsOf(d).weekday)),
  part('day_of_year', (d) => BigInt(fieldsOf(d).yearDay)),
  part('hour', (d) => BigInt(fieldsOf(d).hour)),
  part('minute', (d) => BigInt(fieldsOf(d).minute)),
  part('second', (d) => BigInt(fieldsOf(d).second)),
  part('microsecond', (d) => BigInt(Math.floor(fieldsOf(d).nanos / 1000))),
  part('month', (d) => BigInt(fieldsOf(d).month)),
  part('month_name', (d) => MONTH_NAMES[fieldsOf(d).month - 1]),
  part('last_day', (d) => {
    const f = fieldsOf(d);
    return `${String(f.year).padStart(4, '0')}-${String(f.month).padStart(2, '0')}-${String(daysIn(f.year, f.month)).padStart(2, '0')}`;
  }),
  scalar('from_days', 'N', all(exactly(1), rejects(0, INT, NUM_LIT)), (a) => {
    const n = intOf(a[0]);
    if (n === 0) return null;
    return dateOnly(new DateTime((n - 1) * 86_400_000, 'UTC'));
  }),
  scalar('from_unix_time', 'N', all(exactly(1), rejects(0, INT, NUM_LIT)), (a) => {
    const n = intOf(a[0]);
    if (n === 0) return null;
    return formatSqlDateTime(new DateTime(n * 1000, defaultZone()));
  }),
  scalar(
    'convert_tz',
    'N',
    all(
      exactly(2),
      rejects(0, 'datetime', [...NUM_LIT, 'string', ...BOOL_EXPR, 'unit']),
      rejects(1, STRING, [...NUM_LIT, ...BOOL_EXPR]),
    ),
    (a) => {
      const d = toDateTime(a[0], defaultZone());
      if (typeof a[1] !== 'string') throw new EvalError(`unknown time zone ${textOf(a[1])}`);
      return inZone(d, checkZone(a[1]));
    },
  ),
  scalar('to_seconds', 'N', dt1, (a) => BigInt(Math.floor(toDateTime(a[0], defaultZone()).ms / 1000))),
];
