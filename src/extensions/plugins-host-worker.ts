/**
 * The entry of the portable-plugin host thread (docs/runtime.md §5.3 Process model; plugins-host.ts starts it): it
 * owns every plugin process and the REP sockets of their control and function channels. Control commands of one
 * plugin run one at a time, and so do the calls of one function. Because the engine is the REP side, every command
 * or call is the *reply* to the plugin's pending request, and the plugin's next request carries the answer.
 *
 * The starts of running sources and sinks are remembered per plugin and replayed whenever its process starts again
 * (after a crash, with growing delays, or a reinstall), so that running rules get their data back.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { workerData } from 'node:worker_threads';
import { NNG_PROTOCOL } from '../core/nng-wire.js';
import { Serial } from '../core/serial.js';
import type {
  CallAnswer,
  CallRequest,
  ControlCommand,
  HostEvent,
  HostRequest,
  HostWorkerData,
  PluginSpec,
} from './plugins-host.js';
import { NngConn } from './plugins-nng.js';

const { syncPort, asyncPort } = workerData as HostWorkerData;
const COMMAND_TIMEOUT_MS = 10_000;
const RESTART_MIN_MS = 1000;
const RESTART_MAX_MS = 30_000;
/** A channel's answer that is no answer: the reason the channel failed follows it. */
const FAILED = '\u0000';

const post = (m: HostEvent): void => asyncPort.postMessage(m);
const answerCall = (m: CallAnswer): void => syncPort.postMessage(m);
const log = (plugin: string, line: string): void => post({ op: 'log', plugin, line });
const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // nothing to remove
  }
}

/** A listening REP socket: keeps the latest request (its connection and header) as the slot for the next reply. */
class RepChannel {
  private server: Server | undefined;
  /** the request the next reply answers */
  pending: { conn: NngConn; header: Buffer } | undefined;
  private readonly inbox: string[] = [];
  private readonly waiters: Array<(text: string) => void> = [];
  private readonly conns = new Set<NngConn>();

  constructor(private readonly path: string) {}

  async listen(): Promise<void> {
    unlinkQuietly(this.path);
    const server = createServer((s: Socket) => {
      const c = new NngConn(
        s,
        NNG_PROTOCOL.REP,
        NNG_PROTOCOL.REQ,
        (msg, conn) => this.onRequest(conn, msg),
        (conn) => this.conns.delete(conn),
      );
      this.conns.add(c);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.path, resolve);
    });
  }

  private onRequest(conn: NngConn, msg: Buffer): void {
    if (msg.length < 4) return;
    this.pending = { conn, header: msg.subarray(0, 4) };
    const body = msg.subarray(4).toString('utf8');
    const w = this.waiters.shift();
    if (w) w(body);
    else this.inbox.push(body);
  }

  /** The next request's text, or `FAILED` + the reason once the channel failed. */
  next(timeoutMs: number): Promise<string> {
    const queued = this.inbox.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const w = (v: string): void => {
        clearTimeout(t);
        resolve(v);
      };
      const t = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`no answer from the plugin within ${timeoutMs}ms`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  reply(text: string): void {
    const p = this.pending;
    if (!p || p.conn.closed) throw new Error('the plugin is not connected');
    this.pending = undefined;
    p.conn.send(Buffer.concat([p.header, Buffer.from(text)]));
  }

  fail(reason: string): void {
    for (const w of this.waiters.splice(0)) w(FAILED + reason);
  }

  close(): void {
    for (const c of this.conns) c.close();
    this.server?.close();
    unlinkQuietly(this.path);
  }
}

interface FuncChannel {
  channel: RepChannel;
  ready: Promise<void>;
}

/** One plugin's running process. */
interface Entry {
  spec: PluginSpec;
  control: RepChannel;
  funcs: Map<string, FuncChannel>;
  /** its control commands, one at a time */
  commands: Serial;
  ready: Promise<void>;
  proc?: ChildProcess;
  dead: boolean;
}

const plugins = new Map<string, Entry>();
/** plugin → source/sink instance → its start command, replayed whenever the plugin's process starts again */
const remembered = new Map<string, Map<string, ControlCommand>>();
/** plugins restarted automatically after an unexpected exit, with the delay of the next attempt */
const restarts = new Map<string, { spec: PluginSpec; delay: number; timer?: NodeJS.Timeout }>();
/** the calls of one function, one at a time whichever rules call it (its channel is request/reply) */
const funcCalls = new Map<string, Serial>();

function instanceKey(cmd: ControlCommand): string | undefined {
  try {
    const c = JSON.parse(cmd.arg) as {
      pluginType?: string;
      symbolName?: string;
      meta?: { ruleId?: string; opId?: string; instanceId?: number };
    } | null;
    if (!c || c.pluginType === 'func') return undefined;
    const m = c.meta ?? {};
    return `${c.pluginType}:${c.symbolName}:${m.ruleId}_${m.opId}_${m.instanceId}`;
  } catch {
    return undefined;
  }
}

function remember(name: string, cmd: ControlCommand): void {
  const key = instanceKey(cmd);
  if (key === undefined) return;
  let m = remembered.get(name);
  if (!m) remembered.set(name, (m = new Map()));
  if (cmd.cmd === 'start') m.set(key, cmd);
  else m.delete(key);
  if (m.size === 0) remembered.delete(name);
}

/** After an unexpected exit, a plugin with running sources or sinks is started again (with growing delays). */
function scheduleRestart(spec: PluginSpec): void {
  if (!remembered.has(spec.name)) return;
  const r = restarts.get(spec.name) ?? { spec, delay: RESTART_MIN_MS };
  r.spec = spec;
  restarts.set(spec.name, r);
  clearTimeout(r.timer);
  r.timer = setTimeout(() => {
    if (plugins.has(spec.name) || !remembered.has(spec.name)) return;
    r.delay = Math.min(r.delay * 2, RESTART_MAX_MS);
    startPlugin(spec).ready.then(
      () => {
        r.delay = RESTART_MIN_MS;
      },
      () => undefined,
    );
  }, r.delay);
}

/** Forwards a process's output to the log, line by line. */
function forward(name: string, stream: Readable | null): void {
  let rest = '';
  stream?.on('data', (d: Buffer) => {
    const lines = (rest + d.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) if (l) log(name, l);
  });
}

function startPlugin(spec: PluginSpec): Entry {
  const existing = plugins.get(spec.name);
  if (existing) return existing;
  const p: Entry = {
    spec,
    control: new RepChannel(`/tmp/plugin_${spec.name}.ipc`),
    funcs: new Map(),
    commands: new Serial(),
    ready: Promise.resolve(),
    dead: false,
  };
  plugins.set(spec.name, p);
  p.ready = (async () => {
    await p.control.listen();
    const proc = spawn(spec.command, spec.args, { cwd: spec.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    p.proc = proc;
    post({ op: 'pid', plugin: spec.name, pid: proc.pid ?? 0 });
    proc.on('exit', () => post({ op: 'pid', plugin: spec.name, pid: 0 }));
    forward(spec.name, proc.stdout);
    forward(spec.name, proc.stderr);
    const exited = new Promise<never>((_, reject) => {
      proc.on('error', (e) => reject(new Error(`cannot start plugin ${spec.name}: ${errText(e)}`)));
      proc.on('exit', (code, signal) => reject(new Error(`plugin ${spec.name} exited with ${signal ?? code}`)));
    });
    exited.catch(() => undefined);
    proc.on('exit', () => {
      const unexpected = !p.dead;
      stopEntry(p, 'the plugin process exited');
      if (unexpected) scheduleRestart(spec);
    });
    proc.on('error', () => stopEntry(p, 'the plugin process failed'));
    const first = await Promise.race([p.control.next(spec.initTimeoutMs), exited]);
    if (first !== 'handshake')
      throw new Error(`plugin ${spec.name} sent ${JSON.stringify(first)} instead of handshake`);
    // the starts of the sources and sinks that were running on the previous process
    for (const cmd of [...(remembered.get(spec.name) ?? new Map<string, ControlCommand>()).values()]) {
      p.control.reply(JSON.stringify(cmd));
      const answer = await Promise.race([p.control.next(COMMAND_TIMEOUT_MS), exited]);
      if (answer !== 'ok') log(spec.name, `replaying a start command failed: ${answer}`);
    }
  })();
  p.ready.catch(() => stopEntry(p, 'the plugin did not start'));
  return p;
}

function stopPlugin(name: string, reason: string): void {
  const p = plugins.get(name);
  if (p) stopEntry(p, reason);
}

function stopEntry(p: Entry, reason: string): void {
  if (p.dead) return;
  if (plugins.get(p.spec.name) === p) plugins.delete(p.spec.name);
  p.dead = true;
  p.control.fail(reason);
  p.control.close();
  for (const f of p.funcs.values()) {
    f.channel.fail(reason);
    f.channel.close();
  }
  if (p.proc && p.proc.exitCode === null) p.proc.kill('SIGKILL');
}

/** A control command; resolves once the plugin answered `ok`, rejects with its error text. */
function command(spec: PluginSpec, cmd: ControlCommand): Promise<void> {
  // a stop is forgotten even when the plugin cannot take it (a stopped process is not started for it); a start is
  // remembered once it succeeded
  if (cmd.cmd === 'stop') {
    remember(spec.name, cmd);
    if (!plugins.has(spec.name)) return Promise.resolve();
  }
  const p = startPlugin(spec);
  return p.commands.run(async () => {
    await p.ready;
    p.control.reply(JSON.stringify(cmd));
    const answer = await p.control.next(COMMAND_TIMEOUT_MS);
    if (answer !== 'ok') throw new Error(answer.startsWith(FAILED) ? answer.slice(1) : answer);
    if (cmd.cmd === 'start') remember(spec.name, cmd);
  });
}

async function funcChannel(spec: PluginSpec, fname: string): Promise<RepChannel> {
  const p = startPlugin(spec);
  let f = p.funcs.get(fname);
  if (!f) {
    const channel = new RepChannel(`/tmp/func_${fname}.ipc`);
    const ready = (async () => {
      await channel.listen();
      const control = { symbolName: fname, pluginType: 'func', meta: { ruleId: '', opId: '', instanceId: 0 } };
      await command(spec, { cmd: 'start', arg: JSON.stringify(control) });
    })();
    f = { channel, ready };
    p.funcs.set(fname, f);
    ready.catch(() => p.funcs.delete(fname));
  }
  await f.ready;
  return f.channel;
}

async function callFunction(spec: PluginSpec, fname: string, payload: string, timeoutMs: number): Promise<string> {
  const ch = await funcChannel(spec, fname);
  // wait for the function runtime's handshake (or the answer left pending by the previous call)
  while (!ch.pending) {
    const m = await ch.next(timeoutMs);
    if (m.startsWith(FAILED)) throw new Error(m.slice(1));
  }
  ch.reply(payload);
  for (;;) {
    const m = await ch.next(timeoutMs);
    if (m.startsWith(FAILED)) throw new Error(m.slice(1));
    if (m.startsWith('h')) continue; // a (re)started function runtime says handshake
    return m;
  }
}

function queuedCall(req: CallRequest): Promise<string> {
  const key = `${req.spec.name}/${req.fname}`;
  let calls = funcCalls.get(key);
  if (!calls) funcCalls.set(key, (calls = new Serial()));
  const queue = calls;
  const run = queue.run(() => callFunction(req.spec, req.fname, req.payload, req.timeoutMs));
  // the queue of a function nobody calls any more is dropped
  void queue.settled().then(() => {
    if (!queue.busy && funcCalls.get(key) === queue) funcCalls.delete(key);
  });
  return run;
}

asyncPort.on('message', (m: HostRequest) => {
  switch (m.op) {
    case 'command':
      command(m.spec, m.cmd).then(
        () => post({ op: 'result', reqId: m.reqId }),
        (e: unknown) => post({ op: 'result', reqId: m.reqId, error: errText(e) }),
      );
      break;
    case 'stop':
      stopPlugin(m.name, 'the plugin was removed');
      break;
    case 'installed':
      // a reinstalled plugin resumes the sources and sinks of rules that kept running
      if (remembered.has(m.spec.name) && !plugins.has(m.spec.name)) startPlugin(m.spec).ready.catch(() => undefined);
      break;
  }
});

syncPort.on('message', (req: CallRequest) => {
  queuedCall(req).then(
    (result) => answerCall({ id: req.id, result }),
    (e: unknown) => answerCall({ id: req.id, error: errText(e) }),
  );
});
