/**
 * The portable-plugin host (docs/runtime.md §5.3 Process model): one worker thread (plugins-host-worker.ts) owns every
 * plugin process and the REP sockets of their control and function channels. Control commands (start/stop of sources
 * and sinks) are sent asynchronously, and so are function calls: plugin functions are asynchronous SQL functions
 * awaited by the rule's asynchronous node (docs/runtime.md §6.3) while the thread starts the process if needed, sends
 * the call and reads the reply.
 */
import { Replies } from '../core/replies.js';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { siblingModule, startWorker } from '../core/threads.js';

/** How to start one plugin's process. */
export interface PluginSpec {
  name: string;
  command: string;
  args: string[];
  cwd: string;
  initTimeoutMs: number;
}

/** A control command of a source or sink (docs/runtime.md §5.3). */
export interface ControlCommand {
  cmd: 'start' | 'stop';
  arg: string;
}

/** Host → host thread, on the command port. */
export type HostRequest =
  | { op: 'command'; reqId: number; spec: PluginSpec; cmd: ControlCommand }
  | { op: 'stop'; name: string }
  | { op: 'installed'; spec: PluginSpec };

/** Host thread → host, on the command port. */
export type HostEvent =
  | { op: 'log'; plugin: string; line: string }
  | { op: 'pid'; plugin: string; pid: number }
  | { op: 'result'; reqId: number; error?: string };

/** A function call (host → host thread, on the call port) and its answer. */
export interface CallRequest {
  id: number;
  spec: PluginSpec;
  fname: string;
  payload: string;
  timeoutMs: number;
}

export interface CallAnswer {
  id: number;
  result?: string;
  error?: string;
}

/** What the host thread (plugins-host-worker.ts) is started with. */
export interface HostWorkerData {
  syncPort: MessagePort;
  asyncPort: MessagePort;
}

const GRACE_MS = 1000;

export class PluginHost {
  private worker: Worker | undefined;
  private syncPort: MessagePort | undefined;
  private asyncPort: MessagePort | undefined;
  private nextId = 1;
  /** function calls waiting for their reply */
  private readonly calls = new Map<
    number,
    { resolve: (text: string) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();
  /** control commands waiting for their result */
  private readonly commands = new Replies<void>();
  /** live plugin processes by plugin name */
  private readonly pids = new Map<string, number>();

  constructor(private readonly log: (plugin: string, line: string) => void) {}

  /** Sends a control command (`start`/`stop` of a source or sink), starting the process if needed. */
  command(spec: PluginSpec, cmd: ControlCommand): Promise<void> {
    const { asyncPort } = this.start();
    return this.commands.ask((reqId) =>
      asyncPort.postMessage({ op: 'command', reqId, spec, cmd } satisfies HostRequest),
    );
  }

  /** The longest one function call may take: the first call may have to start the process. */
  static callTimeLimit(initTimeoutMs: number, timeoutMs: number): number {
    return timeoutMs + initTimeoutMs + GRACE_MS;
  }

  /** One function call; resolves with the plugin's reply text. */
  call(spec: PluginSpec, fname: string, payload: string, timeoutMs: number): Promise<string> {
    const { syncPort } = this.start();
    const id = this.nextId++;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.calls.delete(id);
          reject(new Error(`no reply from plugin ${spec.name} within ${timeoutMs}ms`));
        },
        PluginHost.callTimeLimit(spec.initTimeoutMs, timeoutMs),
      );
      this.calls.set(id, { resolve, reject, timer });
      syncPort.postMessage({ id, spec, fname, payload, timeoutMs } satisfies CallRequest);
    });
  }

  private callAnswered(msg: CallAnswer): void {
    const c = this.calls.get(msg.id);
    if (!c) return; // a call that already gave up
    this.calls.delete(msg.id);
    clearTimeout(c.timer);
    if (msg.error !== undefined) c.reject(new Error(msg.error));
    else c.resolve(msg.result ?? '');
  }

  private failCalls(reason: string): void {
    for (const c of this.calls.values()) {
      clearTimeout(c.timer);
      c.reject(new Error(reason));
    }
    this.calls.clear();
  }

  /** Kills a plugin's process (delete, update). */
  stopPlugin(name: string): void {
    this.asyncPort?.postMessage({ op: 'stop', name } satisfies HostRequest);
  }

  /** A plugin was (re)installed: sources and sinks that were running on its previous process start again. */
  installed(spec: PluginSpec): void {
    this.asyncPort?.postMessage({ op: 'installed', spec } satisfies HostRequest);
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.syncPort?.close();
    this.asyncPort?.close();
    this.commands.rejectAll(new Error('the plugin host is closed'));
    this.failCalls('the plugin host is closed');
    // terminating the worker closes its sockets; the plugin processes would outlive it
    for (const pid of this.pids.values()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    this.pids.clear();
    if (w) await w.terminate();
  }

  private start(): { syncPort: MessagePort; asyncPort: MessagePort } {
    if (this.worker && this.syncPort && this.asyncPort) return { syncPort: this.syncPort, asyncPort: this.asyncPort };
    const sync = new MessageChannel();
    const async = new MessageChannel();
    const worker = startWorker(siblingModule(import.meta.url, 'plugins-host-worker'), {
      workerData: { syncPort: sync.port2, asyncPort: async.port2 } satisfies HostWorkerData,
      transferList: [sync.port2, async.port2],
      execArgv: [],
    });
    worker.unref();
    sync.port1.on('message', (m: CallAnswer) => this.callAnswered(m));
    // pending calls keep the process alive through their timers, not through the port
    sync.port1.unref();
    async.port1.on('message', (m: HostEvent) => {
      if (m.op === 'log') this.log(m.plugin, m.line);
      else if (m.op === 'pid') {
        if (m.pid) this.pids.set(m.plugin, m.pid);
        else this.pids.delete(m.plugin);
      } else {
        this.commands.settle(m.reqId, m.error, undefined);
      }
    });
    async.port1.unref();
    worker.on('error', () => {
      if (this.worker === worker) {
        this.worker = undefined;
        this.syncPort = undefined;
        this.asyncPort = undefined;
        this.failCalls('the plugin host failed');
      }
    });
    this.worker = worker;
    this.syncPort = sync.port1;
    this.asyncPort = async.port1;
    return { syncPort: sync.port1, asyncPort: async.port1 };
  }
}
