/**
 * Rule workers (docs/runtime.md §1.10), each figure measured against its single-thread counterpart in the same run:
 *  1. cores: 8 rules `memory source → filter + projection → nop`, split over 2 worker threads vs all 8 on 1 thread;
 *     each thread feeds its own in-process memory topic as fast as its rules drain it. Records/s delivered to the
 *     sinks (wall time), interleaved rounds, median and spread (min–max).
 *  2. control plane under load: 200 rules on one SHARED MQTT stream fed by a publisher process as fast as the broker
 *     takes it, plus one rule waiting on a service that answers in 3 s; p50/p99 of `GET /ping`, `GET /rules` and
 *     `GET /rules/{id}/status`, with `basic.workers` 2 vs 1.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import AdmZip from 'adm-zip';
import { loadConfig, prepareHome, resolveHome } from '../src/config/index.js';
import { openStore } from '../src/store/index.js';
import { Connectors } from '../src/connectors/index.js';
import { parseDdl } from '../src/sql/index.js';
import type { StreamCatalog, StreamDef, StreamKind } from '../src/catalog/types.js';
import { createBuiltinRegistry } from '../src/functions/index.js';
import { createTopologyBuilder, type RuleTopology } from '../src/runtime/topology.js';
import type { ValueObject } from '../src/values/value.js';
import { startServer } from '../src/server.js';

const tick = () => new Promise<void>((r) => setImmediate(r));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

// ------------------------------------------------------------------------------------------------ 1: thread side

interface ThreadInit {
  eddyBenchWorker: true;
  rules: number;
}

/** One rule thread: its rules read one memory topic that this thread feeds until told to stop. */
async function threadMain(init: ThreadInit): Promise<void> {
  const port = parentPort!;
  const homeDir = mkdtempSync(join(tmpdir(), 'eddy-bench-wk-'));
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
  const builder = createTopologyBuilder({
    catalog,
    functions: createBuiltinRegistry(),
    connectors: connectors.registry,
    createSinkNode: (o) => connectors.createSinkNode(o),
    store,
    dataDir: home.data,
    logger,
  });
  const sql =
    'CREATE STREAM demo (deviceId STRING, temperature FLOAT, humidity FLOAT) WITH (DATASOURCE="bench/wk", TYPE="memory")';
  const st = parseDdl(sql);
  if (st.kind !== 'createStream') throw new Error('not a CREATE');
  defs.set(st.name, { name: st.name, kind: st.streamKind, fields: st.fields, options: st.options, sql });
  const topos: RuleTopology[] = [];
  for (let i = 0; i < init.rules; i++) {
    const t = builder.build(
      { id: `fp${i}`, sql: 'SELECT deviceId, temperature FROM demo WHERE temperature > 50', actions: [{ nop: {} }] },
      config.rule,
      logger,
    );
    await t.open();
    topos.push(t);
  }
  const data: ValueObject[] = [];
  for (let i = 0; i < 500; i++)
    data.push({ deviceId: `dev${i % 100}`, temperature: (i * 37) % 100, humidity: 40 + (i % 20) });
  const delivered = () => topos.reduce((a, t) => a + t.nodes()[0].recordsIn, 0);
  port.on('message', (m: { go: number }) => {
    void (async () => {
      const end = performance.now() + m.go;
      const before = delivered();
      while (performance.now() < end) {
        for (let i = 0; i < data.length; i++) connectors.memory.publish({ topic: 'bench/wk', row: data[i] });
        await tick();
      }
      port.postMessage({ delivered: delivered() - before });
      for (const t of topos) await t.close();
      await builder.close();
      await connectors.close();
      await store.close();
      rmSync(homeDir, { recursive: true, force: true });
    })();
  });
  port.postMessage({ ready: true });
}

if (!isMainThread && (workerData as ThreadInit | undefined)?.eddyBenchWorker) void threadMain(workerData as ThreadInit);

// ------------------------------------------------------------------------------------------------ 1: main side

/** Records/s of 8 rules spread over `threads` threads (each feeding its own topic), over `ms` of wall time. */
async function round(threads: number, ms: number): Promise<number> {
  const workers = Array.from(
    { length: threads },
    () => new Worker(fileURLToPath(import.meta.url), { workerData: { eddyBenchWorker: true, rules: 8 / threads } }),
  );
  await Promise.all(workers.map((w) => new Promise<void>((r) => w.once('message', () => r()))));
  const t0 = performance.now();
  const counts = await Promise.all(
    workers.map(
      (w) =>
        new Promise<number>((r) => {
          w.once('message', (m: { delivered: number }) => r(m.delivered));
          w.postMessage({ go: ms });
        }),
    ),
  );
  const elapsed = performance.now() - t0;
  await Promise.all(workers.map((w) => w.terminate()));
  return (counts.reduce((a, b) => a + b, 0) / elapsed) * 1000;
}

async function cores(): Promise<Record<string, string>> {
  const one: number[] = [];
  const two: number[] = [];
  for (let r = 0; r < Number(process.env.EDDY_BENCH_ROUNDS ?? 5); r++) {
    // interleaved, alternating which goes first
    if (r % 2 === 0) {
      one.push(await round(1, 2000));
      two.push(await round(2, 2000));
    } else {
      two.push(await round(2, 2000));
      one.push(await round(1, 2000));
    }
  }
  const spread = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
  return {
    '8 rules filter+project, 1 thread: records/s median (spread)': `${fmt(median(one))} (${spread(one)})`,
    '8 rules filter+project, 2 worker threads: records/s median (spread)': `${fmt(median(two))} (${spread(two)})`,
    '2 workers / 1 worker (target ≥ 1.8)': (median(two) / median(one)).toFixed(2),
  };
}

// ------------------------------------------------------------------------------------------------ 2

const PUBLISHER = String.raw`
const mqtt = require(process.argv[1]);
const topic = process.argv[2];
const c = mqtt.connect('mqtt://127.0.0.1:1883');
let i = 0;
c.on('connect', () => {
  const pump = () => {
    for (let k = 0; k < 50; k++) c.publish(topic, JSON.stringify({ temperature: (i++ * 37) % 100, n: i }));
    setTimeout(pump, 5);
  };
  pump();
});
`;

async function controlPlane(workers: string, topic: string, svcUrl: string): Promise<Record<string, number>> {
  const homeDir = mkdtempSync(join(tmpdir(), 'eddy-bench-cp-'));
  const server = await startServer({
    home: homeDir,
    env: {
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__CONSOLELOG: 'false',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
      KUIPER__BASIC__WORKERS: workers,
    },
  });
  const req = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(server.url + path, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    return r.text();
  };
  try {
    await req('POST', '/streams', {
      sql: `CREATE STREAM cp (temperature FLOAT, n BIGINT) WITH (DATASOURCE="${topic}", FORMAT="json", SHARED="true")`,
    });
    for (let i = 0; i < 200; i++)
      await req('POST', '/rules', {
        id: `cp${i}`,
        sql: `SELECT n FROM cp WHERE temperature > ${i % 100}`,
        actions: [{ nop: {} }],
      });
    // the service rule: the zip names a schemaless REST interface answering in 3 s
    const zip = new AdmZip();
    zip.addFile(
      'slow.json',
      Buffer.from(
        JSON.stringify({ about: {}, interfaces: { slowsvc: { address: svcUrl, protocol: 'rest', schemaless: true } } }),
      ),
    );
    const zipFile = join(homeDir, 'slow.zip');
    zip.writeZip(zipFile);
    await req('POST', '/services', { name: 'slow', file: `file://${zipFile}` });
    await req('POST', '/rules', {
      id: 'slowrule',
      sql: 'SELECT slowsvc("post", "/slow", n) AS s FROM cp',
      actions: [{ nop: {} }],
    });
    await server.app.workers?.ready();
    await new Promise((r) => setTimeout(r, 1500));
    const lat: Record<string, number[]> = { ping: [], rules: [], status: [] };
    const inOf = async () =>
      (JSON.parse(await req('GET', '/rules/cp0/status')) as Record<string, number>).source_cp_0_records_in_total ?? 0;
    const in0 = await inOf();
    const t0 = performance.now();
    const end = performance.now() + 6000;
    let k = 0;
    while (performance.now() < end) {
      for (const [name, path] of [
        ['ping', '/ping'],
        ['rules', '/rules'],
        ['status', `/rules/cp${k++ % 200}/status`],
      ] as const) {
        const t0 = performance.now();
        await req('GET', path);
        lat[name].push(performance.now() - t0);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const out: Record<string, number> = {};
    out['records/s into one of the 200 rules while measuring'] = Math.round(
      ((await inOf()) - in0) / ((performance.now() - t0) / 1000),
    );
    for (const [name, xs] of Object.entries(lat)) {
      out[`${name} p50 ms`] = Math.round(pct(xs, 0.5) * 10) / 10;
      out[`${name} p99 ms`] = Math.round(pct(xs, 0.99) * 10) / 10;
    }
    return out;
  } finally {
    await server.close();
    rmSync(homeDir, { recursive: true, force: true });
  }
}

async function controlPlaneBoth(): Promise<Record<string, string | number>> {
  const slow = createServer((q, s) => {
    q.resume();
    q.on('end', () =>
      setTimeout(() => s.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 3000),
    );
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  const svcUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
  const topic = `eddy-bench/cp/${process.pid}/${Date.now()}`;
  const mqttPath = createRequire(import.meta.url).resolve('mqtt');
  const publisher = spawn(process.execPath, ['-e', PUBLISHER, mqttPath, topic], { stdio: 'ignore' });
  const out: Record<string, string | number> = {};
  try {
    for (const w of ['1', '2']) {
      const r = await controlPlane(w, topic, svcUrl);
      for (const [k, v] of Object.entries(r)) out[`200 rules on a shared MQTT stream, workers=${w}: ${k}`] = v;
    }
  } finally {
    publisher.kill();
    slow.closeAllConnections();
    slow.close();
  }
  return out;
}

export async function run(): Promise<Record<string, string | number>> {
  return { ...(await cores()), ...(await controlPlaneBoth()) };
}
