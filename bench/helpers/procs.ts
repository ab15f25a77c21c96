/**
 * Processes the scale benchmarks measure side by side: an Eddy server (REST on an ephemeral port, fresh home) or a
 * hand-written mqtt.js program, each in its own child process reporting its own CPU time; a rate-paced MQTT
 * publisher; MQTT counters; and the statistics printed (median and spread over interleaved rounds).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import mqtt from 'mqtt';

export const BROKER_URL = 'mqtt://127.0.0.1:1883';

const WORKER = fileURLToPath(new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));

/** `--quick` on the command line (`npm run bench -- --quick`): fewer and shorter rounds. */
export const QUICK = process.argv.includes('--quick');

export interface Child {
  readonly proc: ChildProcess;
  /** CPU µs (user + system) the child used since it started */
  cpuUs(): Promise<number>;
  /** sends a command and waits for its answer */
  ask<T>(cmd: Record<string, unknown>): Promise<T>;
  close(): Promise<void>;
}

export interface EddyChild extends Child {
  readonly url: string;
  req(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }>;
}

function wrap(proc: ChildProcess): Child & { first: Promise<Record<string, unknown>> } {
  let seq = 0;
  const waiting = new Map<number, (v: unknown) => void>();
  let first: (v: Record<string, unknown>) => void = () => undefined;
  const firstP = new Promise<Record<string, unknown>>((resolve, reject) => {
    first = resolve;
    proc.once('exit', (code) => reject(new Error(`benchmark child exited with ${code}`)));
  });
  proc.on('message', (m: { seq?: number; value?: unknown } & Record<string, unknown>) => {
    if (m.seq === undefined) return first(m);
    waiting.get(m.seq)?.(m.value);
    waiting.delete(m.seq);
  });
  const ask = <T>(cmd: Record<string, unknown>): Promise<T> =>
    new Promise<T>((resolve) => {
      const id = ++seq;
      waiting.set(id, resolve as (v: unknown) => void);
      proc.send({ ...cmd, seq: id });
    });
  return {
    proc,
    first: firstP,
    ask,
    cpuUs: () => ask<number>({ cmd: 'cpu' }),
    close: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.send({ cmd: 'stop' });
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function forkWorker(args: string[]): ChildProcess {
  // EDDY_BENCH_PROF=<dir> profiles the children (node --cpu-prof) instead of the benchmark itself
  const prof = process.env.EDDY_BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.EDDY_BENCH_PROF}`] : [];
  return fork(WORKER, args, {
    execArgv: [...process.execArgv.filter((a) => !a.startsWith('--cpu-prof')), ...prof],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
}

/** An Eddy server in a child process; `env` adds KUIPER__… settings. */
export async function startEddy(env: Record<string, string> = {}): Promise<EddyChild> {
  const c = wrap(forkWorker(['eddy', JSON.stringify(env)]));
  const hello = await c.first;
  const url = String(hello.url);
  return {
    ...c,
    url,
    async req(method, path, body) {
      const res = await fetch(url + path, {
        method,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: res.status, text: await res.text() };
    },
  };
}

/** The hand-written mqtt.js filter program: subscribe, parse, `temperature > 50`, one-row list, publish QoS 0. */
export async function startHandFilter(inTopic: string, outTopic: string): Promise<Child> {
  const c = wrap(forkWorker(['hand-filter', inTopic, outTopic]));
  await c.first;
  return c;
}

const PUBLISHER = `
const mqtt = require(process.argv[1]);
const spec = process.argv[2];
// '@<prefix>@<n>' stands for the topics <prefix>0 … <prefix>n-1
const topics = spec.startsWith('@') ? Array.from({ length: Number(spec.split('@')[2]) }, (_, i) => spec.split('@')[1] + i) : spec.split(',');
const [rate, total] = [Number(process.argv[3]), Number(process.argv[4])];
const c = mqtt.connect('mqtt://127.0.0.1:1883');
c.on('connect', () => {
  let sent = 0;
  const t0 = Date.now();
  const step = () => {
    const due = Math.min(total, Math.floor(((Date.now() - t0) / 1000) * rate) + Math.ceil(rate / 100));
    while (sent < due) {
      const i = sent++;
      c.publish(topics[i % topics.length], JSON.stringify({ deviceId: 'dev' + (i % 100), temperature: (i * 37) % 100, humidity: 50 }));
    }
    if (sent < total) setTimeout(step, 10);
    else c.end(false, () => process.exit(0));
  };
  step();
});
`;

/**
 * Publishes `total` demo messages at `rate` msg/s, round-robin over `topics` (or over `<prefix>0 … <prefix>n-1`),
 * from a separate process.
 */
export async function publishDemo(
  topics: string[] | { prefix: string; n: number },
  rate: number,
  total: number,
): Promise<void> {
  const spec = Array.isArray(topics) ? topics.join(',') : `@${topics.prefix}@${topics.n}`;
  const mqttPath = createRequire(import.meta.url).resolve('mqtt');
  await new Promise<void>((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', PUBLISHER, mqttPath, spec, String(rate), String(total)], {
      stdio: 'ignore',
    });
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`publisher exited with ${code}`))));
    p.on('error', reject);
  });
}

/** How many of the demo messages `0..total-1` pass `temperature > 50`. */
export function demoPassing(total: number): number {
  let n = 0;
  for (let i = 0; i < total; i++) if ((i * 37) % 100 > 50) n++;
  return n;
}

export interface Counter {
  count(): number;
  /** waits until the count reaches `expected` or stops growing for `quietMs` */
  settle(expected: number, quietMs?: number): Promise<number>;
  close(): Promise<void>;
}

export async function counter(filter: string): Promise<Counter> {
  let n = 0;
  const c = await mqtt.connectAsync(BROKER_URL);
  c.on('message', () => n++);
  await c.subscribeAsync(filter, { qos: 0 });
  return {
    count: () => n,
    async settle(expected, quietMs = 1500) {
      let last = -1;
      let since = Date.now();
      while (n < expected) {
        if (n !== last) {
          last = n;
          since = Date.now();
        } else if (Date.now() - since > quietMs) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      return n;
    },
    close: () => c.endAsync(),
  };
}

export const median = (xs: number[]): number => {
  const s = xs.slice().sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** `median (min–max, n rounds)` */
export function spread(xs: number[], digits = 2): string {
  if (xs.length === 0) return '-';
  return `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}, n=${xs.length})`;
}

/** p-th percentile (0–100) of samples */
export function percentile(xs: number[], p: number): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The 1-minute load average, printed next to figures measured on a shared machine. */
export async function machineLoad(): Promise<string> {
  const os = await import('node:os');
  return `${os.loadavg()[0].toFixed(2)} (${os.cpus().length} cores)`;
}
