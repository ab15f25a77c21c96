/** Token stream with lookahead, shared by the DDL and SELECT parsers. */
import { quoteLit, SqlSyntaxError } from './errors.js';
import { Lexer, type Token } from './lexer.js';

/** The token's type name as eKuiper prints a token (not its literal) in a few messages. */
export function tokenName(t: Token): string {
  switch (t.kind) {
    case 'op':
    case 'keyword':
      return t.value;
    case 'ident':
    case 'qident':
      return 'IDENT';
    case 'integer':
      return 'INTEGER';
    case 'float':
      return 'NUMBER';
    case 'string':
      return 'STRING';
    case 'badString':
      return 'BADSTRING';
    case 'eof':
      return 'EOF';
    case 'illegal':
      return 'ILLEGAL';
  }
}

export class Cursor {
  private readonly lexer: Lexer;
  private readonly buf: Token[] = [];

  constructor(src: string) {
    this.lexer = new Lexer(src);
  }

  peek(n = 0): Token {
    while (this.buf.length <= n) this.buf.push(this.lexer.next());
    return this.buf[n];
  }

  next(): Token {
    const t = this.peek();
    this.buf.shift();
    return t;
  }

  isOp(op: string, n = 0): boolean {
    const t = this.peek(n);
    return t.kind === 'op' && t.value === op;
  }

  isKeyword(kw: string, n = 0): boolean {
    const t = this.peek(n);
    return t.kind === 'keyword' && t.value === kw;
  }

  /** Consumes the operator if it is next. */
  acceptOp(op: string): boolean {
    if (!this.isOp(op)) return false;
    this.next();
    return true;
  }

  acceptKeyword(kw: string): boolean {
    if (!this.isKeyword(kw)) return false;
    this.next();
    return true;
  }

  /** Throws eKuiper's `found "<lit>", <what>` error at token `t`. */
  fail(t: Token, what: string): never {
    throw new SqlSyntaxError(`found ${quoteLit(t.lit)}, ${what}`, t.line, t.column);
  }

  /** Throws `message` as is, positioned at token `t`. */
  failAt(t: Token, message: string): never {
    throw new SqlSyntaxError(message, t.line, t.column);
  }

  expectOp(op: string, what: string): Token {
    const t = this.next();
    if (t.kind !== 'op' || t.value !== op) this.fail(t, what);
    return t;
  }

  /** An identifier, plain or backquoted. */
  expectIdent(what: string): Token {
    const t = this.next();
    if (t.kind !== 'ident' && t.kind !== 'qident') this.fail(t, what);
    return t;
  }
}
