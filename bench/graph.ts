/**
 * Graph rules against SQL rules and a hand-written program, same work in the same run: memory source → filter
 * (`temperature > 50`) → projection of two fields → nop sink. Records per CPU-second, median and spread over 5
 * interleaved rounds. A graph rule runs on the same operators as the SQL rule; the difference is the price of the
 * graph's row-flow adapters (a projection hands rows on instead of final objects).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, prepareHome, resolveHome } from '../src/config/index.js';
import { openStore } from '../src/store/index.js';
import { Connectors } from '../src/connectors/index.js';
import { parseDdl } from '../src/sql/index.js';
import type { StreamCatalog, StreamDef, StreamKind } from '../src/catalog/types.js';
import { createBuiltinRegistry } from '../src/functions/index.js';
import { createTopologyBuilder } from '../src/runtime/topology.js';
import type { RuleDef, Topology } from '../src/contracts/index.js';
import type { ValueObject } from '../src/values/value.js';

const tick = () => new Promise<void>((r) => setImmediate(r));
const TOPIC = 'bench/graph';

async function engine() {
  const homeDir = mkdtempSync(join(tmpdir(), 'eddy-bench-'));
  const home = resolveHome(homeDir);
  prepareHome(home);
  const config = loadConfig(home, {});
  const store = await openStore(config, home);
  const logger = pino({ level: 'silent' });
  const connectors = await Connectors.create({ home, config, env: {}, store, logger });
  const defs = new Map<string, StreamDef>();
  const catalog: StreamCatalog = {
    get: (n) => defs.get(n),
    list: (k: StreamKind) => [...defs.values()].filter((d) => d.kind === k),
  };
  const sql = `CREATE STREAM demo (deviceId STRING, temperature FLOAT, humidity FLOAT) WITH (DATASOURCE="${TOPIC}", TYPE="memory")`;
  const st = parseDdl(sql);
  if (st.kind !== 'createStream') throw new Error('not a CREATE');
  defs.set(st.name, { name: st.name, kind: st.streamKind, fields: st.fields, options: st.options, sql });
  const builder = createTopologyBuilder({
    catalog,
    functions: createBuiltinRegistry(),
    connectors: connectors.registry,
    createSinkNode: (o) => connectors.createSinkNode(o),
    store,
    dataDir: home.data,
    logger,
  });
  let topo: Topology | null = null;
  return {
    connectors,
    publish: (row: ValueObject) => connectors.memory.publish({ topic: TOPIC, row }),
    async rule(def: RuleDef) {
      topo = builder.build(def, { ...config.rule }, logger);
      await topo.open();
      return topo;
    },
    async close() {
      await topo?.close();
      await builder.close();
      await connectors.close();
      await store.close();
      rmSync(homeDir, { recursive: true, force: true });
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
