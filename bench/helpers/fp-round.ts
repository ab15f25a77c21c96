/**
 * One round of bench/tracing.ts, run as a child process against the tree given as argument (this one or a peer
 * checkout, e.g. `main`): memory source → filter + projection → nop sink, `total` records after a warm-up, tracing off
 * or on. Prints `{"recordsPerCpuSecond": n}`.
 */
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

interface Engine {
  connectors: { memory: { publish(m: { topic: string; row: Record<string, unknown> }): void } };
  builder: { build(rule: unknown, options: unknown, logger: unknown): BenchTopology };
  config: { rule: Record<string, unknown> };
  logger: unknown;
  defineStream(sql: string): void;
  close(): Promise<void>;
}
interface BenchTopology {
  open(): Promise<void>;
  close(): Promise<void>;
  trace?(strategy: 'always' | null, emit: (span: unknown) => void): void;
}

const [root, mode, totalArg] = process.argv.slice(2);
const total = Number(totalArg ?? 1_000_000);
const { openBenchEngine } = (await import(pathToFileURL(join(root, 'bench/helpers/engine.ts')).href)) as {
  openBenchEngine(): Promise<Engine>;
};
const e = await openBenchEngine();
e.defineStream(
  'CREATE STREAM demo (deviceId STRING, temperature FLOAT, humidity FLOAT) WITH (DATASOURCE="bench/tr", TYPE="memory")',
);
const topo = e.builder.build(
  { id: 'tr', sql: 'SELECT deviceId, temperature FROM demo WHERE temperature > 50', actions: [{ nop: {} }] },
  e.config.rule,
  e.logger,
);
await topo.open();
let spans = 0;
if (mode === 'on') topo.trace?.('always', () => spans++);
const batch = 1000;
const data: Array<Record<string, unknown>> = [];
for (let i = 0; i < batch; i++)
  data.push({ deviceId: `dev${i}`, temperature: (i * 37) % 100, humidity: 40 + (i % 20) });
const tick = () => new Promise<void>((r) => setImmediate(r));
async function feed(n: number): Promise<number> {
  const c0 = process.cpuUsage();
  for (let sent = 0; sent < n; sent += batch) {
    for (let i = 0; i < batch; i++) e.connectors.memory.publish({ topic: 'bench/tr', row: data[i] });
    await tick();
  }
  await tick();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}
await feed(Math.min(200_000, total));
const ms = await feed(total);
await topo.close();
await e.close();
console.log(JSON.stringify({ recordsPerCpuSecond: Math.round((total / ms) * 1000), spans }));
