/**
 * Go RE2 patterns run as JS regular expressions. The syntaxes agree on everything users write in practice;
 * RE2-only spellings are rewritten (`(?P<name>…)` named groups, `\z`, `(?i)`-style leading flags) and patterns
 * are compiled once and cached.
 */
import { EvalError } from '../values/index.js';

const cache = new Map<string, RegExp>();

function translate(re: string): { src: string; flags: string } {
  let src = re;
  let flags = '';
  const m = /^\(\?([imsU]+)\)/.exec(src);
  if (m) {
    src = src.slice(m[0].length);
    for (const f of m[1]) if (f !== 'U' && !flags.includes(f)) flags += f;
  }
  src = src.replace(/\(\?P</g, '(?<').replace(/\\z/g, '$(?![\\s\\S])').replace(/\\A/g, '^');
  return { src, flags };
}

/** A compiled global RE2-style pattern; throws `error parsing regexp: …` when invalid. */
export function compileRegex(re: string): RegExp {
  let r = cache.get(re);
  if (r) return r;
  const { src, flags } = translate(re);
  try {
    r = new RegExp(src, 'gu' + flags);
  } catch {
    try {
      r = new RegExp(src, 'g' + flags);
    } catch (e) {
      throw new EvalError(`error parsing regexp: ${(e as Error).message}`);
    }
  }
  if (cache.size > 10_000) cache.clear();
  cache.set(re, r);
  return r;
}

export function regexTest(s: string, re: string): boolean {
  const r = compileRegex(re);
  r.lastIndex = 0;
  const ok = r.test(s);
  r.lastIndex = 0;
  return ok;
}

export function regexFirst(s: string, re: string): string {
  const r = compileRegex(re);
  r.lastIndex = 0;
  const m = r.exec(s);
  r.lastIndex = 0;
  return m ? m[0] : '';
}

/** Go's `Regexp.Expand` template: `$1`, `${1}`, `$name`, `${name}`, `$$`; unknown groups expand to nothing. */
function expand(template: string, groups: (string | undefined)[], named: Record<string, string | undefined> | undefined): string {
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

export function regexReplace(s: string, re: string, repl: string): string {
  const r = compileRegex(re);
  r.lastIndex = 0;
  const literal = !repl.includes('$');
  const out = s.replace(r, (...m: unknown[]) => {
    if (literal) return repl;
    const last = m[m.length - 1];
    const named = typeof last === 'object' && last !== null ? (last as Record<string, string | undefined>) : undefined;
    const groupEnd = named ? m.length - 3 : m.length - 2;
    return expand(repl, m.slice(0, groupEnd) as (string | undefined)[], named);
  });
  r.lastIndex = 0;
  return out;
}
