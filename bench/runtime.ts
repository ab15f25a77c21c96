/**
 * Runtime benchmarks, each next to a hand-written JS program doing the same work in the same run:
 *  1. memory source → filter + projection → nop sink, records/s on one core;
 *  2. 1-second tumbling window GROUP BY deviceId over 1,000 keys with count, avg, max, records/s;
 *  3. 1,000 rules reading one SHARED stream: heap per rule and time to start them all;
 * (MQTT → MQTT through the local broker against a hand-written mqtt.js program: bench/mqtt.ts.)
 * Figures are CPU time, not wall time: the machine is shared, and CPU time is what "per core" means.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';
import { type RuleTopology } from '../src/runtime/topology.js';
import { ManualClock, type Clock } from '../src/runtime/clock.js';
import type { RuleAction, RuleOptions } from '../src/contracts/index.js';
import type { ValueObject } from '../src/values/value.js';
import { openBenchEngine } from './helpers/engine.js';

const tick = () => new Promise<void>((r) => setImmediate(r));

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function engine(clock?: Clock) {
  const e = await openBenchEngine({ clock });
  const topos: RuleTopology[] = [];
  return {
    connectors: e.connectors,
    builder: e.builder,
    ddl(sql: string) {
      e.defineStream(sql);
    },
    async rule(id: string, sql: string, actions: RuleAction[] = [{ nop: {} }], options: Partial<RuleOptions> = {}) {
      const t = e.builder.build({ id, sql, actions }, { ...e.config.rule, ...options }, e.logger);
      await t.open();
      topos.push(t);
      return t;
    },
    async close() {
      for (const t of topos) await t.close();
      await e.close();
    },
  };
}

function rows(n: number, keys: number): ValueObject[] {
  const out: ValueObject[] = [];
  for (let i = 0; i < n; i++)
    out.push({ deviceId: `dev${i % keys}`, temperature: (i * 37) % 100, humidity: 40 + (i % 20) });
  return out;
}

/**
 * Publishes `total` rows on a memory topic in batches, yielding between batches so the pipeline drains. Returns
 * the CPU time used (ms): on a shared machine CPU time, not wall time, is what "records/s on one core" means.
 */
async function feed(
  publish: (row: ValueObject) => void,
  data: ValueObject[],
  total: number,
  batch: number,
  between?: () => void,
): Promise<number> {
  const c0 = process.cpuUsage();
  let sent = 0;
  while (sent < total) {
    for (let i = 0; i < batch; i++) publish(data[(sent + i) % data.length]);
    sent += batch;
    between?.();
    await tick();
  }
  await tick();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

// ------------------------------------------------------------------------------------------------ 1

async function filterProject(): Promise<Record<string, string | number>> {
  const total = 2_000_000;
  const batch = 1000;
  const data = rows(batch, 1000);
  const e = await engine();
  e.ddl(
    'CREATE STREAM demo (deviceId STRING, temperature FLOAT, humidity FLOAT) WITH (DATASOURCE="bench/fp", TYPE="memory")',
  );
  const topo = await e.rule('fp', 'SELECT deviceId, temperature FROM demo WHERE temperature > 50');
  const publish = (row: ValueObject) => e.connectors.memory.publish({ topic: 'bench/fp', row });
  await feed(publish, data, 100_000, batch); // warm-up
  const before = topo.nodes().at(-1)!.recordsIn;
  const ms = await feed(publish, data, total, batch);
  const delivered = topo.nodes().at(-1)!.recordsIn - before;
  const drops = topo.nodes().reduce((a, n) => a + n.exceptions, 0);
  await e.close();

  // the same work written by hand: subscribe, filter, project, hand a one-row list to a no-op sink
  const e2 = await engine();
  let sink = 0;
  const nop = (rowsOut: ValueObject[]) => {
    sink += rowsOut.length;
  };
  e2.connectors.memory.subscribe('bench/fp', (msg) => {
    const r = msg.row;
    const t = r.temperature as number;
    if (t > 50) nop([{ deviceId: r.deviceId, temperature: t }]);
  });
  const publish2 = (row: ValueObject) => e2.connectors.memory.publish({ topic: 'bench/fp', row });
  await feed(publish2, data, 100_000, batch);
  const msHand = await feed(publish2, data, total, batch);
  await e2.close();
  void sink;
  return {
    'filter+project records per CPU-second (engine)': fmt((total / ms) * 1000),
    'filter+project records per CPU-second (hand-written)': fmt((total / msHand) * 1000),
    'filter+project triggers delivered to the sink': delivered,
    'filter+project drops': drops,
  };
}

// ------------------------------------------------------------------------------------------------ 2

async function tumblingGroupBy(): Promise<Record<string, string | number>> {
  const total = 1_000_000;
  const batch = 1000;
  const data = rows(10_000, 1000);
  const T0 = 1_700_000_000_000;
  const clock = new ManualClock(T0);
  const e = await engine(clock);
  e.ddl(
    'CREATE STREAM tw (deviceId STRING, temperature FLOAT, humidity FLOAT) WITH (DATASOURCE="bench/tw", TYPE="memory")',
  );
  const topo = await e.rule(
    'tw',
    'SELECT deviceId, count(*) AS c, avg(temperature) AS a, max(temperature) AS m FROM tw GROUP BY deviceId, TUMBLINGWINDOW(ss, 1)',
    [{ nop: {} }],
    { bufferLength: 102400 },
  );
  const publish = (row: ValueObject) => e.connectors.memory.publish({ topic: 'bench/tw', row });
  // 100,000 records per simulated second: every batch moves the clock by 10 ms
  const ms = await feed(publish, data, total, batch, () => clock.advance(10));
  clock.advance(1000);
  await tick();
  const windows = topo.nodes().find((n) => n.name.endsWith('_window'))!.recordsOut;
  const groupsOut = topo.nodes().at(-1)!.messagesProcessed;
  await e.close();

  // hand-written: per-key running count/sum/max, flushed every simulated second
  const e2 = await engine();
  let now = T0;
  let nextEnd = T0 + 1000;
  let acc = new Map<string, { c: number; s: number; m: number }>();
  let emitted = 0;
  const flush = () => {
    const out: ValueObject[] = [];
    for (const [k, v] of acc) out.push({ deviceId: k, c: v.c, a: v.s / v.c, m: v.m });
    emitted += out.length;
    acc = new Map();
  };
  e2.connectors.memory.subscribe('bench/tw', (msg) => {
    const r = msg.row;
    const k = r.deviceId as string;
    const t = r.temperature as number;
    const g = acc.get(k);
    if (g) {
      g.c++;
      g.s += t;
      if (t > g.m) g.m = t;
    } else acc.set(k, { c: 1, s: t, m: t });
  });
  const publish2 = (row: ValueObject) => e2.connectors.memory.publish({ topic: 'bench/tw', row });
  const msHand = await feed(publish2, data, total, batch, () => {
    now += 10;
    if (now >= nextEnd) {
      flush();
      nextEnd += 1000;
    }
  });
  await e2.close();
  void emitted;
  return {
    'tumbling 1s GROUP BY 1000 keys records per CPU-second (engine)': fmt((total / ms) * 1000),
    'tumbling 1s GROUP BY 1000 keys records per CPU-second (hand-written)': fmt((total / msHand) * 1000),
    'tumbling windows emitted': windows,
    'tumbling group rows delivered': groupsOut,
  };
}

// ------------------------------------------------------------------------------------------------ 3

async function manyRules(): Promise<Record<string, string | number>> {
  const n = 1000;
  const e = await engine();
  e.ddl(
    'CREATE STREAM shared (deviceId STRING, temperature FLOAT) WITH (DATASOURCE="bench/shared", TYPE="memory", SHARED="true")',
  );
  // one rule first, so that the shared instance itself is not counted per rule
  await e.rule('warm', 'SELECT * FROM shared WHERE temperature > 50');
  gc();
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await e.rule(`r${i}`, 'SELECT * FROM shared WHERE temperature > 50');
  const startMs = performance.now() - t0;
  gc();
  gc();
  const heap1 = process.memoryUsage().heapUsed;
  const t1 = performance.now();
  for (let i = 0; i < 100; i++)
    e.connectors.memory.publish({ topic: 'bench/shared', row: { deviceId: 'd', temperature: 60 } });
  await tick();
  await tick();
  const fanoutMs = performance.now() - t1;
  const instances = e.builder.shared.size();
  await e.close();
  return {
    'shared stream: rules started': n,
    'shared stream: time to start all (ms)': Math.round(startMs),
    'shared stream: heap per rule (KB)': Math.round((heap1 - heap0) / n / 1024),
    'shared stream: connector instances': instances,
    'shared stream: 100 events to 1001 rules (ms)': Math.round(fanoutMs),
  };
}

export async function run(): Promise<Record<string, string | number>> {
  const figures: Record<string, string | number> = {};
  const parts: Array<[string, () => Promise<Record<string, string | number>>]> = [
    ['filter+project', filterProject],
    ['tumbling', tumblingGroupBy],
    ['shared', manyRules],
  ];
  const only = process.env.EDDY_BENCH_ONLY;
  for (const [name, fn] of parts) {
    if (only && !only.split(',').includes(name)) continue;
    Object.assign(figures, await fn());
  }
  return figures;
}

const isMain = Boolean(process.argv[1]) && import.meta.url.endsWith(process.argv[1].replace(/.*\/bench\//, '/bench/'));
if (isMain) {
  // `npx tsx bench/runtime.ts` runs it directly
  run()
    .then((f) => {
      for (const [k, v] of Object.entries(f)) console.log(`${k.padEnd(55)} ${v}`);
      process.exit(0);
    })
    .catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
}
