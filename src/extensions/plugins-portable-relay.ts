/**
 * Portable-plugin sources and sinks on the rule workers (docs/runtime.md §1.10). Their data sockets are the rule's
 * own (plugins-portable-connectors.ts); what the main thread keeps — the plugin processes and which plugins are
 * installed — a worker reaches through a message port of its own: each rule request carries the installed plugins'
 * source and sink names (the worker declares each new one, and refuses one no longer installed with the main thread's
 * text), and each start or stop of a connector crosses to the main thread's manager and its answer crosses back.
 * A worker that ends (its port closes) stops in the plugin processes whatever it had started and not stopped.
 */
import type { MessagePort } from 'node:worker_threads';
import { EddyError, ErrorCode } from '../core/errors.js';
import { Replies, tellPort } from '../core/replies.js';
import type { Declaration } from '../connectors/declaration.js';
import { portableDeclaration, type PortableControl, type PortableKind } from './plugins-portable-connectors.js';

/** The source and sink names of the installed portable plugins. */
export interface PortableSymbols {
  source: string[];
  sink: string[];
}

/** Worker → main. */
type Ask =
  | { k: 'reserve'; id: number; kind: PortableKind; symbol: string }
  | { k: 'command'; id: number; kind: PortableKind; symbol: string; cmd: 'start' | 'stop'; arg: string };

/** Main → worker. */
interface Answer {
  id: number;
  value?: string;
  error?: string;
}

/** The main thread's side: serves the port of each worker with the manager's control of the plugin processes. */
export class PortableRelayServer {
  constructor(private readonly control: PortableControl) {}

  serve(port: MessagePort): void {
    /** the instances this worker started and has not stopped, by their start argument */
    const started = new Map<string, { kind: PortableKind; symbol: string }>();
    const tell = tellPort<Answer>(port);
    const answer = (id: number, p: Promise<string | undefined>): void => {
      p.then(
        (value) => tell({ id, ...(value === undefined ? {} : { value }) }),
        (err: unknown) => tell({ id, error: err instanceof Error ? err.message : String(err) }),
      );
    };
    port.on('message', (m: Ask) => {
      if (m.k === 'reserve') {
        answer(m.id, this.control.reserve(m.kind, m.symbol));
        return;
      }
      const done = this.control.command(m.kind, m.symbol, m.cmd, m.arg).then(() => {
        if (m.cmd === 'start') started.set(m.arg, { kind: m.kind, symbol: m.symbol });
        else started.delete(m.arg);
        return undefined;
      });
      answer(m.id, done);
    });
    // the worker ended (replaced, or the server stops): the plugin processes stop what it had started
    port.on('close', () => {
      for (const [arg, { kind, symbol }] of started)
        void this.control.command(kind, symbol, 'stop', arg).catch(() => 0);
      started.clear();
    });
  }
}

/** A worker's side: the main thread's control of the plugin processes, reached over `port`. */
export class PortableRelayClient implements PortableControl {
  private readonly replies = new Replies<string | undefined>();
  private installed: PortableSymbols = { source: [], sink: [] };
  private readonly declared = { source: new Set<string>(), sink: new Set<string>() };

  constructor(
    private readonly port: MessagePort,
    /** declares a connector type in this thread's registry */
    private readonly declare: (d: Declaration) => void,
  ) {
    // the relay must not keep the worker alive
    port.unref();
    port.on('message', (m: Answer) => this.replies.settle(m.id, m.error, m.value));
  }

  /**
   * The plugins installed now (from a rule request): each new name is declared here; a declaration stays when its
   * plugin is deleted, as on the main thread, and {@link check} refuses it.
   */
  sync(installed: PortableSymbols): void {
    this.installed = installed;
    for (const kind of ['source', 'sink'] as const)
      for (const symbol of installed[kind]) {
        if (this.declared[kind].has(symbol)) continue;
        this.declared[kind].add(symbol);
        this.declare(portableDeclaration(kind, symbol, this));
      }
  }

  check(kind: PortableKind, symbol: string): void {
    if (!this.installed[kind].includes(symbol))
      throw new EddyError(ErrorCode.Executor, `portable plugin providing ${kind} ${symbol} is not installed`);
  }

  async reserve(kind: PortableKind, symbol: string): Promise<string> {
    this.check(kind, symbol);
    const opId = await this.replies.ask((id) =>
      this.port.postMessage({ k: 'reserve', id, kind, symbol } satisfies Ask),
    );
    return opId ?? '';
  }

  async command(kind: PortableKind, symbol: string, cmd: 'start' | 'stop', arg: string): Promise<void> {
    await this.replies.ask((id) => this.port.postMessage({ k: 'command', id, kind, symbol, cmd, arg } satisfies Ask));
  }
}
