/** Readable output of the CLI: aligned tables, key/value lists and a progress bar on stderr. */

/** The text of a cell: strings as they are, everything else as JSON. */
export function cell(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : typeof v === 'bigint' ? v.toString() : JSON.stringify(v);
}

/** An aligned table with a header row and a rule under it. */
export function table(headers: string[], rows: unknown[][]): string {
  const texts = rows.map((r) => r.map(cell));
  const widths = headers.map((h, i) => Math.max(h.length, ...texts.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...texts.map(line)].join('\n');
}

/** `key  value` lines, keys aligned. */
export function keyValues(obj: Record<string, unknown>): string {
  const keys = Object.keys(obj);
  const w = Math.max(0, ...keys.map((k) => k.length));
  return keys.map((k) => `${k.padEnd(w)}  ${cell(obj[k])}`).join('\n');
}

/** A one-line progress bar redrawn in place on a terminal; on a pipe only the last state is printed. */
export class ProgressBar {
  private last = '';
  constructor(
    private readonly label: string,
    private readonly out: NodeJS.WriteStream = process.stderr,
  ) {}

  update(done: number, total: number, note = ''): void {
    const width = 30;
    const frac = total > 0 ? Math.min(1, done / total) : 0;
    const filled = Math.round(frac * width);
    this.last = `${this.label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}${note ? ` ${note}` : ''}`;
    if (this.out.isTTY) this.out.write(`\r${this.last}\x1b[K`);
  }

  finish(): void {
    if (this.last === '') return;
    this.out.write(this.out.isTTY ? '\n' : `${this.last}\n`);
  }
}

/** `sql` with a caret under `column` of `line` (1-based), for syntax errors. */
export function caretUnder(sql: string, line: number, column: number): string {
  const lines = sql.split('\n');
  const text = lines[Math.max(0, Math.min(lines.length - 1, line - 1))] ?? '';
  return `  ${text}\n  ${' '.repeat(Math.max(0, column - 1))}^`;
}
