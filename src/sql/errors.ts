/**
 * The one error type of the SQL front end. `message` is eKuiper's parser text (what REST clients see, e.g.
 * `found "-", expected expression.`); `line`/`column` (1-based) say where the offending token starts.
 */
export class SqlSyntaxError extends Error {
  readonly line: number;
  readonly column: number;

  constructor(message: string, line: number, column: number) {
    super(message);
    this.name = 'SqlSyntaxError';
    this.line = line;
    this.column = column;
  }
}

/**
 * Thrown by `parseDdl` when the text is not a stream/table statement at all (a SELECT, an empty text, …).
 * eKuiper answers these with `Invalid stream statement: <sql>`.
 */
export class NotDdlStatementError extends SqlSyntaxError {
  constructor(sql: string) {
    super(`Invalid stream statement: ${sql}`, 1, 1);
    this.name = 'NotDdlStatementError';
  }
}

/** Go's `%q` rendering of a token literal, as eKuiper's messages show it (`found "X", …`). */
export function quoteLit(lit: string): string {
  return quoteString(lit, (cp) => `\\x${cp.toString(16).padStart(2, '0')}`);
}

/** A double-quoted literal with `"`, `\\` and the common control characters escaped; others through `control`. */
export function quoteString(text: string, control: (codePoint: number) => string): string {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (cp < 0x20 || cp === 0x7f) out += control(cp);
    else out += ch;
  }
  return out + '"';
}
