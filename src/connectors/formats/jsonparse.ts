/**
 * JSON text → values. `JSON.parse` is used whenever it is exact; a payload holding an integer literal of 16 or more
 * digits goes through a small exact parser so that bigint columns keep all 64 bits. Integers outside the float-safe
 * range come back as `bigint`; every other number is a JS number.
 */

import { TOO_DEEP_MESSAGE, jsonTooDeep } from '../../core/limits.js';

const LONG_DIGITS = /\d{16,}/;

export function parseJsonExact(text: string): unknown {
  // a message nested deeper than the limit is a decode error of that message, like any malformed one
  if (jsonTooDeep(text)) throw new SyntaxError(TOO_DEEP_MESSAGE);
  if (!LONG_DIGITS.test(text)) return JSON.parse(text);
  return new ExactParser(text).parseDocument();
}

class ExactParser {
  private i = 0;
  constructor(private readonly s: string) {}

  parseDocument(): unknown {
    this.ws();
    const v = this.value();
    this.ws();
    if (this.i < this.s.length) this.fail();
    return v;
  }

  private fail(): never {
    if (this.i >= this.s.length) throw new SyntaxError('Unexpected end of JSON input');
    throw new SyntaxError(`Unexpected token '${this.s[this.i]}' in JSON at position ${this.i}`);
  }

  private ws(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.i++;
      else break;
    }
  }

  private value(): unknown {
    const c = this.s[this.i];
    if (c === '{') return this.object();
    if (c === '[') return this.array();
    if (c === '"') return this.string();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    if (this.s.startsWith('true', this.i)) return ((this.i += 4), true);
    if (this.s.startsWith('false', this.i)) return ((this.i += 5), false);
    if (this.s.startsWith('null', this.i)) return ((this.i += 4), null);
    return this.fail();
  }

  private object(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.i++;
    this.ws();
    if (this.s[this.i] === '}') return (this.i++, out);
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.fail();
      const k = this.string();
      this.ws();
      if (this.s[this.i] !== ':') this.fail();
      this.i++;
      this.ws();
      out[k] = this.value();
      this.ws();
      const c = this.s[this.i++];
      if (c === '}') return out;
      if (c !== ',') {
        this.i--;
        this.fail();
      }
    }
  }

  private array(): unknown[] {
    const out: unknown[] = [];
    this.i++;
    this.ws();
    if (this.s[this.i] === ']') return (this.i++, out);
    for (;;) {
      this.ws();
      out.push(this.value());
      this.ws();
      const c = this.s[this.i++];
      if (c === ']') return out;
      if (c !== ',') {
        this.i--;
        this.fail();
      }
    }
  }

  private string(): string {
    const start = this.i;
    this.i++;
    const s = this.s;
    while (this.i < s.length) {
      const c = s[this.i];
      if (c === '"') {
        this.i++;
        return JSON.parse(s.slice(start, this.i)) as string;
      }
      this.i += c === '\\' ? 2 : 1;
    }
    return this.fail();
  }

  private number(): number | bigint {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.s.slice(this.i, this.i + 400));
    if (!m) return this.fail();
    this.i += m[0].length;
    if (m[2] === undefined && m[3] === undefined) {
      const n = Number(m[0]);
      if (Number.isSafeInteger(n)) return n;
      return BigInt(m[0]);
    }
    return Number(m[0]);
  }
}
