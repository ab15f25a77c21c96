/**
 * The syntax error Go's `encoding/json` reports for a text that is not JSON, e.g.
 * `invalid character 'x' looking for beginning of value` or `unexpected end of JSON input`: eKuiper puts it into the
 * messages of bundle and ruleset imports. A small scanner with the states of Go's.
 */

/** Go's quoting of the offending character. */
function quoteChar(c: string): string {
  if (c === "'") return `'\\''`;
  if (c === '"') return `'"'`;
  const code = c.codePointAt(0) ?? 0;
  if (code < 0x20 || code === 0x7f) {
    const named: Record<string, string> = {
      '\n': '\\n',
      '\r': '\\r',
      '\t': '\\t',
      '\b': '\\b',
      '\f': '\\f',
      '\v': '\\v',
      '\x07': '\\a',
    };
    return `'${named[c] ?? `\\x${code.toString(16).padStart(2, '0')}`}'`;
  }
  return `'${c}'`;
}

class Syntax extends Error {}

const WS = new Set([' ', '\t', '\n', '\r']);

/** Undefined when `text` is valid JSON; otherwise Go's message for the first error. */
export function goJsonSyntaxError(text: string): string | undefined {
  return scan(text).error;
}

/**
 * What a stream decoder reads of `text`: the text of its first JSON value, or Go's message for why it has none
 * (`EOF` when empty, `unexpected EOF` when cut short); what follows the value is never looked at.
 */
export function firstJsonValue(text: string): { value: string } | { error: string } {
  const r = scan(text);
  if (r.error === undefined || r.error.endsWith('after top-level value')) return { value: r.head };
  if (text.trim() === '') return { error: 'EOF' };
  return { error: r.error === 'unexpected end of JSON input' ? 'unexpected EOF' : r.error };
}

function scan(text: string): { error?: string; head: string } {
  // indexed by UTF-16 unit (no copy of a body that may be megabytes); only error texts need whole code points
  const chars = text;
  let i = 0;
  const fail = (what: string): never => {
    if (i >= chars.length) throw new Syntax('unexpected end of JSON input');
    throw new Syntax(`invalid character ${quoteChar(String.fromCodePoint(chars.codePointAt(i) ?? 0))} ${what}`);
  };
  const skip = () => {
    while (i < chars.length && WS.has(chars[i])) i++;
  };
  const literal = (word: string) => {
    for (let k = 1; k < word.length; k++) {
      i++;
      if (chars[i] !== word[k]) fail(`in literal ${word} (expecting ${quoteChar(word[k])})`);
    }
    i++;
  };
  const digits = () => {
    while (i < chars.length && chars[i] >= '0' && chars[i] <= '9') i++;
  };
  const number = () => {
    if (chars[i] === '-') {
      i++;
      if (!(chars[i] >= '0' && chars[i] <= '9')) fail('in numeric literal');
    }
    if (chars[i] === '0') i++;
    else digits();
    if (chars[i] === '.') {
      i++;
      if (!(chars[i] >= '0' && chars[i] <= '9')) fail('after decimal point in numeric literal');
      digits();
    }
    if (chars[i] === 'e' || chars[i] === 'E') {
      i++;
      if (chars[i] === '+' || chars[i] === '-') i++;
      if (!(chars[i] >= '0' && chars[i] <= '9')) fail('in exponent of numeric literal');
      digits();
    }
  };
  const string = () => {
    i++;
    for (;;) {
      if (i >= chars.length) fail('');
      const c = chars[i];
      if (c === '"') {
        i++;
        return;
      }
      if (c < ' ') fail('in string literal');
      if (c === '\\') {
        i++;
        const e = chars[i];
        if (e === 'u') {
          for (let k = 0; k < 4; k++) {
            i++;
            if (!/[0-9a-fA-F]/.test(chars[i] ?? '')) fail('in \\u hexadecimal character escape');
          }
        } else if (!'"\\/bfnrt'.includes(e ?? 'x') || e === undefined) fail('in string escape code');
      }
      i++;
    }
  };
  const value = (): void => {
    skip();
    const c = chars[i];
    if (c === '{') {
      i++;
      skip();
      if (chars[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        skip();
        if (chars[i] !== '"') fail('looking for beginning of object key string');
        string();
        skip();
        if (chars[i] !== ':') fail('after object key');
        i++;
        value();
        skip();
        if (chars[i] === ',') {
          i++;
          continue;
        }
        if (chars[i] === '}') {
          i++;
          return;
        }
        fail('after object key:value pair');
      }
    }
    if (c === '[') {
      i++;
      skip();
      if (chars[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        skip();
        if (chars[i] === ',') {
          i++;
          continue;
        }
        if (chars[i] === ']') {
          i++;
          return;
        }
        fail('after array element');
      }
    }
    if (c === '"') return string();
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    fail('looking for beginning of value');
  };
  let head = '';
  try {
    value();
    head = chars.slice(0, i);
    skip();
    if (i < chars.length) fail('after top-level value');
    return { head };
  } catch (e) {
    if (e instanceof Syntax) return { error: e.message, head };
    // nesting deeper than the stack allows (Go stops at 10000 levels)
    if (e instanceof RangeError) return { error: 'exceeded max depth', head };
    throw e;
  }
}
