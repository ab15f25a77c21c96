/**
 * Graph rules against SQL rules and a hand-written program, same work in the same run: memory source → filter
 * (`temperature > 50`) → projection of two fields → nop sink. Records per CPU-second, median and spread over 5
 * interleaved rounds. A graph rule runs on the same operators as the SQL rule; the difference is the price of the
 * graph's row-flow adapters (a projection hands rows on instead of final objects).
 */
import type { RuleDef, Topology } from '../src/contracts/index.js';
import type { ValueObject } from '../src/values/value.js';
import { openBenchEngine } from './helpers/engine.js';

const tick = () => new Promise<void>((r) => setImmediate(r));
const TOPIC = 'bench/graph';

async function engine() {
  const e = await openBenchEngine();
  e.defineStream(
    `CREATE STREAM demo (deviceId STRING, temperature FLOAT, humidity FLOAT) WITH (DATASOURCE="${TOPIC}", TYPE="memory")`,
  );
  let topo: Topology | null = null;
  return {
    connectors: e.connectors,
    publish: (row: ValueObject) => e.connectors.memory.publish({ topic: TOPIC, row }),
    async rule(def: RuleDef) {
      topo = e.builder.build(def, { ...e.config.rule }, e.logger);
      await topo.open();
      return topo;
    },
    async close() {
      await topo?.close();
      await e.close();
    },
  };
}

function rows(n: number): ValueObject[] {
  const out: ValueObject[] = [];
  for (let i = 0; i < n; i++)
    out.push({ deviceId: `dev${i % 1000}`, temperature: (i * 37) % 100, humidity: 40 + (i % 20) });
  return out;
}

/** CPU ms to push `total` rows through, in batches with a turn of the event loop between them. */
async function feed(publish: (row: ValueObject) => void, data: ValueObject[], total: number): Promise<number> {
  const c0 = process.cpuUsage();
  for (let sent = 0; sent < total; sent += data.length) {
    for (const r of data) publish(r);
    await tick();
  }
  await tick();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

const GRAPH = {
  nodes: {
    demo: { type: 'source', nodeType: 'memory', props: { sourceName: 'demo' } },
    hot: { type: 'operator', nodeType: 'filter', props: { expr: 'temperature > 50' } },
    pick: { type: 'operator', nodeType: 'pick', props: { fields: ['deviceId', 'temperature'] } },
    out: { type: 'sink', nodeType: 'nop', props: {} },
  },
  topo: { sources: ['demo'], edges: { demo: ['hot'], hot: ['pick'], pick: ['out'] } },
};

async function engineRound(def: RuleDef, data: ValueObject[], total: number): Promise<number> {
  const e = await engine();
  const topo = await e.rule(def);
  await feed(e.publish, data, 50_000);
  const sink = topo.nodes().at(-1)!;
  const before = sink.recordsIn;
  const ms = await feed(e.publish, data, total);
  // a round that lost rows measures nothing
  const expected = (data.filter((r) => (r.temperature as number) > 50).length * total) / data.length;
  if (sink.recordsIn - before !== expected)
    throw new Error(`rule ${def.id} delivered ${sink.recordsIn - before} of ${expected} rows`);
  await e.close();
  return (total / ms) * 1000;
}

async function handRound(data: ValueObject[], total: number): Promise<number> {
  const e = await engine();
  let sink = 0;
  // the same work by hand on the same memory bus: filter, project, a one-row list to a no-op
  e.connectors.memory.subscribe(TOPIC, (msg) => {
    const r = msg.row;
    const t = r.temperature as number;
    if (t > 50) sink += [{ deviceId: r.deviceId, temperature: t }].length;
  });
  await feed(e.publish, data, 50_000);
  const ms = await feed(e.publish, data, total);
  await e.close();
  void sink;
  return (total / ms) * 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs: number[]) =>
  `${Math.round(Math.min(...xs)).toLocaleString('en-US')}–${Math.round(Math.max(...xs)).toLocaleString('en-US')}`;

export async function run(): Promise<Record<string, string>> {
  const total = 300_000;
  const data = rows(1000);
  const g: number[] = [];
  const s: number[] = [];
  const h: number[] = [];
  for (let i = 0; i < 5; i++) {
    g.push(await engineRound({ id: 'g', graph: GRAPH, actions: [] }, data, total));
    s.push(
      await engineRound(
        { id: 's', sql: 'SELECT deviceId, temperature FROM demo WHERE temperature > 50', actions: [{ nop: {} }] },
        data,
        total,
      ),
    );
    h.push(await handRound(data, total));
  }
  const ratios = g.map((x, i) => x / s[i]);
  return {
    'graph filter+pick records per CPU-second (median, range)': `${Math.round(median(g)).toLocaleString('en-US')} (${spread(g)})`,
    'SQL filter+project records per CPU-second (median, range)': `${Math.round(median(s)).toLocaleString('en-US')} (${spread(s)})`,
    'hand-written records per CPU-second (median, range)': `${Math.round(median(h)).toLocaleString('en-US')} (${spread(h)})`,
    'graph / SQL throughput ratio (median, range)': `${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
  };
}
