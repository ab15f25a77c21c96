/**
 * The scale targets of issue 22, measured on the real server: `node scripts/start.mjs` (what `npm start` runs) in a
 * process of its own, the local Mosquitto, CPU time and resident memory read from /proc for the server's whole
 * process tree (worker threads and child processes included), and, where there is one, the hand-written mqtt.js
 * program run in the same rounds on the same messages. Every part prints the 1-minute load average at its start and
 * end. Parts (`EDDY_BENCH_ONLY=shared,create,interleaved,start,idle,warmup` picks some; `--quick` shortens them):
 *
 *  - shared: 1, 100, 300 and 1,000 rules on one `SHARED="true"` MQTT stream fed 500 msg/s for 20 s: resident memory
 *    before the rules, with them idle, its peak while fed and at the end; the main thread's heap; per rule.
 *  - create: 8,000 streams + 8,000 rules (each on its own topic, into MQTT) created over REST with 8 requests in
 *    flight until all run; the server's CPU per stream + rule; then the 8,000 rules fed 800 msg/s in total while
 *    `GET /rules` and `GET /rules/status/all` are polled: their p50/p99, the server's CPU and memory per rule.
 *  - interleaved: 4,000 streams and rules created over REST with 8 requests in flight, each stream just before its
 *    rule (creations of streams and rules interleave, as when a client sets up one pipeline after another): the
 *    server's CPU per stream + rule and the main thread's.
 *  - start: a home holding 1,000 stored rules started again and again: spawn → first `GET /ping` answer, and
 *    spawn → all 1,000 rules running.
 *  - idle: resident memory of an idle server with no rule, then with 4 MQTT rules on its (default) 2 workers.
 *  - warmup: a fresh server with one MQTT → MQTT `SELECT *` rule and the hand-written mqtt.js program, fed the same
 *    messages at 10k msg/s: CPU per message of each over the first 50k messages, and over the next 50k.
 */
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { counter, percentile, publishDemo, QUICK, sleep, spread } from './helpers/procs.js';
import { spawnHandForward, spawnServer, threadUsage, type ServerProc } from './helpers/server.js';

const MB = 1024 * 1024;
const load = () => loadavg()[0].toFixed(2);
const mb = (b: number) => (b / MB).toFixed(1);

/**
 * CPU ms by kind of thread between two readings: the main thread; the rule workers, that is the threads not there at
 * `startup` (before the first rule), each given; and the threads the process started with, V8's garbage-collection and
 * compiler helpers and libuv's pool.
 */
function byKind(startup: Map<string, number>, before: Map<string, number>, after: Map<string, number>): string {
  let helpers = 0;
  const workers: number[] = [];
  for (const [name, ms] of after) {
    const d = ms - (before.get(name) ?? 0);
    if (name === 'main') continue;
    if (startup.has(name)) helpers += d;
    else workers.push(d);
  }
  const main = (after.get('main') ?? 0) - (before.get('main') ?? 0);
  const w = workers.reduce((a, b) => a + b, 0);
  const each = workers.length > 0 ? ` (${workers.map((x) => Math.round(x)).join(' + ')})` : '';
  return `main ${Math.round(main)}, rule workers ${Math.round(w)}${each}, V8 and libuv helpers ${Math.round(helpers)}`;
}

/** Runs `fn(i)` for i in [0, n) with `conc` calls in flight. */
async function parallel(n: number, conc: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      for (let i = next++; i < n; i = next++) await fn(i);
    }),
  );
}

async function must(p: Promise<{ status: number; text: string }>): Promise<void> {
  const r = await p;
  if (r.status >= 300) throw new Error(r.text);
}

async function allRunning(s: ServerProc, n: number, deadlineMs = 600_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const list = await s.json<Array<{ status: string }>>('/rules').catch(() => []);
    if (list.length === n && list.every((r) => r.status === 'Running')) return;
    if (Date.now() > end) throw new Error(`not all ${n} rules running`);
    await sleep(20);
  }
}

async function mainHeap(s: ServerProc): Promise<number> {
  return (await s.json<{ memory: { heapUsed: number } }>('/eddy/server')).memory.heapUsed;
}

/** Samples the server's RSS every 100 ms until stopped; returns the peak. */
function rssPeak(s: ServerProc): { stop: () => Promise<number> } {
  let peak = 0;
  let on = true;
  const loop = (async () => {
    while (on) {
      peak = Math.max(peak, s.usage().rssBytes);
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return Math.max(peak, s.usage().rssBytes);
    },
  };
}

// ------------------------------------------------------------------------------------------------ shared

async function shared(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const rate = 500;
  const seconds = QUICK ? 10 : 20;
  // EDDY_BENCH_SHARED_RULES=1,300 picks the rule counts
  const counts =
    process.env.EDDY_BENCH_SHARED_RULES?.split(',').map(Number) ?? (QUICK ? [1, 100, 300] : [1, 100, 300, 1000]);
  for (const n of counts) {
    const l0 = load();
    const s = await spawnServer();
    try {
      const tag = `bench/scale/shared/${process.pid}/${Date.now()}`;
      await must(
        s.req('POST', '/streams', {
          sql: `CREATE STREAM sh () WITH (DATASOURCE="${tag}", FORMAT="json", SHARED="true")`,
        }),
      );
      await sleep(2000);
      const before = s.usage().rssBytes;
      const heapBefore = await mainHeap(s);
      await parallel(n, 8, (i) =>
        must(
          s.req('POST', '/rules', {
            id: `r${i}`,
            sql: 'SELECT * FROM sh WHERE temperature > 50',
            actions: [{ nop: {} }],
          }),
        ),
      );
      await allRunning(s, n);
      await sleep(2000);
      const idle = s.usage().rssBytes;
      const peak = rssPeak(s);
      await publishDemo([tag], rate, rate * seconds);
      await sleep(1000);
      const top = await peak.stop();
      const end = s.usage().rssBytes;
      const heapEnd = await mainHeap(s);
      // every rule took in every message: a rule that dropped or never subscribed fails the part
      const st = await s.json<Record<string, unknown>>(`/rules/r${n - 1}/status`);
      const got = Object.entries(st)
        .filter(([k]) => k.startsWith('source_') && k.endsWith('_records_in_total'))
        .reduce((a, [, v]) => a + Number(v), 0);
      // a rule that never subscribed fails the part; messages lost on the way (QoS 0 under load) are reported
      if (got === 0) throw new Error(`shared ${n}: the last rule took in nothing`);
      out[`shared stream, ${n} rules at ${rate} msg/s: RSS before rules / idle / peak / end (MB)`] =
        `${mb(before)} / ${mb(idle)} / ${mb(top)} / ${mb(end)}`;
      out[`shared stream, ${n} rules: per rule RSS (end − before) / main heap (KB)`] =
        `${((end - before) / n / 1024).toFixed(0)} / ${((heapEnd - heapBefore) / n / 1024).toFixed(0)}`;
      out[`shared stream, ${n} rules: messages the last rule took in / published`] = `${got} / ${rate * seconds}`;
      out[`shared stream, ${n} rules: load at start / end`] = `${l0} / ${load()}`;
    } finally {
      await s.stop();
    }
  }
  out['target (300 rules)'] = 'RSS ≤ 150 MB, peak included';
  return out;
}

// ------------------------------------------------------------------------------------------------ create

async function create(): Promise<Record<string, string>> {
  const n = QUICK ? 2000 : 8000;
  const l0 = load();
  const s = await spawnServer();
  try {
    const tag = `bench/scale/create/${process.pid}/${Date.now()}/`;
    const rss0 = s.usage().rssBytes;
    const c0 = s.usage().cpuMs;
    const th0 = threadUsage(s.proc.pid!);
    const t0 = performance.now();
    await parallel(n, 8, (i) =>
      must(
        s.req('POST', '/streams', { sql: `CREATE STREAM s${i} () WITH (DATASOURCE="${tag}in/${i}", FORMAT="json")` }),
      ),
    );
    const t1 = performance.now();
    const th1 = threadUsage(s.proc.pid!);
    await parallel(n, 8, (i) =>
      must(
        s.req('POST', '/rules', {
          id: `r${i}`,
          sql: `SELECT * FROM s${i} WHERE temperature > 50`,
          actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${tag}out/${i}` } }],
        }),
      ),
    );
    await allRunning(s, n);
    const t2 = performance.now();
    const c1 = s.usage().cpuMs;
    const th2 = threadUsage(s.proc.pid!);
    await sleep(3000);
    const lat: Record<string, number[]> = { '/rules': [], '/rules/status/all': [] };
    let on = true;
    const poll = (async () => {
      while (on) {
        for (const path of Object.keys(lat)) {
          const t = performance.now();
          await s.req('GET', path);
          lat[path].push(performance.now() - t);
        }
        await sleep(100);
      }
    })();
    const rate = 800;
    const seconds = QUICK ? 10 : 20;
    const c2 = s.usage().cpuMs;
    const w0 = performance.now();
    await publishDemo({ prefix: `${tag}in/`, n }, rate, rate * seconds);
    const c3 = s.usage().cpuMs;
    const wall = performance.now() - w0;
    on = false;
    await poll;
    const rss1 = s.usage().rssBytes;
    const stat = (xs: number[]) =>
      `${percentile(xs, 50).toFixed(1)} / ${percentile(xs, 99).toFixed(1)} (max ${Math.max(...xs).toFixed(1)}, ${xs.length} polls)`;
    return {
      [`create: ${n} streams (s) / ${n} rules until all run (s)`]: `${((t1 - t0) / 1000).toFixed(1)} / ${((t2 - t1) / 1000).toFixed(1)}`,
      [`create: server CPU ms per stream + rule (target ≤ 1)`]: ((c1 - c0) / n).toFixed(2),
      'create: server CPU ms by thread, streams phase': byKind(th0, th0, th1),
      'create: server CPU ms by thread, rules phase': byKind(th0, th1, th2),
      [`${n} rules at ${rate} msg/s: server CPU % of a core (while polling the lists)`]: (
        ((c3 - c2) / wall) *
        100
      ).toFixed(1),
      [`${n} rules: RSS per rule (KB)`]: ((rss1 - rss0) / n / 1024).toFixed(0),
      [`${n} rules running: GET /rules p50 / p99 ms (target p99 ≤ 100)`]: stat(lat['/rules']),
      [`${n} rules running: GET /rules/status/all p50 / p99 ms (target p99 ≤ 100)`]: stat(lat['/rules/status/all']),
      'create: load at start / end': `${l0} / ${load()}`,
    };
  } finally {
    await s.stop();
  }
}

// ------------------------------------------------------------------------------------------------ interleaved

async function interleaved(): Promise<Record<string, string>> {
  const n = QUICK ? 1000 : 4000;
  const l0 = load();
  const s = await spawnServer();
  try {
    const tag = `bench/scale/interleaved/${process.pid}/${Date.now()}/`;
    const c0 = s.usage().cpuMs;
    const th0 = threadUsage(s.proc.pid!);
    const t0 = performance.now();
    await parallel(n, 8, async (i) => {
      await must(
        s.req('POST', '/streams', { sql: `CREATE STREAM s${i} () WITH (DATASOURCE="${tag}in/${i}", FORMAT="json")` }),
      );
      await must(
        s.req('POST', '/rules', {
          id: `r${i}`,
          sql: `SELECT * FROM s${i} WHERE temperature > 50`,
          actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${tag}out/${i}` } }],
        }),
      );
    });
    await allRunning(s, n);
    const wall = performance.now() - t0;
    return {
      [`interleaved: ${n} streams + rules, each stream before its rule, until all run (s)`]: (wall / 1000).toFixed(1),
      'interleaved: server CPU ms per stream + rule (target ≤ 1)': ((s.usage().cpuMs - c0) / n).toFixed(2),
      'interleaved: server CPU ms by thread': byKind(th0, th0, threadUsage(s.proc.pid!)),
      'interleaved: load at start / end': `${l0} / ${load()}`,
    };
  } finally {
    await s.stop();
  }
}

// ------------------------------------------------------------------------------------------------ start

async function start(): Promise<Record<string, string>> {
  const rules = 1000;
  const seeder = await spawnServer();
  const home = seeder.home;
  try {
    await must(
      seeder.req('POST', '/streams', {
        sql: 'CREATE STREAM benchstart (a BIGINT, b FLOAT) WITH (TYPE="memory", DATASOURCE="bench/startup", FORMAT="json", SHARED="true")',
      }),
    );
    await parallel(rules, 8, (i) =>
      must(
        seeder.req('POST', '/rules', {
          id: `start${i}`,
          sql: `SELECT a, b * 2 AS c FROM benchstart WHERE a > ${i}`,
          actions: [{ nop: {} }],
        }),
      ),
    );
    await seeder.stop({ keepHome: true });
    const l0 = load();
    const pings: number[] = [];
    const running: number[] = [];
    for (let i = 0; i < (QUICK ? 2 : 5); i++) {
      const t0 = performance.now();
      const s = await spawnServer({ home });
      try {
        pings.push(s.pingMs / 1000);
        await allRunning(s, rules);
        running.push((performance.now() - t0) / 1000);
      } finally {
        await s.stop();
      }
    }
    return {
      [`warm start, ${rules} stored rules: spawn → /ping (s) (target ≤ 1)`]: spread(pings),
      [`warm start, ${rules} stored rules: spawn → all running (s) (target ≤ 2)`]: spread(running),
      'start: load at start / end': `${l0} / ${load()}`,
    };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------------------ idle

async function idle(): Promise<Record<string, string>> {
  const l0 = load();
  const s = await spawnServer();
  try {
    await sleep(5000);
    const none = s.usage().rssBytes;
    const tag = `bench/scale/idle/${process.pid}/${Date.now()}/`;
    for (let i = 0; i < 4; i++) {
      await must(
        s.req('POST', '/streams', { sql: `CREATE STREAM i${i} () WITH (DATASOURCE="${tag}${i}", FORMAT="json")` }),
      );
      await must(
        s.req('POST', '/rules', {
          id: `i${i}`,
          sql: `SELECT * FROM i${i}`,
          actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${tag}out/${i}` } }],
        }),
      );
    }
    await allRunning(s, 4);
    await sleep(10_000);
    const four = s.usage().rssBytes;
    return {
      'idle server RSS: no rule / 4 MQTT rules on the 2 default workers (MB) (target ≤ 130 loaded)': `${mb(none)} / ${mb(four)}`,
      'idle: load at start / end': `${l0} / ${load()}`,
    };
  } finally {
    await s.stop();
  }
}

// ------------------------------------------------------------------------------------------------ warmup

async function warmup(): Promise<Record<string, string>> {
  const rate = 10_000;
  const chunk = 50_000;
  const rounds = QUICK ? 2 : 3;
  const first: number[] = [];
  const second: number[] = [];
  const l0 = load();
  let lost = 0;
  for (let round = 0; round < rounds; round++) {
    const tag = `bench/scale/warmup/${process.pid}/${Date.now()}/`;
    const s = await spawnServer();
    const peer = await spawnHandForward(`${tag}in`, `${tag}hand`);
    const outs = await Promise.all([counter(`${tag}eddy`), counter(`${tag}hand`)]);
    try {
      await must(
        s.req('POST', '/streams', { sql: `CREATE STREAM demo () WITH (DATASOURCE="${tag}in", FORMAT="json")` }),
      );
      await must(
        s.req('POST', '/rules', {
          id: 'w',
          sql: 'SELECT * FROM demo',
          actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${tag}eddy` } }],
        }),
      );
      await allRunning(s, 1);
      await sleep(1000);
      let handFinal = 0;
      for (const [k, into] of [
        [1, first],
        [2, second],
      ] as const) {
        const e0 = s.usage().cpuMs;
        const h0 = peer.usage().cpuMs;
        await publishDemo([`${tag}in`], rate, chunk);
        const [eddyGot, handGot] = await Promise.all(outs.map((c) => c.settle(chunk * k)));
        // Eddy must deliver everything; the hand-written program (QoS 0, no queue of its own) may lose under load
        if (eddyGot !== chunk * k) throw new Error(`warm-up: Eddy delivered ${eddyGot} of ${chunk * k}`);
        handFinal = handGot;
        into.push((s.usage().cpuMs - e0) / (peer.usage().cpuMs - h0));
      }
      lost += chunk * 2 - handFinal;
    } finally {
      await Promise.all(outs.map((c) => c.close()));
      await peer.stop();
      await s.stop();
    }
  }
  return {
    [`warm-up at ${rate} msg/s, fresh server: CPU / hand-written mqtt.js, first ${chunk} messages (target ≤ 1.0)`]:
      spread(first),
    [`warm-up: the next ${chunk} messages`]: spread(second),
    'warm-up: messages the hand-written program lost (all rounds)': String(lost),
    'warm-up: load at start / end': `${l0} / ${load()}`,
  };
}

const PARTS: Record<string, () => Promise<Record<string, string>>> = {
  shared,
  create,
  interleaved,
  start,
  idle,
  warmup,
};

export async function run(): Promise<Record<string, string>> {
  const only = process.env.EDDY_BENCH_ONLY?.split(',');
  const out: Record<string, string> = {
    measured: 'the real server (scripts/start.mjs) and Mosquitto; CPU and RSS from /proc',
  };
  for (const [name, part] of Object.entries(PARTS)) if (!only || only.includes(name)) Object.assign(out, await part());
  return out;
}
