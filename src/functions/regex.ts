/**
 * SQL regular expressions on RE2 (re2js, a port of the engine Go's `regexp` follows, as eKuiper uses): linear-time
 * matching whatever the pattern and input, RE2 syntax and semantics, and Go's error texts for the patterns RE2 refuses
 * (`error parsing regexp: invalid or unsupported Perl syntax: `(?=``). Patterns are compiled once and cached, so a
 * constant pattern is compiled once per process and a dynamic one once per distinct value.
 */
import { RE2JS } from 're2js';
import { EvalError } from '../values/index.js';

const cache = new Map<string, RE2JS>();
const MAX_CACHED = 10_000;

/** The compiled pattern (cached); throws an EvalError with Go's `error parsing regexp: …` text when RE2 refuses it. */
export function compileRegex(re: string): RE2JS {
  let r = cache.get(re);
  if (r) return r;
  try {
    r = RE2JS.compile(re);
  } catch (e) {
    const text = (e as Error).message;
    throw new EvalError(text.startsWith('error parsing regexp') ? text : `error parsing regexp: ${text}`);
  }
  if (cache.size >= MAX_CACHED) cache.clear();
  cache.set(re, r);
  return r;
}

/** Go's `MatchString`: a match anywhere in `s`. */
export function regexTest(s: string, re: string): boolean {
  return compileRegex(re).test(s);
}

/** Go's `FindString`: the leftmost match, `""` when none. */
export function regexFirst(s: string, re: string): string {
  return compileRegex(re).exec(s)?.[0] ?? '';
}

/** Go's `Regexp.Expand` template: `$1`, `${1}`, `$name`, `${name}`, `$$`; unknown groups expand to nothing. */
function expand(
  template: string,
  groups: (string | undefined)[],
  named: Record<string, string | undefined> | undefined,
): string {
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c !== '$' || i + 1 >= template.length) {
      out += c;
      continue;
    }
    const n = template[i + 1];
    if (n === '$') {
      out += '$';
      i++;
      continue;
    }
    let name: string;
    let end: number;
    if (n === '{') {
      const close = template.indexOf('}', i + 2);
      if (close < 0 || !/^\w+$/.test(template.slice(i + 2, close))) {
        out += c;
        continue;
      }
      name = template.slice(i + 2, close);
      end = close;
    } else {
      const m = /^\w+/.exec(template.slice(i + 1));
      if (!m) {
        out += c;
        continue;
      }
      name = m[0];
      end = i + name.length;
    }
    if (/^\d+$/.test(name)) out += groups[Number(name)] ?? '';
    else out += named?.[name] ?? '';
    i = end;
  }
  return out;
}

/**
 * The successive matches Go's `FindAll…` and `ReplaceAll…` use: an empty match right after the previous match is
 * skipped (`a*` in `baaac` matches at 0, 1 and 5, where JavaScript also matches at 4).
 */
export function* goMatches(r: RE2JS, s: string): Generator<RegExpMatchArray> {
  let lastMatchEnd = 0;
  for (const m of r.matchAll(s)) {
    const start = m.index ?? 0;
    const end = start + m[0].length;
    if (!(end > lastMatchEnd || start === 0)) continue;
    lastMatchEnd = end;
    yield m;
  }
}

/**
 * Go's `ReplaceAllString`: every match replaced by `repl` with `$1`/`${name}` expanded (`ReplaceAllLiteralString`
 * when `literal`); as in Go, an empty match right after the previous match is not replaced (`a*` in `baaac` gives
 * `-b-c-`, where JavaScript gives `-b--c-`).
 */
export function regexReplace(s: string, re: string, repl: string, literal = !repl.includes('$')): string {
  const r = compileRegex(re);
  let out = '';
  let copied = 0;
  for (const m of goMatches(r, s)) {
    const start = m.index ?? 0;
    out += s.slice(copied, start);
    out += literal
      ? repl
      : expand(
          repl,
          m as unknown as (string | undefined)[],
          m.groups as Record<string, string | undefined> | undefined,
        );
    copied = start + m[0].length;
  }
  return out + s.slice(copied);
}
