/**
 * Scanner for eKuiper's SQL dialect (docs/sql.md §1). Produces tokens on demand and never throws: malformed input
 * becomes a token the parser cannot accept, so the error names the position the parser reached, as the
 * reference does (`found "invalid string: \"\\d\"", expected expression.`).
 *
 * Reproduced scanner behaviour:
 * - after `-` whitespace is skipped before looking at the next character: `- -1` starts a line comment, `- >` is an
 *   arrow, and `-` [ws] `.` [ws] digits is one negative number token (`a - .5` is therefore `a` followed by the
 *   number `-.5`, a syntax error); after `/` whitespace is skipped too, so `/ *` opens a block comment;
 * - `! =`, `< =`, `> =` (inner whitespace) are the two-character operators; a lone `!` is scanned as `=`;
 *   `<>` is two tokens (`<`, `>`);
 * - a number is digits followed by any digits and dots (`1.2.3` is one token, rejected by the parser as
 *   "invalid number value"); `1e3` is the integer `1` followed by the identifier `e3`;
 * - keyword literals are reported upper-case, the end of input as `EOF`, and characters that start no token with
 *   an empty literal, the way the reference's messages show them.
 */
import { unquoteGo } from '../core/gostring.js';

export type TokenKind =
  /** plain identifier that is not a reserved keyword */
  | 'ident'
  /** backquoted identifier (never a keyword) */
  | 'qident'
  /** reserved keyword; `value` is upper-case */
  | 'keyword'
  | 'integer'
  /** digits with at least one dot; may be malformed (`1.2.3`) */
  | 'float'
  | 'string'
  /** unterminated string, or one with an invalid escape sequence */
  | 'badString'
  /** operator or punctuation; `value` is its canonical text (`!=` also for `! =`) */
  | 'op'
  | 'eof'
  /** a character that starts no token (`$`, `@`, `_`, non-ASCII …) or an unterminated block comment */
  | 'illegal';

export interface Token {
  readonly kind: TokenKind;
  /**
   * ident/qident: the name; keyword: upper-case word; string: the unescaped value; number: its text (with a
   * leading `-` for negative-number tokens); op: the operator; illegal: the offending character(s).
   */
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
  'SELECT',
  'AS',
  'FROM',
  'WHERE',
  'AND',
  'OR',
  'GROUP',
  'HAVING',
  'ORDER',
  'BY',
  'ASC',
  'DESC',
  'FILTER',
  'INNER',
  'LEFT',
  'RIGHT',
  'FULL',
  'CROSS',
  'JOIN',
  'ON',
  'CASE',
  'WHEN',
  'THEN',
  'ELSE',
  'END',
  'IN',
  'NOT',
  'BETWEEN',
  'LIKE',
  'OVER',
  'PARTITION',
  'REPLACE',
  'EXCEPT',
  'LIMIT',
  'TRUE',
  'FALSE',
  'DD',
  'HH',
  'MI',
  'SS',
  'MS',
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

export class Lexer {
  private pos = 0;
  private line = 1;
  private col = 1;

  constructor(private readonly src: string) {}

  /** Scans the next token (comments and whitespace skipped). */
  next(): Token {
    for (;;) {
      this.skipWs();
      if (this.pos >= this.src.length) return this.tok('eof', '', 'EOF', this.line, this.col, this.pos);
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
        if (n === '.') {
          // `-.5` / `- . 5` is one negative number; otherwise the dot is swallowed (as the reference does)
          this.advance();
          this.skipWs();
          if (isDigit(this.peekChar())) {
            const digits = this.scanDigitsAndDots();
            const text = '-.' + digits;
            return this.tok('float', text, text, line, column, start);
          }
        }
        return this.tok('op', '-', '-', line, column, start);
      }
      if (c === '/') {
        this.advance();
        this.skipWs();
        if (this.peekChar() === '*') {
          if (!this.skipBlockComment()) return this.tok('illegal', '/*', '', line, column, start);
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
        this.advance();
        if (isDigit(this.peekChar())) {
          const text = '.' + this.scanDigitsAndDots();
          return this.tok('float', text, text, line, column, start);
        }
        return this.tok('op', '.', '.', line, column, start);
      }
      if (isDigit(c)) {
        const text = this.scanDigitsAndDots();
        return this.tok(text.includes('.') ? 'float' : 'integer', text, text, line, column, start);
      }
      if (isLetter(c)) {
        while (this.pos < this.src.length) {
          const d = this.src[this.pos];
          if (isLetter(d) || isDigit(d) || d === '_') this.advance();
          else break;
        }
        const word = this.src.slice(start, this.pos);
        const upper = word.toUpperCase();
        if (KEYWORDS.has(upper)) return this.tok('keyword', upper, upper, line, column, start);
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
      return this.tok('illegal', ch, '', line, column, start);
    }
  }

  private tok(kind: TokenKind, value: string, lit: string, line: number, column: number, offset: number): Token {
    return { kind, value, lit, line, column, offset };
  }

  private peekChar(): string {
    return this.pos < this.src.length ? this.src[this.pos] : '';
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

  /** At the `*` of `/*` (or `/ *`); false when the comment is not terminated. */
  private skipBlockComment(): boolean {
    this.advance(); // '*'
    for (;;) {
      if (this.pos >= this.src.length) return false;
      if (this.src[this.pos] === '*' && this.pos + 1 < this.src.length && this.src[this.pos + 1] === '/') {
        this.advance(2);
        return true;
      }
      this.advance();
    }
  }

  private scanDigitsAndDots(): string {
    const from = this.pos;
    while (isDigit(this.peekChar()) || this.peekChar() === '.') this.advance();
    return this.src.slice(from, this.pos);
  }

  /**
   * A quoted string. The reference rewrites a single-quoted literal into double-quoted form (`"` inside becomes
   * `\"`, `\'` becomes `'`) and unescapes it with Go's rules; its error literals show that rewritten form.
   */
  private scanString(quote: '"' | "'", line: number, column: number, start: number): Token {
    this.advance(); // opening quote
    let body = ''; // the content in double-quoted form, escapes still in place
    for (;;) {
      if (this.pos >= this.src.length) {
        return this.tok('badString', body, '"' + body, line, column, start);
      }
      const c = this.src[this.pos];
      if (c === quote) {
        this.advance();
        break;
      }
      if (c === '\\') {
        const n = this.pos + 1 < this.src.length ? this.src[this.pos + 1] : '';
        if (n === "'" && quote === "'") {
          body += "'";
          this.advance(2);
        } else if (n === '') {
          body += '\\';
          this.advance();
        } else {
          body += '\\' + n;
          this.advance(2);
        }
        continue;
      }
      if (quote === "'" && c === '"') {
        body += '\\"';
        this.advance();
        continue;
      }
      // a run of plain characters is appended as one slice: a statement may carry megabytes of literal text
      let end = this.pos + 1;
      while (end < this.src.length) {
        const d = this.src[end];
        if (d === quote || d === '\\' || (quote === "'" && d === '"')) break;
        end++;
      }
      body += this.src.slice(this.pos, end);
      this.advance(end - this.pos);
    }
    const value = unquoteGo(body);
    if (value === null) {
      const lit = `invalid string: "${body}"`;
      return this.tok('badString', lit, lit, line, column, start);
    }
    return { kind: 'string', value, lit: value, line, column, offset: start, quote };
  }
}
