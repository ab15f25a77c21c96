/**
 * The real server, as `npm start` runs it: `node scripts/start.mjs` (the entry of `npm start`) in a process of its
 * own, on a home folder and a port of the benchmark's, measured from outside through /proc: CPU time and resident
 * memory of the whole process tree (the server, its worker threads, any child process it started). The hand-written
 * mqtt.js programs the benchmarks compare it with are spawned and measured the same way.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';

/** clock ticks per second of /proc/<pid>/stat times */
const TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
const PAGE = Number(execFileSync('getconf', ['PAGESIZE']).toString().trim()) || 4096;

export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'scripts', 'start.mjs'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find scripts/start.mjs');
    dir = up;
  }
  return dir;
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

interface ProcStat {
  ppid: number;
  /** utime + stime, ticks */
  ticks: number;
  rssBytes: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name is in parentheses and may hold spaces: the fields after it are positional
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return {
      ppid: Number(rest[1]),
      ticks: Number(rest[11]) + Number(rest[12]),
      rssBytes: Number(rest[21]) * PAGE,
    };
  } catch {
    return undefined;
  }
}

/** The process and all its descendants, as they are now. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const st = readStat(pid);
    if (!st) continue;
    const list = children.get(st.ppid);
    if (list) list.push(pid);
    else children.set(st.ppid, [pid]);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    const pid = todo.pop()!;
    out.push(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** CPU ms (user + system) and resident bytes of a process tree. */
export function treeUsage(root: number): { cpuMs: number; rssBytes: number } {
  let ticks = 0;
  let rss = 0;
  for (const pid of processTree(root)) {
    const st = readStat(pid);
    if (!st) continue;
    ticks += st.ticks;
    rss += st.rssBytes;
  }
  return { cpuMs: (ticks * 1000) / TICKS, rssBytes: rss };
}

/**
 * CPU ms per thread of one process: `main`, then each other thread by its id (Node names them all `node`; the worker
 * threads are those started last, the V8 and libuv helpers those started with the process).
 */
export function threadUsage(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = Number(tid) === pid ? 'main' : `t${tid}`;
      const text = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
      const ms = ((Number(rest[11]) + Number(rest[12])) * 1000) / TICKS;
      out.set(comm, (out.get(comm) ?? 0) + ms);
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** `threads` minus `before`, as `name ms, …` with the largest first. */
export function threadDelta(before: Map<string, number>, after: Map<string, number>): string {
  return [...after]
    .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${Math.round(v)}`)
    .join(', ');
}

export interface ServerProc {
  readonly url: string;
  readonly home: string;
  readonly proc: ChildProcess;
  /** CPU ms and RSS of the server's process tree */
  usage(): { cpuMs: number; rssBytes: number };
  req(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }>;
  json<T>(path: string): Promise<T>;
  /** SIGTERM, then waits for the exit (SIGKILL after 30 s); the home is removed unless `keepHome` */
  stop(opts?: { keepHome?: boolean }): Promise<void>;
}

export interface ServerOptions {
  /** an existing home (warm start); a fresh temporary one otherwise */
  home?: string;
  /** KUIPER__… settings */
  env?: Record<string, string>;
  /** how long to wait for the first answer of `GET /ping` */
  timeoutMs?: number;
}

/** Spawns `node scripts/start.mjs` on its own port and waits until `GET /ping` answers. */
export async function spawnServer(opts: ServerOptions = {}): Promise<ServerProc & { pingMs: number }> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), 'eddy-bench-srv-'));
  const port = await freePort();
  const t0 = performance.now();
  // EDDY_BENCH_PROF=<dir> profiles the server (node --cpu-prof; written when it exits)
  const prof = process.env.EDDY_BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.EDDY_BENCH_PROF}`] : [];
  const proc = spawn(process.execPath, [...prof, join(repoRoot(), 'scripts', 'start.mjs')], {
    env: {
      ...process.env,
      EDDY_HOME: home,
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: String(port),
      KUIPER__BASIC__CONSOLELOG: 'false',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
      ...(opts.env ?? {}),
    },
    stdio: ['ignore', 'ignore', process.env.EDDY_BENCH_VERBOSE ? 'inherit' : 'ignore'],
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode} before answering`);
    const ok = await fetch(`${url}/ping`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error('server did not answer /ping');
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  const pingMs = performance.now() - t0;
  const req = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };
  return {
    url,
    home,
    proc,
    pingMs,
    usage: () => treeUsage(proc.pid!),
    req,
    async json<T>(path: string): Promise<T> {
      const r = await req('GET', path);
      if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.text}`);
      return JSON.parse(r.text) as T;
    },
    async stop(o = {}) {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
      if (!o.keepHome && !opts.home) rmSync(home, { recursive: true, force: true });
    },
  };
}

/** The hand-written mqtt.js `SELECT *` program: subscribe, parse each message, publish it as a one-row list. */
const HAND_FORWARD = `
const mqtt = require(process.argv[1]);
const [inTopic, outTopic] = [process.argv[2], process.argv[3]];
const c = mqtt.connect('mqtt://127.0.0.1:1883');
c.on('message', (_t, payload) => {
  const row = JSON.parse(payload.toString());
  c.publish(outTopic, JSON.stringify([row]));
});
c.on('connect', () => c.subscribe(inTopic, { qos: 0 }, () => process.stdout.write('ready\\n')));
`;

export interface PeerProc {
  readonly pid: number;
  usage(): { cpuMs: number; rssBytes: number };
  stop(): Promise<void>;
}

/** Spawns the hand-written mqtt.js program forwarding `inTopic` to `outTopic`, and waits until it subscribed. */
export async function spawnHandForward(inTopic: string, outTopic: string): Promise<PeerProc> {
  const mqttPath = createRequire(import.meta.url).resolve('mqtt');
  const proc = spawn(process.execPath, ['-e', HAND_FORWARD, mqttPath, inTopic, outTopic], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.once('data', () => resolve());
    proc.once('exit', (code) => reject(new Error(`hand-written program exited with ${code}`)));
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    pid: proc.pid!,
    usage: () => treeUsage(proc.pid!),
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}
