/** String functions (docs/sql.md §7.2). Positions and lengths marked "bytes" are UTF-8 byte offsets. */
import { EvalError, textOf, typedText, utf8Bytes, utf8Text, type Value } from '../values/index.js';
import type { FunctionDef } from './registry.js';
import { scalar } from './define.js';
import { regexFirst, regexReplace, regexTest } from './regex.js';
import { all, atLeast, each, exactly, intArg, mustBe, STRING, stringArg, type Validator } from './validate.js';

const str1: Validator = all(exactly(1), stringArg(0));
const str2: Validator = all(exactly(2), stringArg(0), stringArg(1));

/** Go's unicode.IsSpace set. */
const SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]';
const LTRIM = new RegExp(`^${SPACE}+`, 'u');
const RTRIM = new RegExp(`${SPACE}+$`, 'u');

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) i++;
    n++;
  }
  return n;
}

/** A count argument (lpad/rpad/split_value…): an int, or a float without fraction. */
function intArgValue(v: Value): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw new EvalError(`cannot convert ${typedText(v)} to int`);
}

/** Byte-offset substring of a UTF-8 string. */
function byteSlice(s: string, start: number, end: number | undefined): string {
  if (isAscii(s)) {
    if (start > s.length) return '';
    return s.slice(start, end === undefined ? undefined : Math.min(end, s.length));
  }
  const b = utf8Bytes(s);
  if (start > b.length) return '';
  return utf8Text(b.subarray(start, end === undefined ? b.length : Math.min(end, b.length)));
}

/**
 * Locales where the CLDR data of the reference's formatter differs from the platform's (checked against the
 * reference's locale table): Arabic (India) writes Arabic-Indic digits, Norwegian `no` is unknown there and
 * falls back to the root symbols (those of en), Romansh (Switzerland) uses the Swiss German symbols.
 */
const LOCALE_QUIRKS: Record<string, { as?: string; numbering?: string }> = {
  'ar-in': { numbering: 'arab' },
  'no-no': { as: 'en-US' },
  'rm-ch': { as: 'de-CH' },
};

const formatters = new Map<string, Intl.NumberFormat>();

/** One formatter per (locale, decimals): building an Intl.NumberFormat costs far more than using one. */
function formatter(locale: string | undefined, d: number): Intl.NumberFormat {
  const key = `${locale ?? ''}|${d}`;
  let f = formatters.get(key);
  if (f) return f;
  if (locale === undefined) {
    f = new Intl.NumberFormat('en-US', { minimumFractionDigits: d, maximumFractionDigits: d, useGrouping: false });
  } else {
    const m = /^([a-zA-Z]{2,3})[_-]([a-zA-Z]{2}|\d{3})$/.exec(locale);
    if (!m || Intl.NumberFormat.supportedLocalesOf([`${m[1]}-${m[2]}`]).length === 0) {
      throw new EvalError(`not support for the specific locale:${locale}`);
    }
    const tag = `${m[1]}-${m[2]}`;
    const quirk = LOCALE_QUIRKS[tag.toLowerCase()];
    f = new Intl.NumberFormat(quirk?.as ?? tag, {
      minimumFractionDigits: d,
      maximumFractionDigits: d,
      numberingSystem: quirk?.numbering ?? 'latn',
    });
  }
  if (formatters.size > 256) formatters.clear();
  formatters.set(key, f);
  return f;
}

/** Format with locale (docs/sql.md §7.2 `format`). Locales are `lang_REGION`. */
function formatNumber(x: number, d: number, locale: string | undefined): string {
  if (d < 0) throw new EvalError('the decimal places must greater or equal than 0');
  if (d > 100) throw new EvalError('the decimal places must be at most 100');
  const s = formatter(locale, d).format(x);
  if (locale === undefined) return s;
  // Normalise to the symbols of the CLDR data the reference ships (no-break space, right single quote).
  return s
    .replace(/\u202f/g, '\u00a0')
    .replace(/'/g, '\u2019')
    .replace(/\u2212/g, '-');
}

function numberOf(v: Value): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  throw new EvalError(`cannot convert ${typedText(v)} to float64`);
}

export const stringFunctions: FunctionDef[] = [
  scalar(
    'concat',
    'none',
    all((a) => (a.length === 0 ? 'The arguments should be at least one.' : undefined), each(0, stringArg)),
    (a) => {
      let s = '';
      for (let i = 0; i < a.length; i++) s += textOf(a[i]);
      return s;
    },
  ),
  scalar('endswith', 'F', str2, (a) => textOf(a[0]).endsWith(textOf(a[1]))),
  scalar('startswith', 'F', str2, (a) => textOf(a[0]).startsWith(textOf(a[1]))),
  scalar('indexof', 'none', str2, (a) => {
    if (a[0] === null || a[0] === undefined || a[1] === null || a[1] === undefined) return -1n;
    const s = textOf(a[0]);
    const i = s.indexOf(textOf(a[1]));
    if (i <= 0) return BigInt(i);
    return BigInt(utf8Length(s.slice(0, i)));
  }),
  scalar('length', 'Z', exactly(1), (a) => {
    const v = a[0];
    if (typeof v === 'string') return BigInt(codePoints(v));
    if (Array.isArray(v)) return BigInt(v.length);
    if (
      v !== null &&
      typeof v === 'object' &&
      !(v instanceof Uint8Array) &&
      Object.getPrototypeOf(v) === Object.prototype
    ) {
      return BigInt(Object.keys(v).length);
    }
    return BigInt(codePoints(textOf(v)));
  }),
  scalar('numbytes', 'Z', str1, (a) => BigInt(utf8Length(textOf(a[0])))),
  scalar('lower', 'N', str1, (a) => textOf(a[0]).toLowerCase()),
  scalar('upper', 'N', str1, (a) => textOf(a[0]).toUpperCase()),
  scalar('trim', 'N', str1, (a) => textOf(a[0]).replace(LTRIM, '').replace(RTRIM, '')),
  scalar('ltrim', 'N', str1, (a) => textOf(a[0]).replace(LTRIM, '')),
  scalar('rtrim', 'N', str1, (a) => textOf(a[0]).replace(RTRIM, '')),
  scalar(
    'lpad',
    'N',
    all(exactly(2), stringArg(0), intArg(1)),
    (a) => ' '.repeat(Math.max(0, intArgValue(a[1]))) + textOf(a[0]),
  ),
  scalar(
    'rpad',
    'N',
    all(exactly(2), stringArg(0), intArg(1)),
    (a) => textOf(a[0]) + ' '.repeat(Math.max(0, intArgValue(a[1]))),
  ),
  scalar(
    'substring',
    'N',
    all(
      (a) => (a.length === 2 || a.length === 3 ? undefined : 'the arguments for substring should be 2 or 3'),
      stringArg(0),
      intArg(1),
      intArg(2),
      (a) => {
        const s = a[1].kind === 'int' ? (a[1].literal as bigint) : undefined;
        if (s !== undefined && s < 0n) return 'The start index should not be a nagtive integer.';
        const e = a.length === 3 && a[2].kind === 'int' ? (a[2].literal as bigint) : undefined;
        if (s !== undefined && e !== undefined && e < s) return 'The end index should be larger than start index.';
        return undefined;
      },
    ),
    (a) => {
      const s = textOf(a[0]);
      const start = intArgValue(a[1]);
      if (start < 0) throw new EvalError('start index must be a positive number');
      const end = a.length > 2 ? intArgValue(a[2]) : undefined;
      if (end !== undefined) {
        if (end < 0) throw new EvalError('end index must be a positive number');
        if (start > end) throw new EvalError('start index must be smaller than end index');
      }
      return byteSlice(s, start, end);
    },
  ),
  scalar(
    'split_value',
    'N',
    all(
      (a) => (a.length === 3 ? undefined : 'the arguments for split_value should be 3'),
      stringArg(0),
      stringArg(1),
      intArg(2),
      (a) =>
        a[2].kind === 'int' && (a[2].literal as bigint) < 0n ? 'The index should not be a nagtive integer.' : undefined,
    ),
    (a) => {
      const parts = textOf(a[0]).split(textOf(a[1]));
      // The reference ignores a non-integer index and reads part 0.
      const iv = a[2];
      let i = typeof iv === 'bigint' ? Number(iv) : typeof iv === 'number' && Number.isInteger(iv) ? iv : 0;
      const orig = i;
      if (i < 0) i += parts.length;
      if (i < 0 || i >= parts.length) throw new EvalError(`${orig} out of index array (size = ${parts.length})`);
      return parts[i];
    },
  ),
  scalar('regexp_matches', 'F', exactly(2), (a) => regexTest(textOf(a[0]), textOf(a[1]))),
  scalar('regexp_replace', 'N', all(exactly(3), each(0, stringArg)), (a) =>
    regexReplace(textOf(a[0]), textOf(a[1]), textOf(a[2])),
  ),
  scalar('regexp_substr', 'N', exactly(2), (a) => regexFirst(textOf(a[0]), textOf(a[1]))),
  scalar('format', 'N', all(atLeast(2), mustBe(1, 'integer', ['int']), mustBe(2, STRING, ['string'])), (a) =>
    formatNumber(numberOf(a[0]), intArgValue(a[1]), a.length > 2 ? textOf(a[2]) : undefined),
  ),
];
