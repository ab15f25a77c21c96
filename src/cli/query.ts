/**
 * `eddy query`: an interactive SQL shell (eKuiper's `kuiper query`). Each `SELECT` runs as a temporary rule whose
 * sink is a websocket endpoint on the server's data server; the shell connects to it and prints the rows as they
 * arrive. The rule is removed when the next query starts, on Ctrl-C, and on exit. Syntax errors are shown with a
 * caret under the offending token (`POST /eddy/sql/check`).
 */
import { createInterface, type Interface } from 'node:readline';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { CliError, errorText, ExitCode, type RestClient } from './client.js';
import { caretUnder, cell } from './format.js';

const HISTORY_FILE = join(homedir(), '.eddy_history');
const HISTORY_SIZE = 500;

interface Running {
  ruleId: string;
  ws?: WebSocket;
  closed: boolean;
}

export class QueryShell {
  private running: Running | undefined;
  private counter = 0;
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
      this.out('Type a SELECT statement; its rows are printed as they arrive. Ctrl-C stops it, exit or Ctrl-D quits.');
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
    const ruleId = `eddy_query_${process.pid}_${++this.counter}`;
    const path = `/eddy/query/${ruleId}`;
    // in a cluster the rule runs on the node this shell talks to: its endpoint is on that node's data server
    const { clusterNode } = (await this.client.call('GET', '/eddy/server')).body as { clusterNode?: string };
    const ans = await this.client.send('POST', '/rules', {
      id: ruleId,
      sql,
      actions: [{ websocket: { path, sendSingle: true } }],
      options: { sendError: false, ...(clusterNode ? { node: clusterNode } : {}) },
    });
    if (ans.status === 401) throw new CliError('unauthorized (set EDDY_TOKEN)', ExitCode.Unauthorized);
    if (ans.status >= 400) {
      this.err(`error: ${errorText(ans)}`);
      return true;
    }
    const run: Running = { ruleId, closed: false };
    this.running = run;
    this.columns = undefined;
    await this.connect(run, path);
    if (!run.closed) this.err(`(running ${ruleId}; Ctrl-C stops it)`);
    return true;
  }

  /** The URL of `path` on the data server, once it listens (it starts with the first rule that needs it). */
  private async endpoint(path: string): Promise<string | undefined> {
    const info = (await this.client.call('GET', '/eddy/server')).body as {
      dataServer: { port: number; listening?: boolean };
    };
    if (info.dataServer.listening === false) return undefined;
    const host = this.client.host === '0.0.0.0' ? '127.0.0.1' : this.client.host;
    return `ws://${host.includes(':') ? `[${host}]` : host}:${info.dataServer.port}${path}`;
  }

  /** Connects to the rule's endpoint, retrying while the rule starts (and with it the data server). */
  private async connect(run: Running, path: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    let url: string | undefined;
    while (!run.closed) {
      url ??= await this.endpoint(path);
      const target = url;
      const ok =
        target !== undefined &&
        (await new Promise<boolean>((resolve) => {
          const ws = new WebSocket(target);
          ws.once('open', () => {
            run.ws = ws;
            ws.on('message', (data) => this.row(data.toString()));
            resolve(true);
          });
          ws.once('error', () => resolve(false));
        }));
      if (ok) return;
      if (Date.now() > deadline) {
        this.err(`cannot read the rows at ${url ?? `the data server (not listening), path ${path}`}`);
        await this.stop();
        return;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
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
      if (!this.columns) {
        this.columns = Object.keys(rec);
        this.out(
          this.columns
            .map((c) => c.padEnd(12))
            .join(' ')
            .trimEnd(),
        );
      }
      const extra = Object.keys(rec).filter((k) => !this.columns!.includes(k));
      this.out(
        [...this.columns.map((c) => cell(rec[c]).padEnd(12)), ...extra.map((k) => `${k}=${cell(rec[k])}`)]
          .join(' ')
          .trimEnd(),
      );
    }
  }

  /** Stops the running query and removes its rule. */
  async stop(): Promise<void> {
    const run = this.running;
    if (!run) return;
    this.running = undefined;
    run.closed = true;
    run.ws?.terminate();
    await this.client.send('DELETE', `/rules/${encodeURIComponent(run.ruleId)}`).catch(() => undefined);
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

/** The shell's loop on stdin/stdout; resolves when the user quits (or stdin ends). */
export async function runQueryShell(client: RestClient, json: boolean): Promise<void> {
  const shell = new QueryShell(client, json);
  const tty = process.stdin.isTTY === true;
  const rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal: tty,
    history: tty ? loadHistory() : [],
    historySize: HISTORY_SIZE,
    prompt: 'eddy> ',
  });
  // a query started from a pipe keeps printing until the input ends
  let queue = Promise.resolve(true);
  let quitting = false;
  const done = new Promise<void>((resolve) => {
    const finish = () => {
      if (quitting) return;
      quitting = true;
      void queue
        .then(() => shell.stop())
        .finally(() => {
          if (tty) saveHistory(rl);
          resolve();
        });
    };
    rl.on('line', (line) => {
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
        if (tty) rl.prompt();
        return true;
      });
    });
    rl.on('SIGINT', () => {
      if (shell.busy) {
        void shell.stop().then(() => {
          process.stdout.write('\n(stopped)\n');
          rl.prompt();
        });
      } else rl.close();
    });
    rl.on('close', finish);
  });
  if (tty) {
    process.stdout.write(
      'Eddy SQL shell: type a SELECT, rows print as they arrive. Ctrl-C stops a query, exit quits.\n',
    );
    rl.prompt();
  }
  await done;
}
