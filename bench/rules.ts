/**
 * Many rules, each on its own MQTT topic, on a real Eddy server driven over REST:
 *  1. 2,000 rules against 20 rules at 800 msg/s in total (`SELECT * FROM sN WHERE temperature > 50` → mqtt): the two
 *     servers run side by side fed by one publisher, rounds interleaved; prints the CPU ratio and the p99 latency
 *     of `GET /rules` polled every 100 ms on the loaded servers.
 *  2. 8,000 rules created and started: the time from the first `POST /rules` until `GET /rules` lists every rule
 *     running (the streams are created first and timed apart), with 8 requests in flight.
 * `EDDY_BENCH_ONLY=many|create` runs one part; `EDDY_BENCH_WORKERS=N` sets `basic.workers` of the part 2 server.
 */
import {
  QUICK,
  machineLoad,
  percentile,
  publishDemo,
  sleep,
  spread,
  startEddy,
  type EddyChild,
} from './helpers/procs.js';

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

async function createRules(
  e: EddyChild,
  n: number,
  prefix: string,
  conc: number,
): Promise<{ streamsMs: number; rulesMs: number; rulesCpuMs: number }> {
  const t0 = performance.now();
  await parallel(n, conc, (i) =>
    must(
      e.req('POST', '/streams', { sql: `CREATE STREAM s${i} () WITH (DATASOURCE="${prefix}in/${i}", FORMAT="json")` }),
    ),
  );
  const c1 = await e.cpuUs();
  const t1 = performance.now();
  await parallel(n, conc, (i) =>
    must(
      e.req('POST', '/rules', {
        id: `r${i}`,
        sql: `SELECT * FROM s${i} WHERE temperature > 50`,
        actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${prefix}out/${i}` } }],
      }),
    ),
  );
  for (;;) {
    const list = JSON.parse((await e.req('GET', '/rules')).text) as Array<{ status: string }>;
    if (list.length === n && list.every((r) => r.status === 'Running')) break;
    await sleep(50);
  }
  const rulesMs = performance.now() - t1;
  return { streamsMs: t1 - t0, rulesMs, rulesCpuMs: ((await e.cpuUs()) - c1) / 1000 };
}

/** Polls `GET /rules` every 100 ms until `stop()` resolves; returns the latencies (ms). */
function pollRules(e: EddyChild): { stop: () => Promise<number[]> } {
  const lat: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      await e.req('GET', '/rules');
      lat.push(performance.now() - t);
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return lat;
    },
  };
}

async function manyVsFew(): Promise<Record<string, string | number>> {
  const rounds = QUICK ? 1 : 2;
  const rate = 800;
  const seconds = QUICK ? 5 : 10;
  const ratios: number[] = [];
  const manyUs: number[] = [];
  const fewUs: number[] = [];
  const manyP99: number[] = [];
  const fewP99: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const tag = `bench/rules/${process.pid}/${Date.now()}/`;
    const [many, few] = await Promise.all([startEddy(), startEddy()]);
    try {
      await createRules(many, 2000, `${tag}m/`, 8);
      await createRules(few, 20, `${tag}f/`, 8);
      await sleep(1000);
      const [m0, f0] = await Promise.all([many.cpuUs(), few.cpuUs()]);
      const pm = pollRules(many);
      const pf = pollRules(few);
      // one publisher per server, both at 800 msg/s in total over their own rules' topics
      await Promise.all([
        publishDemo({ prefix: `${tag}m/in/`, n: 2000 }, rate, rate * seconds),
        publishDemo({ prefix: `${tag}f/in/`, n: 20 }, rate, rate * seconds),
      ]);
      const [lm, lf] = await Promise.all([pm.stop(), pf.stop()]);
      const [m1, f1] = await Promise.all([many.cpuUs(), few.cpuUs()]);
      manyUs.push((m1 - m0) / (rate * seconds));
      fewUs.push((f1 - f0) / (rate * seconds));
      ratios.push((m1 - m0) / (f1 - f0));
      manyP99.push(percentile(lm, 99));
      fewP99.push(percentile(lf, 99));
    } finally {
      await Promise.all([many.close(), few.close()]);
    }
  }
  return {
    '2000 vs 20 rules at 800 msg/s: CPU µs/message, 2,000 rules': spread(manyUs),
    '2000 vs 20 rules at 800 msg/s: CPU µs/message, 20 rules': spread(fewUs),
    '2000 vs 20 rules at 800 msg/s: CPU ratio (2,000 / 20)': spread(ratios),
    '2000 vs 20 rules at 800 msg/s: GET /rules p99 ms, 2,000 rules': spread(manyP99, 1),
    '2000 vs 20 rules at 800 msg/s: GET /rules p99 ms, 20 rules': spread(fewP99, 1),
  };
}

async function createStart(): Promise<Record<string, string | number>> {
  const n = QUICK ? 2000 : 8000;
  const e = await startEddy(
    process.env.EDDY_BENCH_WORKERS ? { KUIPER__BASIC__WORKERS: process.env.EDDY_BENCH_WORKERS } : {},
  );
  try {
    const c0 = await e.cpuUs();
    const { streamsMs, rulesMs, rulesCpuMs } = await createRules(e, n, `bench/create/${process.pid}/${Date.now()}/`, 8);
    const c1 = await e.cpuUs();
    const lat: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      await e.req('GET', '/rules');
      lat.push(performance.now() - t);
    }
    return {
      [`${n} rules: streams created (s)`]: (streamsMs / 1000).toFixed(1),
      [`${n} rules: rules created and started (s)`]: (rulesMs / 1000).toFixed(1),
      [`${n} rules: Eddy CPU ms per stream + rule`]: ((c1 - c0) / 1000 / n).toFixed(2),
      [`${n} rules: Eddy CPU during the rules phase (s)`]: (rulesCpuMs / 1000).toFixed(1),
      [`${n} rules: GET /rules median / p99 ms (idle)`]: `${percentile(lat, 50).toFixed(1)} / ${percentile(lat, 99).toFixed(1)}`,
    };
  } finally {
    await e.close();
  }
}

export async function run(): Promise<Record<string, string | number>> {
  const load = await machineLoad();
  const only = process.env.EDDY_BENCH_ONLY;
  const out: Record<string, string | number> = { 'machine load (1-min average) at start': load };
  if (!only || only.includes('many')) Object.assign(out, await manyVsFew());
  if (!only || only.includes('create')) Object.assign(out, await createStart());
  return out;
}

const isMain = Boolean(process.argv[1]) && import.meta.url.endsWith(process.argv[1].replace(/.*\/bench\//, '/bench/'));
if (isMain) {
  run()
    .then((f) => {
      for (const [k, v] of Object.entries(f)) console.log(`${k.padEnd(60)} ${v}`);
      process.exit(0);
    })
    .catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
}
