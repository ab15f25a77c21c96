/**
 * Isolation targets (issue 21) through real `npm start` servers (`node scripts/start.mjs`: the compiled server, its
 * worker threads included) and the local Mosquitto; CPU read from /proc/<pid>/stat for the whole process.
 *  1. `create`: CPU of the server for creating N rules (MQTT stream → filter → MQTT sink) on 2 workers, after one
 *     warm-up rule; with `EDDY_BENCH_PEER=<another checkout>` (e.g. a worktree of main) the peer's server is measured
 *     in the same run, rounds interleaved, and the ratio printed.
 *  2. `targets`: one server with a rule calling a looping JavaScript function, a rule filling its memoryLimit and 200
 *     rules on one SHARED stream fed at a steady rate (`EDDY_BENCH_RATE` msg/s): p99 of `GET /ping`, `GET /rules` and a
 *     rule's status polled meanwhile, whether every shared-stream rule delivered every message, the server's CPU, and
 *     a timeline of the rules' status, their sources' counts and the server's warnings; with `EDDY_BENCH_PEER` the
 *     peer's server in interleaved rounds too.
 * `EDDY_BENCH_ONLY=create|targets` runs one part; `--quick` runs fewer, shorter rounds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectAsync } from 'mqtt';
import { QUICK, machineLoad, percentile, sleep, spread } from './helpers/procs.js';

const here = fileURLToPath(new URL('.', import.meta.url));
/** this checkout (the module runs compiled, from dist/bench) */
const SELF = resolve(here, here.includes('/dist/') ? '../..' : '..');
const TICK_MS = 10; // USER_HZ is 100 on Linux

interface Server {
  readonly url: string;
  readonly pid: number;
  req(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }>;
  /** CPU ms (user + system, every thread) since the process started */
  cpuMs(): number;
  /** CPU ms of the main thread alone (the REST API's thread) */
  mainCpuMs(): number;
  /** what the server wrote to its console since it started, each line with the time it arrived */
  readonly lines: Array<{ at: number; text: string }>;
  stop(): Promise<void>;
}

/** utime + stime of a /proc stat file, in ms. */
function statCpuMs(file: string): number {
  // fields after the command name: utime and stime are the 12th and 13th
  const stat = readFileSync(file, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

async function startServer(checkout: string, env: Record<string, string>): Promise<Server> {
  const home = mkdtempSync(join(tmpdir(), 'eddy-bench-isolation-'));
  const child: ChildProcess = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: checkout,
    env: {
      ...process.env,
      EDDY_HOME: home,
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__CONSOLELOG: 'false',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // every line the server writes, with when it came (the targets part shows the workers' log lines on its timeline)
  const lines: Array<{ at: number; text: string }> = [];
  let partial = '';
  child.stdout?.on('data', (b: Buffer) => {
    const parts = (partial + b.toString()).split('\n');
    partial = parts.pop() ?? '';
    for (const text of parts) lines.push({ at: performance.now(), text });
  });
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${checkout}: the server did not start`)), 300_000);
    const look = (): void => {
      const m = lines.map((l) => /serving the REST API on (\S+)/.exec(l.text)).find((x) => x !== null);
      if (!m) return;
      clearTimeout(timer);
      child.stdout?.off('data', look);
      ok(m[1]);
    };
    child.stdout?.on('data', look);
    child.once('exit', (code) => fail(new Error(`${checkout}: the server exited with ${code}`)));
  });
  const pid = child.pid ?? 0;
  return {
    url,
    pid,
    lines,
    async req(method, path, body) {
      const res = await fetch(url + path, {
        method,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: res.status, text: await res.text() };
    },
    cpuMs: () => statCpuMs(`/proc/${pid}/stat`),
    mainCpuMs: () => statCpuMs(`/proc/${pid}/task/${pid}/stat`),
    async stop() {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
    },
  };
}

async function must(p: Promise<{ status: number; text: string }>): Promise<void> {
  const r = await p;
  if (r.status >= 300) throw new Error(r.text);
}

async function parallel(n: number, conc: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      for (let i = next++; i < n; i = next++) await fn(i);
    }),
  );
}

async function allRunning(s: Server, n: number): Promise<void> {
  for (;;) {
    const list = JSON.parse((await s.req('GET', '/rules')).text) as Array<{ status: string }>;
    if (list.filter((r) => r.status === 'Running').length >= n) return;
    await sleep(50);
  }
}

/**
 * CPU ms per rule of creating `n` rules on a fresh server of `checkout` (after one warm-up rule): the whole process,
 * and its main thread alone.
 */
async function createCpu(checkout: string, n: number, tag: string): Promise<{ total: number; main: number }> {
  const s = await startServer(checkout, { KUIPER__BASIC__WORKERS: '2' });
  try {
    const prefix = `eddy-bench/isolation/${process.pid}/${tag}/`;
    const warmups = 8;
    await parallel(n + warmups, 8, (i) =>
      must(s.req('POST', '/streams', { sql: `CREATE STREAM s${i} () WITH (DATASOURCE="${prefix}in/${i}")` })),
    );
    const rule = (i: number) => ({
      id: `r${i}`,
      sql: `SELECT * FROM s${i} WHERE temperature > 50`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${prefix}out/${i}` } }],
    });
    // the workers load, with their first rule, their modules and the MQTT client: not part of what a rule costs, so a
    // few rules first (placed by a hash of their ids, 8 leave a worker without one with odds of 1 in 128)
    for (let i = n; i < n + warmups; i++) await must(s.req('POST', '/rules', rule(i)));
    await allRunning(s, warmups);
    await sleep(1000);
    const c0 = s.cpuMs();
    const m0 = s.mainCpuMs();
    await parallel(n, 8, (i) => must(s.req('POST', '/rules', rule(i))));
    await allRunning(s, n + warmups);
    return { total: (s.cpuMs() - c0) / n, main: (s.mainCpuMs() - m0) / n };
  } finally {
    await s.stop();
  }
}

async function createPart(out: Record<string, string>): Promise<void> {
  const peer = process.env.EDDY_BENCH_PEER;
  const n = QUICK ? 100 : 300;
  const rounds = QUICK ? 2 : 4;
  const self: Array<{ total: number; main: number }> = [];
  const other: Array<{ total: number; main: number }> = [];
  for (let r = 0; r < rounds; r++) {
    // interleaved, the order alternating: neither side always runs on the cooler machine
    const order = peer ? (r % 2 === 0 ? ['self', 'peer'] : ['peer', 'self']) : ['self'];
    for (const who of order) {
      const ms = await createCpu(who === 'self' ? SELF : peer!, n, `${who}${r}`);
      (who === 'self' ? self : other).push(ms);
    }
  }
  out[`create: CPU ms per rule, this checkout (${n} rules, 2 workers): process / main thread`] =
    `${spread(self.map((x) => x.total))} / ${spread(self.map((x) => x.main))}`;
  if (peer) {
    out[`create: CPU ms per rule, ${peer}: process / main thread`] =
      `${spread(other.map((x) => x.total))} / ${spread(other.map((x) => x.main))}`;
    out['create: CPU ratio this / peer, process (target ≤ 0.6)'] = spread(self.map((v, i) => v.total / other[i].total));
    out['create: CPU ratio this / peer, main thread'] = spread(self.map((v, i) => v.main / other[i].main));
  }
  out['create: load average'] = await machineLoad();
}

/** Polls `path` every `everyMs` until `stop` resolves; the round-trip times in ms. */
async function poll(s: Server, path: string, everyMs: number, stop: Promise<void>): Promise<number[]> {
  let done = false;
  void stop.then(() => (done = true));
  const times: number[] = [];
  while (!done) {
    const t0 = performance.now();
    await s.req('GET', path);
    times.push(performance.now() - t0);
    await sleep(everyMs);
  }
  return times;
}

type Status = Record<string, unknown>;

/** The counter `records_in_total` of a rule's first source node in its status. */
function sourceIn(st: Status): number {
  const key = Object.keys(st).find((k) => /^source_.*_records_in_total$/.test(k));
  return key === undefined ? 0 : Number(st[key]);
}

/**
 * Until `stop` resolves, reads the status of rules `ids` every 500 ms and notes, in s since `t0()`: each change of
 * a rule's status or message, and every 5 s the count its source read; then the server's warnings and errors.
 */
async function timeline(s: Server, ids: string[], t0: () => number, stop: Promise<void>): Promise<string[]> {
  let done = false;
  void stop.then(() => (done = true));
  const events: Array<{ at: number; text: string }> = [];
  const last = new Map<string, string>();
  let nextCount = 0;
  while (!done) {
    const at = performance.now();
    const all = await Promise.all(
      ids.map(async (id) => JSON.parse((await s.req('GET', `/rules/${id}/status`)).text) as Status),
    );
    all.forEach((st, i) => {
      const state = `${String(st.status)}${st.message === undefined ? '' : `: ${String(st.message)}`}`;
      if (last.get(ids[i]) !== state) events.push({ at, text: `${ids[i]} (worker ${String(st.worker)}) ${state}` });
      last.set(ids[i], state);
    });
    if (at >= nextCount) {
      events.push({ at, text: `source in: ${all.map((st, i) => `${ids[i]} ${sourceIn(st)}`).join(', ')}` });
      nextCount = at + 5000;
    }
    await sleep(500);
  }
  // the console's lines read `<time> LEVEL [context] message …`; a stack's lines are indented below theirs
  for (const l of s.lines)
    if (/^\S+ (WARN|ERROR|FATAL) /.test(l.text)) events.push({ at: l.at, text: l.text.slice(0, 300) });
  return events.sort((a, b) => a.at - b.at).map((e) => `${((e.at - t0()) / 1000).toFixed(1).padStart(6)} s  ${e.text}`);
}

/** What one run of the targets part measured on one server. */
interface TargetsRound {
  delivered: number;
  expected: number;
  /** shared-stream rules that got every message */
  complete: number;
  /** p50 and p99 ms of `GET /ping`, `GET /rules` and a rule's status */
  ping: [number, number];
  list: [number, number];
  status: [number, number];
  hoarder: string;
  /** the first rule that missed messages: where it ran and what its nodes counted */
  missed: string | undefined;
  /** s to publish every message (the rate kept), and until the last row arrived (or 30 s more) */
  published: number;
  wall: number;
  /** the server's CPU over that time, in cores: the whole process and its main thread */
  cores: number;
  mainCores: number;
  perWorker: string;
  timeline: string[];
  load: string;
}

async function targetsRound(checkout: string, rate: number, seconds: number): Promise<TargetsRound> {
  const rules = 200;
  // the server's warnings and errors go to its console: the timeline shows them (a worker replaced, a rule stopped)
  const s = await startServer(checkout, {
    KUIPER__BASIC__WORKERS: '2',
    KUIPER__BASIC__CONSOLELOG: 'true',
    KUIPER__BASIC__LOGLEVEL: 'warn',
  });
  const base = `eddy-bench/isolation/${process.pid}/targets/${Date.now()}`;
  const sub = await connectAsync('mqtt://127.0.0.1:1883');
  const pub = await connectAsync('mqtt://127.0.0.1:1883');
  try {
    const got = new Map<string, Set<number>>();
    sub.on('message', (topic, payload) => {
      let set = got.get(topic);
      if (!set) got.set(topic, (set = new Set()));
      set.add((JSON.parse(payload.toString()) as { n: number }).n);
    });
    await sub.subscribeAsync(`${base}/out/+`, { qos: 0 });
    await must(
      s.req('POST', '/udf/javascript', {
        id: 'spin',
        description: 'loops',
        script: 'function spin(x) { while (true) {} return x; }',
        isAgg: false,
      }),
    );
    await must(s.req('POST', '/streams', { sql: `CREATE STREAM js (n BIGINT) WITH (DATASOURCE="${base}/js")` }));
    await must(s.req('POST', '/rules', { id: 'looping', sql: 'SELECT spin(n) FROM js', actions: [{ nop: {} }] }));
    await must(
      s.req('POST', '/streams', { sql: `CREATE STREAM big (n BIGINT, pad STRING) WITH (DATASOURCE="${base}/big")` }),
    );
    await must(
      s.req('POST', '/rules', {
        id: 'hoarder',
        sql: 'SELECT count(*) FROM big GROUP BY TUMBLINGWINDOW(hh, 1)',
        actions: [{ nop: {} }],
        options: { memoryLimit: 50_000_000 },
      }),
    );
    await must(
      s.req('POST', '/streams', {
        sql: `CREATE STREAM shared (n BIGINT, temperature FLOAT) WITH (DATASOURCE="${base}/shared", SHARED="true")`,
      }),
    );
    await parallel(rules, 8, (i) =>
      must(
        s.req('POST', '/rules', {
          id: `sh${i}`,
          sql: 'SELECT n FROM shared WHERE temperature > 0',
          actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${base}/out/${i}`, sendSingle: true } }],
        }),
      ),
    );
    await allRunning(s, rules + 2);
    // which worker runs which rule: one shared-stream rule of each worker goes on the timeline
    const workerOf = new Map<string, number>();
    await parallel(rules, 8, async (i) => {
      const st = JSON.parse((await s.req('GET', `/rules/sh${i}/status`)).text) as Status;
      workerOf.set(`sh${i}`, Number(st.worker));
    });
    const byWorker = new Map<number, string[]>();
    for (const [id, w] of workerOf) byWorker.set(w, [...(byWorker.get(w) ?? []), id]);
    let finish: () => void = () => undefined;
    const stop = new Promise<void>((r) => (finish = r));
    let t0 = performance.now();
    const events = timeline(s, ['looping', 'hoarder', ...[...byWorker.values()].map((ids) => ids[0])], () => t0, stop);
    const pings = poll(s, '/ping', 100, stop);
    const lists = poll(s, '/rules', 250, stop);
    const statuses = poll(s, '/rules/sh0/status', 100, stop);
    const pad = 'x'.repeat(200_000);
    const total = rate * seconds;
    // paced by the clock, not by sleeps (a sleep of under a few ms is not kept): message n leaves at n / rate s
    t0 = performance.now();
    const cpu0 = s.cpuMs();
    const main0 = s.mainCpuMs();
    for (let n = 0; n < total; n++) {
      const due = t0 + (n * 1000) / rate - performance.now();
      if (due > 0) await sleep(due);
      await pub.publishAsync(`${base}/shared`, JSON.stringify({ n, temperature: 20 }), { qos: 1 });
      if (n % 4 === 0) await pub.publishAsync(`${base}/js`, JSON.stringify({ n }));
      // the memory-filling rule needs 250 of these 200 KB messages; more would only load the broker
      if (n < 400) await pub.publishAsync(`${base}/big`, JSON.stringify({ n, pad }));
    }
    const published = performance.now() - t0;
    // what is still on its way
    const end = Date.now() + 30_000;
    while (Date.now() < end && [...got.values()].reduce((a, v) => a + v.size, 0) < rules * total) await sleep(200);
    const wall = performance.now() - t0;
    const cores = (s.cpuMs() - cpu0) / wall;
    const mainCores = (s.mainCpuMs() - main0) / wall;
    finish();
    const [p, l, st, tl] = await Promise.all([pings, lists, statuses, events]);
    const hoarder = JSON.parse((await s.req('GET', '/rules/hoarder/status')).text) as Status;
    const missed = [...Array(rules).keys()].filter((i) => got.get(`${base}/out/${i}`)?.size !== total);
    let missedText: string | undefined;
    if (missed.length > 0) {
      const first = JSON.parse((await s.req('GET', `/rules/sh${missed[0]}/status`)).text) as Status;
      const counters = Object.entries(first).filter(([k]) =>
        /records_(in|out)_total|dropped|exceptions_total|^worker$/.test(k),
      );
      missedText = `sh${missed[0]} got ${got.get(`${base}/out/${missed[0]}`)?.size ?? 0}: ${counters.map(([k, v]) => `${k}=${String(v)}`).join(', ')}`;
    }
    const p50p99 = (xs: number[]): [number, number] => [percentile(xs, 50), percentile(xs, 99)];
    return {
      delivered: [...got.values()].reduce((a, v) => a + v.size, 0),
      expected: rules * total,
      complete: rules - missed.length,
      ping: p50p99(p),
      list: p50p99(l),
      status: p50p99(st),
      hoarder: String(hoarder.message ?? hoarder.status),
      missed: missedText,
      published: published / 1000,
      wall: wall / 1000,
      cores,
      mainCores,
      perWorker: [...byWorker]
        .sort((a, b) => a[0] - b[0])
        .map(([w, ids]) => `worker ${w}: ${ids.length}`)
        .join(', '),
      timeline: tl,
      load: await machineLoad(),
    };
  } finally {
    await sub.endAsync();
    await pub.endAsync();
    await s.stop();
  }
}

/**
 * The targets at `EDDY_BENCH_RATE` messages a second; with `EDDY_BENCH_PEER` the peer's server too, rounds interleaved
 * (`EDDY_BENCH_ROUNDS`, default 2 with a peer, else 1): what each round delivered, the p99 latencies' median and
 * spread, and each side's first timeline.
 */
async function targetsPart(out: Record<string, string>): Promise<void> {
  // each message of the shared stream fans out to 200 rules and 200 MQTT publishes
  const rate = Number(process.env.EDDY_BENCH_RATE ?? (QUICK ? 10 : 20));
  const seconds = QUICK ? 10 : 30;
  const peer = process.env.EDDY_BENCH_PEER;
  const rounds = Number(process.env.EDDY_BENCH_ROUNDS ?? (peer ? 2 : 1));
  const sides: Array<[string, string]> = peer
    ? [
        ['this checkout', SELF],
        [peer, peer],
      ]
    : [['this checkout', SELF]];
  const results = new Map<string, TargetsRound[]>(sides.map(([name]) => [name, []]));
  for (let r = 0; r < rounds; r++) {
    // interleaved, the order alternating: neither side always runs on the cooler machine
    for (const [name, checkout] of r % 2 === 0 ? sides : [...sides].reverse())
      results.get(name)!.push(await targetsRound(checkout, rate, seconds));
  }
  for (const [name, rs] of results) {
    const k = `targets, ${name}:`;
    out[`${k} 200 shared-stream rules at ${rate} msg/s for ${seconds} s, each round`] = rs
      .map((x) => `${x.delivered} of ${x.expected} rows, ${x.complete} of 200 rules got every message (load ${x.load})`)
      .join('; ');
    const ms = (pick: (x: TargetsRound) => [number, number]) =>
      `${spread(
        rs.map((x) => pick(x)[0]),
        1,
      )} / ${spread(
        rs.map((x) => pick(x)[1]),
        1,
      )}`;
    out[`${k} GET /ping p50 / p99 ms (target p99 ≤ 50)`] = ms((x) => x.ping);
    out[`${k} GET /rules p50 / p99 ms (target p99 ≤ 50)`] = ms((x) => x.list);
    out[`${k} GET /rules/{id}/status p50 / p99 ms (target p99 ≤ 50)`] = ms((x) => x.status);
    out[`${k} published in s (the rate kept) / until the last row or 30 s more`] = `${spread(
      rs.map((x) => x.published),
      1,
    )} / ${spread(
      rs.map((x) => x.wall),
      1,
    )}`;
    out[`${k} server CPU in cores over that time: process / main thread`] =
      `${spread(rs.map((x) => x.cores))} / ${spread(rs.map((x) => x.mainCores))}`;
    out[`${k} the memory-filling rule`] = rs[0].hoarder;
    const missed = rs.find((x) => x.missed !== undefined)?.missed;
    if (missed !== undefined) out[`${k} first rule that missed messages`] = missed;
    out[`${k} shared-stream rules per worker`] = rs[0].perWorker;
    out[`${k} timeline of round 1 (s from the first message)`] = `\n${rs[0].timeline.join('\n')}`;
  }
}

export async function run(): Promise<Record<string, string>> {
  const only = process.env.EDDY_BENCH_ONLY;
  const out: Record<string, string> = {};
  if (!only || only === 'create') await createPart(out);
  if (!only || only === 'targets') await targetsPart(out);
  return out;
}
