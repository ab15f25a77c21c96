/**
 * Rule workers (docs/runtime.md §1.10), each figure measured against its single-thread counterpart in the same run:
 *  1. cores: 8 rules `memory source → filter + projection → nop`, split over 2 worker threads vs all 8 on 1 thread;
 *     each thread feeds its own in-process memory topic as fast as its rules drain it. Records/s delivered to the
 *     sinks (wall time), interleaved rounds, median and spread (min–max).
 *  1b. cores over MQTT: 8 rules, each reading its own MQTT topic (filter + projection) and publishing what passes to
 *     its own MQTT topic, split over 2 worker threads vs all 8 on 1 thread, against a Mosquitto of the benchmark's own
 *     fed by one publisher process as fast as the broker takes it. Records/s read by the rules and written to the
 *     sinks, interleaved rounds, median and spread, with the CPU share of the broker (single-threaded: near 100 % of
 *     one core it is the limit, not the rules) and of the publisher.
 *  2. control plane under load: 200 rules on one SHARED MQTT stream fed by a publisher process as fast as the broker
 *     takes it, plus one rule waiting on a service that answers in 3 s; p50/p99 of `GET /ping`, `GET /rules` and
 *     `GET /rules/{id}/status`, with `basic.workers` none (every rule on the main thread), 1 and 2.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import AdmZip from 'adm-zip';
import { type RuleTopology } from '../src/runtime/topology.js';
import type { ValueObject } from '../src/values/value.js';
import { startServer } from '../src/server.js';
import { openBenchEngine, type BenchEngine } from './helpers/engine.js';

const tick = () => new Promise<void>((r) => setImmediate(r));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

// ------------------------------------------------------------------------------------------------ 1: thread side

interface ThreadInit {
  eddyBenchWorker: true;
  rules: number;
  /** MQTT variant: the broker, and the index of this thread's first rule (rule i reads `bench/wkmq/in/i`) */
  mqtt?: { url: string; first: number };
}

/** One rule thread: its rules read one memory topic that this thread feeds until told to stop. */
async function threadMain(init: ThreadInit): Promise<void> {
  const port = parentPort!;
  const env: NodeJS.ProcessEnv = init.mqtt ? { MQTT_SOURCE__DEFAULT__SERVER: init.mqtt.url } : {};
  const engine = await openBenchEngine({ env, prefix: 'eddy-bench-wk-' });
  const { builder, config, logger, connectors } = engine;
  if (init.mqtt) return mqttThread(init.mqtt, init.rules, port, engine);
  engine.defineStream(
    'CREATE STREAM demo (deviceId STRING, temperature FLOAT, humidity FLOAT) WITH (DATASOURCE="bench/wk", TYPE="memory")',
  );
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
      await engine.close();
    })();
  });
  port.postMessage({ ready: true });
}

/** MQTT variant of a rule thread: its rules read their own topics (fed from outside) and publish to MQTT. */
async function mqttThread(
  m: { url: string; first: number },
  rules: number,
  port: NonNullable<typeof parentPort>,
  engine: BenchEngine,
): Promise<void> {
  const topos: RuleTopology[] = [];
  for (let i = m.first; i < m.first + rules; i++) {
    const sql = `CREATE STREAM mq${i} (deviceId STRING, temperature FLOAT, humidity FLOAT) WITH (DATASOURCE="bench/wkmq/in/${i}", FORMAT="json")`;
    engine.defineStream(sql);
    const t = engine.builder.build(
      {
        id: `mq${i}`,
        sql: `SELECT deviceId, temperature FROM mq${i} WHERE temperature > 50`,
        actions: [{ mqtt: { server: m.url, topic: `bench/wkmq/out/${i}`, sendSingle: true } }],
      },
      engine.config.rule,
      engine.logger,
    );
    await t.open();
    topos.push(t);
  }
  const read = () => topos.reduce((a, t) => a + t.nodes()[0].recordsIn, 0);
  const written = () => topos.reduce((a, t) => a + t.nodes()[t.nodes().length - 1].recordsIn, 0);
  port.on('message', (msg: { go: number }) => {
    void (async () => {
      // the subscriptions settle, then the window starts
      await new Promise((r) => setTimeout(r, 500));
      const r0 = read();
      const w0 = written();
      await new Promise((r) => setTimeout(r, msg.go));
      port.postMessage({ delivered: read() - r0, written: written() - w0 });
      for (const t of topos) await t.close();
      await engine.close();
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

// ------------------------------------------------------------------------------------------------ 1b: MQTT in, MQTT out

/** Publishes demo rows round-robin to `bench/wkmq/in/0…7` at QoS 0 as fast as its socket drains. */
const MQ_PUBLISHER = String.raw`
const mqtt = require(process.argv[1]);
const c = mqtt.connect(process.argv[2]);
let i = 0;
setInterval(() => process.stdout.write(i + '\n'), 50);
// ends with the benchmark, however that ends
process.stdin.on('end', () => process.exit(0)).resume();
c.on('connect', () => {
  const pump = () => {
    if (c.stream.writableLength > (1 << 20)) return setTimeout(pump, 1);
    for (let k = 0; k < 200; k++, i++)
      c.publish('bench/wkmq/in/' + (i % 8), JSON.stringify({ deviceId: 'dev' + (i % 100), temperature: (i * 37) % 100, humidity: 40 + (i % 20) }));
    setImmediate(pump);
  };
  pump();
});
`;

/** CPU seconds (user + system) a process used so far, from /proc (clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface MqRound {
  published: number;
  read: number;
  written: number;
  brokerCpu: number;
  publisherCpu: number;
  eddyCpu: number;
}

interface MqPeers {
  url: string;
  broker: number;
  publisher: number;
  /** messages the publisher sent so far (it reports every 50 ms) */
  published: () => number;
}

async function mqRound(threads: number, ms: number, peers: MqPeers): Promise<MqRound> {
  const { url, broker, publisher } = peers;
  const per = 8 / threads;
  const workers = Array.from(
    { length: threads },
    (_, k) =>
      new Worker(fileURLToPath(import.meta.url), {
        workerData: { eddyBenchWorker: true, rules: per, mqtt: { url, first: k * per } } satisfies ThreadInit,
      }),
  );
  await Promise.all(workers.map((w) => new Promise<void>((r) => w.once('message', () => r()))));
  const results = workers.map(
    (w) =>
      new Promise<{ delivered: number; written: number }>((r) => {
        w.once('message', r);
        w.postMessage({ go: ms });
      }),
  );
  // the threads wait 500 ms for their subscriptions before their window starts
  await new Promise((r) => setTimeout(r, 500));
  const b0 = cpuSeconds(broker);
  const p0 = cpuSeconds(publisher);
  const e0 = process.cpuUsage();
  const n0 = peers.published();
  const t0 = performance.now();
  const counts = await Promise.all(results);
  const elapsed = (performance.now() - t0) / 1000;
  const e = process.cpuUsage(e0);
  const out = {
    published: (peers.published() - n0) / elapsed,
    read: counts.reduce((a, c) => a + c.delivered, 0) / elapsed,
    written: counts.reduce((a, c) => a + c.written, 0) / elapsed,
    brokerCpu: (cpuSeconds(broker) - b0) / elapsed,
    publisherCpu: (cpuSeconds(publisher) - p0) / elapsed,
    eddyCpu: (e.user + e.system) / 1e6 / elapsed,
  };
  await Promise.all(workers.map((w) => w.terminate()));
  return out;
}

async function coresMqtt(): Promise<Record<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-bench-mq-'));
  const port = await new Promise<number>((resolve) => {
    const probe = createNetServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as AddressInfo).port;
      probe.close(() => resolve(p));
    });
  });
  writeFileSync(join(dir, 'mosquitto.conf'), `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
  const broker = spawn('mosquitto', ['-c', join(dir, 'mosquitto.conf')], { stdio: 'ignore' });
  const url = `mqtt://127.0.0.1:${port}`;
  const mqttPath = createRequire(import.meta.url).resolve('mqtt');
  let publisher: ReturnType<typeof spawn> | undefined;
  try {
    await new Promise((r) => setTimeout(r, 300));
    publisher = spawn(process.execPath, ['-e', MQ_PUBLISHER, mqttPath, url], { stdio: ['pipe', 'pipe', 'ignore'] });
    let sent = 0;
    publisher.stdout!.on('data', (d: Buffer) => {
      const lines = d.toString().trim().split('\n');
      sent = Number(lines[lines.length - 1]) || sent;
    });
    const peers: MqPeers = { url, broker: broker.pid!, publisher: publisher.pid!, published: () => sent };
    const rounds: Record<1 | 2, MqRound[]> = { 1: [], 2: [] };
    for (let r = 0; r < Number(process.env.EDDY_BENCH_ROUNDS ?? 5); r++)
      for (const threads of r % 2 === 0 ? ([1, 2] as const) : ([2, 1] as const))
        rounds[threads].push(await mqRound(threads, 2000, peers));
    const spread = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
    const share = (xs: number[]) => `${Math.round(median(xs) * 100)} % (${spread(xs.map((x) => x * 100))} %)`;
    const out: Record<string, string> = {};
    for (const t of [1, 2] as const) {
      const label = `8 MQTT→MQTT rules, ${t === 1 ? '1 thread' : '2 worker threads'}`;
      const xs = rounds[t];
      out[`${label}: records/s offered by the publisher median (spread)`] =
        `${fmt(median(xs.map((x) => x.published)))} (${spread(xs.map((x) => x.published))})`;
      out[`${label}: records/s read median (spread)`] =
        `${fmt(median(xs.map((x) => x.read)))} (${spread(xs.map((x) => x.read))})`;
      out[`${label}: records/s published by the sinks median (spread)`] =
        `${fmt(median(xs.map((x) => x.written)))} (${spread(xs.map((x) => x.written))})`;
      out[`${label}: CPU of the broker (one core = 100 %)`] = share(xs.map((x) => x.brokerCpu));
      out[`${label}: CPU of the publisher`] = share(xs.map((x) => x.publisherCpu));
      out[`${label}: CPU of the rule threads`] = share(xs.map((x) => x.eddyCpu));
    }
    out['8 MQTT→MQTT rules: 2 workers / 1 worker'] = (
      median(rounds[2].map((x) => x.read)) / median(rounds[1].map((x) => x.read))
    ).toFixed(2);
    // every record read costs the broker one message in and one out, plus the sink's publish of the half that passes
    const all = [...rounds[1], ...rounds[2]];
    const brokerUsPerRecord = median(all.map((x) => (x.brokerCpu * 1e6) / x.read));
    out['broker CPU µs per record read (median over all rounds)'] = brokerUsPerRecord.toFixed(1);
    out['records/s at which the broker alone would fill one core (1e6 / µs per record)'] = fmt(1e6 / brokerUsPerRecord);
    out['machine load (1 min) after the MQTT rounds'] = `${loadavg()[0].toFixed(2)} (${availableParallelism()} cores)`;
    return out;
  } finally {
    publisher?.kill();
    broker.kill();
    rmSync(dir, { recursive: true, force: true });
  }
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
    for (const w of ['none', '1', '2']) {
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
  return { ...(await cores()), ...(await coresMqtt()), ...(await controlPlaneBoth()) };
}
