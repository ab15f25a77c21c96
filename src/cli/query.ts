/**
 * `eddy query`: an interactive SQL shell (eKuiper's `kuiper query`). Each `SELECT` runs as a temporary query of the
 * server (`POST /eddy/queries`, never stored) whose rows come over a websocket endpoint of its data server; the shell
 * connects to it and prints the rows as they arrive, above the prompt and the line being typed. The server removes the
 * query when the shell disconnects — the next query, Ctrl-C, exit, or the shell being killed. Syntax errors are shown
 * with a caret under the offending token (`POST /eddy/sql/check`).
 */
import { clearLine, createInterface, cursorTo, type Interface } from 'node:readline';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { CliError, errorText, ExitCode, type RestClient } from './client.js';
import { caretUnder, cell } from './format.js';

const HISTORY_FILE = join(homedir(), '.eddy_history');
const HISTORY_SIZE = 500;

interface Running {
  id: string;
  ws?: WebSocket;
  closed: boolean;
}

export class QueryShell {
  private running: Running | undefined;
  private columns: string[] | undefined;

  constructor(
    private readonly client: RestClient,
    private readonly json: boolean,
    private readonly out: (text: string) => void = (t) => process.stdout.write(`${t}\n`),
    private readonly err: (text: string) => void = (t) => process.stderr.write(`${t}\n`),
  ) {}

  /** Runs one line of input: a SELECT, `exit`/`quit`, or `help`. Returns false when the shell should end. */
  async line(input: string): Promise<boolean> {
    const sql = input.trim().replace(/;\s*$/, '');
    if (sql === '') return true;
    const word = sql.split(/\s+/)[0].toLowerCase();
    if (word === 'exit' || word === 'quit') return false;
    if (word === 'help') {
      this.out(
        'Type a SELECT statement; its rows are printed as they arrive. Ctrl-C stops it or clears the line; ' +
          'Ctrl-C on an empty line twice, exit or Ctrl-D quits.',
      );
      return true;
    }
    await this.stop();
    if (word !== 'select') {
      this.err('only SELECT statements run here; use `eddy create stream …` and friends for the rest');
      return true;
    }
    const check = (await this.client.call('POST', '/eddy/sql/check', { sql })).body as {
      ok: boolean;
      message?: string;
      line?: number;
      column?: number;
    };
    if (!check.ok) {
      this.err(
        `syntax error at line ${check.line}, column ${check.column}: ${check.message}\n${caretUnder(sql, check.line ?? 1, check.column ?? 1)}`,
      );
      return true;
    }
    const ans = await this.client.send('POST', '/eddy/queries', { sql });
    if (ans.status === 401) throw new CliError('unauthorized (set EDDY_TOKEN)', ExitCode.Unauthorized);
    if (ans.status >= 400) {
      this.err(`error: ${errorText(ans)}`);
      return true;
    }
    const q = ans.body as { id: string; path: string; port: number };
    const run: Running = { id: q.id, closed: false };
    this.running = run;
    this.columns = undefined;
    await this.connect(run, q.path, q.port);
    if (!run.closed) this.err(`(query ${q.id} running; Ctrl-C stops it)`);
    return true;
  }

  /** The URL of `path` on the server's data server. */
  private url(path: string, port: number): string {
    const host = this.client.host === '0.0.0.0' ? '127.0.0.1' : this.client.host;
    return `ws://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
  }

  /** Connects to the query's endpoint (open as soon as the query was created), retrying briefly. */
  private async connect(run: Running, path: string, port: number): Promise<void> {
    const deadline = Date.now() + 15_000;
    const url = this.url(path, port);
    while (!run.closed) {
      const ok = await new Promise<boolean>((resolve) => {
        const ws = new WebSocket(url, { headers: this.client.authHeaders() });
        ws.once('open', () => {
          run.ws = ws;
          ws.on('message', (data) => this.row(data.toString()));
          ws.on('close', () => this.ended(run));
          resolve(true);
        });
        ws.once('error', () => resolve(false));
      });
      if (ok) return;
      if (Date.now() > deadline) {
        this.err(`cannot read the rows at ${url}`);
        await this.stop();
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The server closed the query's endpoint: the query failed, or its sources ended. */
  private ended(run: Running): void {
    if (run.closed || this.running !== run) return;
    this.running = undefined;
    run.closed = true;
    this.err('(the query ended)');
  }

  private row(text: string): void {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      this.out(text);
      return;
    }
    for (const r of Array.isArray(v) ? v : [v]) {
      if (this.json || !r || typeof r !== 'object') {
        this.out(JSON.stringify(r));
        continue;
      }
      const rec = r as Record<string, unknown>;
      const keys = Object.keys(rec);
      if (keys.length === 1 && keys[0] === 'error') {
        this.err(`(${String(rec.error)})`);
        continue;
      }
      if (!this.columns) {
        this.columns = keys;
        this.out(
          this.columns
            .map((c) => c.padEnd(12))
            .join(' ')
            .trimEnd(),
        );
      }
      const extra = keys.filter((k) => !this.columns!.includes(k));
      this.out(
        [...this.columns.map((c) => cell(rec[c]).padEnd(12)), ...extra.map((k) => `${k}=${cell(rec[k])}`)]
          .join(' ')
          .trimEnd(),
      );
    }
  }

  /** Stops the running query: its reader goes, and the server removes it (asked too, in case the socket lingers). */
  async stop(): Promise<void> {
    const run = this.running;
    if (!run) return;
    this.running = undefined;
    run.closed = true;
    run.ws?.close();
    await this.client.send('DELETE', `/eddy/queries/${encodeURIComponent(run.id)}`).catch(() => undefined);
  }

  get busy(): boolean {
    return this.running !== undefined;
  }
}

function loadHistory(): string[] {
  try {
    return existsSync(HISTORY_FILE)
      ? readFileSync(HISTORY_FILE, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
          .reverse()
      : [];
  } catch {
    return [];
  }
}

function saveHistory(rl: Interface): void {
  const lines = ((rl as unknown as { history?: string[] }).history ?? []).slice(0, HISTORY_SIZE).reverse();
  try {
    writeFileSync(HISTORY_FILE, lines.join('\n') + '\n');
  } catch {
    // a read-only home keeps no history
  }
}

/**
 * Terminal output that keeps the prompt whole: a line printed while the prompt is shown is written above it, and the
 * prompt is drawn again below with what the user had typed so far.
 */
class PromptOutput {
  prompting = false;
  constructor(
    private readonly rl: Interface,
    private readonly tty: boolean,
  ) {}

  write(stream: NodeJS.WriteStream, text: string): void {
    if (!this.tty || !this.prompting) {
      stream.write(`${text}\n`);
      return;
    }
    clearLine(process.stdout, 0);
    cursorTo(process.stdout, 0);
    stream.write(`${text}\n`);
    this.rl.prompt(true);
  }

  /** Draws the prompt; `keepCursor`: where the user's cursor was in the line being typed */
  prompt(keepCursor = false): void {
    if (!this.tty) return;
    this.prompting = true;
    this.rl.prompt(keepCursor);
  }
}

/** The shell's loop on stdin/stdout; resolves when the user quits (or stdin ends). */
export async function runQueryShell(client: RestClient, json: boolean): Promise<void> {
  const tty = process.stdin.isTTY === true;
  const rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal: tty,
    history: tty ? loadHistory() : [],
    historySize: HISTORY_SIZE,
    prompt: 'eddy> ',
  });
  const screen = new PromptOutput(rl, tty);
  const shell = new QueryShell(
    client,
    json,
    (t) => screen.write(process.stdout, t),
    (t) => screen.write(process.stderr, t),
  );
  // a query started from a pipe keeps printing until the input ends
  let queue = Promise.resolve(true);
  let quitting = false;
  /** a Ctrl-C on an empty line asks for a second one (or Ctrl-D) before quitting */
  let quitAsked = false;
  const done = new Promise<void>((resolve) => {
    const finish = () => {
      if (quitting) return;
      quitting = true;
      void queue
        .then(() => shell.stop())
        .finally(() => {
          if (tty) {
            process.stdout.write('\n');
            saveHistory(rl);
          }
          resolve();
        });
    };
    rl.on('line', (line) => {
      screen.prompting = false;
      quitAsked = false;
      queue = queue.then(async (go) => {
        if (!go) return false;
        try {
          const more = await shell.line(line);
          if (!more) {
            rl.close();
            return false;
          }
        } catch (e) {
          process.stderr.write(`error: ${(e as Error).message}\n`);
        }
        screen.prompt();
        return true;
      });
    });
    const note = (text: string) => {
      screen.prompting = false;
      process.stdout.write(`\n${text}\n`);
      screen.prompt(true);
    };
    rl.on('SIGINT', () => {
      if (shell.busy) {
        quitAsked = false;
        void shell.stop().then(() => note('(stopped)'));
        return;
      }
      if (rl.line !== '') {
        // Ctrl-C clears what was typed, as a shell does
        quitAsked = false;
        rl.write(null, { ctrl: true, name: 'e' });
        process.stdout.write('^C\n');
        rl.write(null, { ctrl: true, name: 'u' });
        screen.prompt();
        return;
      }
      if (quitAsked) {
        rl.close();
        return;
      }
      quitAsked = true;
      note('(press Ctrl-C again or Ctrl-D to quit)');
    });
    rl.on('close', finish);
  });
  if (tty) {
    process.stdout.write(
      'Eddy SQL shell: type a SELECT, rows print as they arrive. Ctrl-C stops a query or clears the line; ' +
        'exit or Ctrl-D quits.\n',
    );
    screen.prompt();
  }
  await done;
}
