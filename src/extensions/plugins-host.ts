/**
 * The portable-plugin host (docs/runtime.md §5.3 Process model): one worker thread owns every plugin process and the REP
 * sockets of their control and function channels. Control commands (start/stop of sources and sinks) are sent
 * asynchronously, and so are function calls: plugin functions are asynchronous SQL functions awaited by the rule's
 * asynchronous node (docs/runtime.md §6.3) while the worker starts the process if needed, sends the call and reads the
 * reply.
 *
 * Because the engine is the REP side, every command or call is the *reply* to the plugin's pending request, and the
 * plugin's next request carries the answer (and becomes the new pending request).
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { NNG_SOURCE } from './plugins-nng.js';

/** How to start one plugin's process. */
export interface PluginSpec {
  name: string;
  command: string;
  args: string[];
  cwd: string;
  initTimeoutMs: number;
}

const HOST_SOURCE =
  NNG_SOURCE +
  String.raw`
const { workerData } = require('node:worker_threads');
const net = require('node:net');
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const { syncPort, asyncPort } = workerData;
const REQ = 0x30, REP = 0x31;
const COMMAND_TIMEOUT_MS = 10000;

function answerSync(id, r) {
  syncPort.postMessage({ id, ...r });
}
const log = (plugin, line) => asyncPort.postMessage({ op: 'log', plugin, line });
const errText = (e) => (e && e.message ? e.message : String(e));

// A listening REP socket: keeps the latest request (its connection and header) as the slot for the next reply.
class RepChannel {
  constructor(path) { this.path = path; this.pending = null; this.inbox = []; this.waiters = []; this.conns = new Set(); }
  async listen() {
    try { fs.unlinkSync(this.path); } catch {}
    this.server = net.createServer((s) => {
      const c = new NngConn(s, REP, REQ, (conn, msg) => this.onRequest(conn, msg), (conn) => this.conns.delete(conn));
      this.conns.add(c);
    });
    await new Promise((res, rej) => { this.server.once('error', rej); this.server.listen(this.path, res); });
  }
  onRequest(conn, msg) {
    if (msg.length < 4) return;
    this.pending = { conn, header: msg.subarray(0, 4) };
    const body = msg.subarray(4).toString('utf8');
    const w = this.waiters.shift();
    if (w) w.resolve(body); else this.inbox.push(body);
  }
  next(timeoutMs) {
    if (this.inbox.length) return Promise.resolve(this.inbox.shift());
    return new Promise((resolve, reject) => {
      const w = { resolve: (v) => { clearTimeout(t); resolve(v); } };
      const t = setTimeout(() => { this.waiters.splice(this.waiters.indexOf(w), 1); reject(new Error('no answer from the plugin within ' + timeoutMs + 'ms')); }, timeoutMs);
      this.waiters.push(w);
    });
  }
  reply(text) {
    const p = this.pending;
    if (!p || p.conn.closed) throw new Error('the plugin is not connected');
    this.pending = null;
    p.conn.send(Buffer.concat([p.header, Buffer.from(text)]));
  }
  fail(reason) { for (const w of this.waiters.splice(0)) w.resolve('\u0000' + reason); }
  close() {
    for (const c of this.conns) c.close();
    if (this.server) this.server.close();
    try { fs.unlinkSync(this.path); } catch {}
  }
}

// name → { proc, control, ready, queue, funcs: Map<fname, {channel, ready}> }
const plugins = new Map();
// name → Map<source/sink instance key, start command>: replayed whenever the plugin's process starts again (after a
// crash or a reinstall), so running rules get their data back
const remembered = new Map();
// name → { spec, delay } of plugins restarted automatically after an unexpected exit
const restarts = new Map();
const RESTART_MIN_MS = 1000, RESTART_MAX_MS = 30000;

function instanceKey(cmd) {
  try {
    const c = JSON.parse(cmd.arg);
    if (!c || c.pluginType === 'func') return undefined;
    const m = c.meta || {};
    return c.pluginType + ':' + c.symbolName + ':' + m.ruleId + '_' + m.opId + '_' + m.instanceId;
  } catch { return undefined; }
}
function remember(name, cmd) {
  const key = instanceKey(cmd);
  if (key === undefined) return;
  let m = remembered.get(name);
  if (!m) remembered.set(name, (m = new Map()));
  if (cmd.cmd === 'start') m.set(key, cmd); else m.delete(key);
  if (m.size === 0) remembered.delete(name);
}

// After an unexpected exit, a plugin with running sources or sinks is started again (with growing delays).
function scheduleRestart(spec) {
  if (!remembered.has(spec.name)) return;
  const r = restarts.get(spec.name) || { delay: RESTART_MIN_MS };
  r.spec = spec;
  restarts.set(spec.name, r);
  clearTimeout(r.timer);
  r.timer = setTimeout(() => {
    if (plugins.has(spec.name) || !remembered.has(spec.name)) return;
    r.delay = Math.min(r.delay * 2, RESTART_MAX_MS);
    startPlugin(spec).ready.then(() => { r.delay = RESTART_MIN_MS; }, () => {});
  }, r.delay);
}

function startPlugin(spec) {
  const existing = plugins.get(spec.name);
  if (existing) return existing;
  const p = { spec, control: new RepChannel('/tmp/plugin_' + spec.name + '.ipc'), funcs: new Map(), queue: Promise.resolve(), dead: false };
  plugins.set(spec.name, p);
  p.ready = (async () => {
    await p.control.listen();
    const proc = spawn(spec.command, spec.args, { cwd: spec.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    p.proc = proc;
    asyncPort.postMessage({ op: 'pid', plugin: spec.name, pid: proc.pid || 0 });
    proc.on('exit', () => asyncPort.postMessage({ op: 'pid', plugin: spec.name, pid: 0 }));
    const forward = (stream) => {
      let rest = '';
      stream.on('data', (d) => {
        const lines = (rest + d.toString('utf8')).split('\n');
        rest = lines.pop();
        for (const l of lines) if (l) log(spec.name, l);
      });
    };
    forward(proc.stdout); forward(proc.stderr);
    const exited = new Promise((_, reject) => {
      proc.on('error', (e) => reject(new Error('cannot start plugin ' + spec.name + ': ' + errText(e))));
      proc.on('exit', (code, signal) => reject(new Error('plugin ' + spec.name + ' exited with ' + (signal || code))));
    });
    exited.catch(() => {});
    proc.on('exit', () => {
      const unexpected = !p.dead;
      stopEntry(p, 'the plugin process exited');
      if (unexpected) scheduleRestart(spec);
    });
    proc.on('error', () => stopEntry(p, 'the plugin process failed'));
    const first = await Promise.race([p.control.next(spec.initTimeoutMs), exited]);
    if (first !== 'handshake') throw new Error('plugin ' + spec.name + ' sent ' + JSON.stringify(first) + ' instead of handshake');
    // the starts of the sources and sinks that were running on the previous process
    for (const cmd of [...(remembered.get(spec.name) || new Map()).values()]) {
      p.control.reply(JSON.stringify(cmd));
      const answer = await Promise.race([p.control.next(COMMAND_TIMEOUT_MS), exited]);
      if (answer !== 'ok') log(spec.name, 'replaying a start command failed: ' + answer);
    }
  })();
  p.ready.catch(() => stopEntry(p, 'the plugin did not start'));
  return p;
}

function stopPlugin(name, reason) {
  const p = plugins.get(name);
  if (p) stopEntry(p, reason);
}

function stopEntry(p, reason) {
  if (p.dead) return;
  if (plugins.get(p.spec.name) === p) plugins.delete(p.spec.name);
  p.dead = true;
  p.control.fail(reason);
  p.control.close();
  for (const f of p.funcs.values()) { f.channel.fail(reason); f.channel.close(); }
  if (p.proc && p.proc.exitCode === null) p.proc.kill('SIGKILL');
}

// Commands of one plugin run one at a time; the answer is 'ok' or an error text.
function command(spec, cmd) {
  // a stop is forgotten even when the plugin cannot take it (a stopped process is not started for it); a start is
  // remembered once it succeeded
  if (cmd.cmd === 'stop') {
    remember(spec.name, cmd);
    if (!plugins.has(spec.name)) return Promise.resolve();
  }
  const p = startPlugin(spec);
  const run = p.queue.then(async () => {
    await p.ready;
    p.control.reply(JSON.stringify(cmd));
    const answer = await p.control.next(COMMAND_TIMEOUT_MS);
    if (answer !== 'ok') throw new Error(answer.startsWith('\u0000') ? answer.slice(1) : answer);
    if (cmd.cmd === 'start') remember(spec.name, cmd);
  });
  p.queue = run.catch(() => {});
  return run;
}

async function funcChannel(spec, fname) {
  const p = startPlugin(spec);
  let f = p.funcs.get(fname);
  if (!f) {
    f = { channel: new RepChannel('/tmp/func_' + fname + '.ipc') };
    p.funcs.set(fname, f);
    f.ready = (async () => {
      await f.channel.listen();
      const control = { symbolName: fname, pluginType: 'func', meta: { ruleId: '', opId: '', instanceId: 0 } };
      await command(spec, { cmd: 'start', arg: JSON.stringify(control) });
    })();
    f.ready.catch(() => p.funcs.delete(fname));
  }
  await f.ready;
  return f.channel;
}

async function callFunction(spec, fname, payload, timeoutMs) {
  const ch = await funcChannel(spec, fname);
  // wait for the function runtime's handshake (or the answer left pending by the previous call)
  while (!ch.pending) {
    const m = await ch.next(timeoutMs);
    if (m.startsWith('\u0000')) throw new Error(m.slice(1));
  }
  ch.reply(payload);
  for (;;) {
    const m = await ch.next(timeoutMs);
    if (m.startsWith('\u0000')) throw new Error(m.slice(1));
    if (m.startsWith('h')) continue; // a (re)started function runtime says handshake
    return m;
  }
}

asyncPort.on('message', (m) => {
  if (m.op === 'command') {
    command(m.spec, m.cmd).then(() => asyncPort.postMessage({ op: 'result', reqId: m.reqId }), (e) => asyncPort.postMessage({ op: 'result', reqId: m.reqId, error: errText(e) }));
  } else if (m.op === 'stop') {
    stopPlugin(m.name, 'the plugin was removed');
  } else if (m.op === 'installed') {
    // a reinstalled plugin resumes the sources and sinks of rules that kept running
    if (remembered.has(m.spec.name) && !plugins.has(m.spec.name)) startPlugin(m.spec).ready.catch(() => {});
  }
});
// A function channel is request/reply: one call at a time per function, whichever rules call it.
const funcQueues = new Map();
function queuedCall(spec, fname, payload, timeoutMs) {
  const key = spec.name + '/' + fname;
  const run = (funcQueues.get(key) || Promise.resolve()).then(() => callFunction(spec, fname, payload, timeoutMs));
  const tail = run.then(() => {}, () => {});
  funcQueues.set(key, tail);
  tail.then(() => { if (funcQueues.get(key) === tail) funcQueues.delete(key); });
  return run;
}

syncPort.on('message', ({ id, spec, fname, payload, timeoutMs }) => {
  queuedCall(spec, fname, payload, timeoutMs).then((result) => answerSync(id, { result }), (e) => answerSync(id, { error: errText(e) }));
});
`;

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
  private readonly waiting = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  /** live plugin processes by plugin name */
  private readonly pids = new Map<string, number>();

  constructor(private readonly log: (plugin: string, line: string) => void) {}

  /** Sends a control command (`start`/`stop` of a source or sink), starting the process if needed. */
  command(spec: PluginSpec, cmd: { cmd: 'start' | 'stop'; arg: string }): Promise<void> {
    const { asyncPort } = this.start();
    const reqId = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(reqId, { resolve, reject });
      asyncPort.postMessage({ op: 'command', reqId, spec, cmd });
    });
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
      syncPort.postMessage({ id, spec, fname, payload, timeoutMs });
    });
  }

  private callAnswered(msg: { id: number; result?: string; error?: string }): void {
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
    this.asyncPort?.postMessage({ op: 'stop', name });
  }

  /** A plugin was (re)installed: sources and sinks that were running on its previous process start again. */
  installed(spec: PluginSpec): void {
    this.asyncPort?.postMessage({ op: 'installed', spec });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.syncPort?.close();
    this.asyncPort?.close();
    for (const w2 of this.waiting.values()) w2.reject(new Error('the plugin host is closed'));
    this.waiting.clear();
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
    const worker = new Worker(HOST_SOURCE, {
      eval: true,
      workerData: { syncPort: sync.port2, asyncPort: async.port2 },
      transferList: [sync.port2, async.port2],
      execArgv: [],
    });
    worker.unref();
    sync.port1.on('message', (m: { id: number; result?: string; error?: string }) => this.callAnswered(m));
    // pending calls keep the process alive through their timers, not through the port
    sync.port1.unref();
    async.port1.on(
      'message',
      (m: { op: string; reqId?: number; error?: string; plugin?: string; line?: string; pid?: number }) => {
        if (m.op === 'log') this.log(m.plugin ?? '', m.line ?? '');
        else if (m.op === 'pid') {
          if (m.pid) this.pids.set(m.plugin ?? '', m.pid);
          else this.pids.delete(m.plugin ?? '');
        } else if (m.op === 'result' && m.reqId !== undefined) {
          const w = this.waiting.get(m.reqId);
          this.waiting.delete(m.reqId);
          if (m.error !== undefined) w?.reject(new Error(m.error));
          else w?.resolve();
        }
      },
    );
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
