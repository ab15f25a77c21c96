/**
 * Scanner for eKuiper's SQL dialect (sql.md §1). Produces tokens on demand, so a lexical error is only reported
 * when the parser actually reaches it (as the reference does).
 *
 * Reproduced quirks:
 * - after `-` whitespace is skipped before looking at the next character, so `- -1` and `- >` are a line comment
 *   and an arrow; after `/` whitespace is skipped too, so `/ *` opens a block comment;
 * - `! =`, `< =`, `> =` (inner whitespace) are the two-character operators; a lone `!` is scanned as `=`;
 * - `<>` is two tokens (`<`, `>`);
 * - `1.2.3` is one malformed number; `1e3` is the integer `1` followed by the identifier `e3`.
 */
import { quoteLit, SqlSyntaxError } from './errors.js';

export type TokenKind =
  /** plain identifier that is not a reserved keyword */
  | 'ident'
  /** backquoted identifier (never a keyword) */
  | 'qident'
  /** reserved keyword; `value` is upper-case */
  | 'keyword'
  | 'integer'
  | 'float'
  | 'string'
  /** operator or punctuation; `value` is its canonical text (`!=` also for `! =`) */
  | 'op'
  | 'eof'
  /** a character that starts no token (`$`, `@`, `_x`, non-ASCII …) */
  | 'illegal';

export interface Token {
  readonly kind: TokenKind;
  /** ident/qident: the name; keyword: upper-case word; string: the unescaped value; number: its text; op: the op */
  readonly value: string;
  /** the literal as eKuiper's messages quote it */
  readonly lit: string;
  readonly line: number;
  readonly column: number;
  /** offset of the first character in the source text */
  readonly offset: number;
  /** string tokens: the quote character used */
  readonly quote?: '"' | "'";
}

export const KEYWORDS: ReadonlySet<string> = new Set([
  'SELECT', 'AS', 'FROM', 'WHERE', 'AND', 'OR', 'GROUP', 'HAVING', 'ORDER', 'BY', 'ASC', 'DESC', 'FILTER',
  'INNER', 'LEFT', 'RIGHT', 'FULL', 'CROSS', 'JOIN', 'ON', 'CASE', 'WHEN', 'THEN', 'ELSE', 'END',
  'IN', 'NOT', 'BETWEEN', 'LIKE', 'OVER', 'PARTITION', 'REPLACE', 'EXCEPT', 'LIMIT',
  'TRUE', 'FALSE', 'DD', 'HH', 'MI', 'SS', 'MS',
]);

const SINGLE_CHAR_OPS = new Set(['*', '+', '%', '&', '|', '^', '=', '[', ']', ':', '(', ')', ',', ';', '#']);

function isWs(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}
function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}
function isLetter(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
function isHex(c: string): boolean {
  return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

export class Lexer {
  private pos = 0;
  private line = 1;
  private col = 1;

  constructor(private readonly src: string) {}

  /** Scans the next token; throws SqlSyntaxError for malformed strings, numbers and unterminated comments. */
  next(): Token {
    for (;;) {
      this.skipWs();
      if (this.pos >= this.src.length) return this.tok('eof', '', '', this.line, this.col, this.pos);
      const line = this.line;
      const column = this.col;
      const start = this.pos;
      const c = this.src[this.pos];

      if (c === '-') {
        this.advance();
        this.skipWs();
        const n = this.peekChar();
        if (n === '-') {
          this.skipLineComment();
          continue;
        }
        if (n === '>') {
          this.advance();
          return this.tok('op', '->', '->', line, column, start);
        }
        return this.tok('op', '-', '-', line, column, start);
      }
      if (c === '/') {
        this.advance();
        this.skipWs();
        if (this.peekChar() === '*') {
          this.skipBlockComment(line, column);
          continue;
        }
        return this.tok('op', '/', '/', line, column, start);
      }
      if (c === '!' || c === '<' || c === '>') {
        this.advance();
        this.skipWs();
        if (this.peekChar() === '=') {
          this.advance();
          const op = c + '=';
          return this.tok('op', op, op, line, column, start);
        }
        const op = c === '!' ? '=' : c;
        return this.tok('op', op, op, line, column, start);
      }
      if (c === '.') {
        if (isDigit(this.charAt(this.pos + 1))) return this.scanNumber(line, column, start);
        this.advance();
        return this.tok('op', '.', '.', line, column, start);
      }
      if (isDigit(c)) return this.scanNumber(line, column, start);
      if (isLetter(c)) {
        while (this.pos < this.src.length) {
          const d = this.src[this.pos];
          if (isLetter(d) || isDigit(d) || d === '_') this.advance();
          else break;
        }
        const word = this.src.slice(start, this.pos);
        const upper = word.toUpperCase();
        if (KEYWORDS.has(upper)) return this.tok('keyword', upper, word, line, column, start);
        return this.tok('ident', word, word, line, column, start);
      }
      if (c === '`') {
        this.advance();
        const from = this.pos;
        while (this.pos < this.src.length && this.src[this.pos] !== '`') this.advance();
        const name = this.src.slice(from, this.pos);
        if (this.pos < this.src.length) this.advance(); // closing backquote; unterminated runs to end of input
        return this.tok('qident', name, name, line, column, start);
      }
      if (c === '"' || c === "'") return this.scanString(c, line, column, start);
      if (SINGLE_CHAR_OPS.has(c)) {
        this.advance();
        return this.tok('op', c, c, line, column, start);
      }
      const cp = this.src.codePointAt(this.pos) ?? 0;
      const ch = String.fromCodePoint(cp);
      this.advance(ch.length);
      return this.tok('illegal', ch, ch, line, column, start);
    }
  }

  private tok(kind: TokenKind, value: string, lit: string, line: number, column: number, offset: number): Token {
    return { kind, value, lit, line, column, offset };
  }

  private charAt(i: number): string {
    return i < this.src.length ? this.src[i] : '';
  }
  private peekChar(): string {
    return this.charAt(this.pos);
  }

  private advance(n = 1): void {
    for (let i = 0; i < n && this.pos < this.src.length; i++) {
      if (this.src[this.pos] === '\n') {
        this.line++;
        this.col = 1;
      } else {
        this.col++;
      }
      this.pos++;
    }
  }

  private skipWs(): void {
    while (this.pos < this.src.length && isWs(this.src[this.pos])) this.advance();
  }

  private skipLineComment(): void {
    while (this.pos < this.src.length && this.src[this.pos] !== '\n') this.advance();
  }

  /** At the `*` of `/*` (or `/ *`). */
  private skipBlockComment(line: number, column: number): void {
    this.advance(); // '*'
    for (;;) {
      if (this.pos >= this.src.length) throw new SqlSyntaxError('found "/*", unterminated block comment.', line, column);
      if (this.src[this.pos] === '*' && this.charAt(this.pos + 1) === '/') {
        this.advance(2);
        return;
      }
      this.advance();
    }
  }

  private scanNumber(line: number, column: number, start: number): Token {
    while (isDigit(this.peekChar())) this.advance();
    let isFloat = false;
    if (this.peekChar() === '.') {
      isFloat = true;
      this.advance();
      while (isDigit(this.peekChar())) this.advance();
      if (this.peekChar() === '.') {
        while (isDigit(this.peekChar()) || this.peekChar() === '.') this.advance();
        const text = this.src.slice(start, this.pos);
        throw new SqlSyntaxError(`found ${quoteLit(text)}, invalid number value.`, line, column);
      }
    }
    const text = this.src.slice(start, this.pos);
    return this.tok(isFloat ? 'float' : 'integer', text, text, line, column, start);
  }

  private scanString(quote: '"' | "'", line: number, column: number, start: number): Token {
    this.advance(); // opening quote
    let out = '';
    const bad = (): never => {
      // name the whole offending literal: scan on to its closing quote (or the end of the text)
      let end = this.pos;
      while (end < this.src.length && this.src[end] !== quote) end += this.src[end] === '\\' ? 2 : 1;
      const text = this.src.slice(start, Math.min(end + 1, this.src.length));
      throw new SqlSyntaxError(`found ${quoteLit(text)}, invalid string.`, line, column);
    };
    for (;;) {
      if (this.pos >= this.src.length) bad();
      const c = this.src[this.pos];
      if (c === quote) {
        this.advance();
        return { kind: 'string', value: out, lit: out, line, column, offset: start, quote };
      }
      if (c !== '\\') {
        const cp = this.src.codePointAt(this.pos) ?? 0;
        const ch = String.fromCodePoint(cp);
        out += ch;
        this.advance(ch.length);
        continue;
      }
      this.advance(); // backslash
      if (this.pos >= this.src.length) bad();
      const e = this.src[this.pos];
      this.advance();
      switch (e) {
        case 'a': out += '\x07'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '"': out += '"'; break;
        case "'":
          if (quote !== "'") bad();
          out += "'";
          break;
        case 'x':
        case 'u':
        case 'U': {
          const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
          const hex = this.src.slice(this.pos, this.pos + n);
          if (hex.length !== n || ![...hex].every(isHex)) bad();
          this.advance(n);
          const cp = parseInt(hex, 16);
          if (e !== 'x' && (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) bad();
          out += String.fromCodePoint(cp);
          break;
        }
        default: {
          if (e >= '0' && e <= '7') {
            const oct = e + this.src.slice(this.pos, this.pos + 2);
            if (oct.length !== 3 || ![...oct].every((d) => d >= '0' && d <= '7')) bad();
            const v = parseInt(oct, 8);
            if (v > 255) bad();
            this.advance(2);
            out += String.fromCharCode(v);
            break;
          }
          bad();
        }
      }
    }
  }
}
