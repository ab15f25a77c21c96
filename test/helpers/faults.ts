/**
 * Fault scenarios shared by the fault tests (test/faults/) and bench/faults: numbered messages published to a
 * test-owned Mosquitto, an MQTT → MQTT rule at qos 1 in an Eddy child process, and a collector that counts what
 * reaches the sink topic (lost = numbers never seen, duplicates = numbers seen more than once).
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt, { type MqttClient } from 'mqtt';
import { startBroker, type TestBroker } from './mosquitto.js';
import { startEddyProcess, type EddyProcess } from './eddy-process.js';
import { startTcpProxy, type TcpProxy } from './tcpproxy.js';
import { waitFor } from './process.js';
import { mountSmallDisk } from './smalldisk.js';

export interface FaultResult {
  sent: number;
  /** distinct numbers that reached the sink */
  delivered: number;
  lost: number;
  duplicates: number;
  /** messages at the sink that are not numbered rows (e.g. `{"error": …}` travelling as data) */
  foreign: number;
  /** the rule's status after the run (`running` when it recovered by itself) */
  status?: string;
  /** the first lost numbers (diagnostics) */
  missing?: number[];
  /** the largest SQLite write-ahead log seen during the run (`dataDiskBytes` scenarios) */
  maxWalBytes?: number;
}

/** One line of a scenario's figures, as the fault tests print them (`node --test` diagnostics). */
export function reportFault(t: { diagnostic(msg: string): void }, r: FaultResult): void {
  const wal = r.maxWalBytes === undefined ? '' : `, largest WAL ${r.maxWalBytes} bytes`;
  t.diagnostic(
    `sent ${r.sent}, delivered ${r.delivered}, lost ${r.lost}, duplicates ${r.duplicates}, status ${r.status}${wal}, first lost [${r.missing?.join(',')}]`,
  );
}

/** Counts numbered rows `{"n": i}` arriving on a topic. */
export class Collector {
  private readonly seen = new Uint8Array(1 << 20);
  distinct = 0;
  total = 0;
  foreign = 0;
  /** warm-up rows `{"probe": true}` */
  probes = 0;
  private constructor(private readonly client: MqttClient) {}

  static async start(url: string, topic: string): Promise<Collector> {
    const client = mqtt.connect(url, { clean: true, reconnectPeriod: 500 });
    const c = new Collector(client);
    client.on('message', (_t, payload) => c.take(payload));
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => client.subscribe(topic, { qos: 1 }, (err) => (err ? reject(err) : resolve())));
      client.once('error', reject);
    });
    return c;
  }

  private take(payload: Buffer): void {
    let rows: unknown;
    try {
      rows = JSON.parse(payload.toString());
    } catch {
      this.foreign++;
      return;
    }
    for (const row of Array.isArray(rows) ? rows : [rows]) {
      // a window's output: the numbers it gathered
      const probes = (row as { probes?: unknown }).probes;
      if (Array.isArray(probes) && probes.some((p) => p === true)) this.probes++;
      const ns = (row as { ns?: unknown }).ns;
      if (Array.isArray(ns)) {
        for (const n of ns) if (typeof n === 'number') this.count(n);
        continue;
      }
      const n = (row as { n?: unknown }).n;
      if ((row as { probe?: unknown }).probe === true) {
        this.probes++;
        continue;
      }
      if (typeof n !== 'number') {
        this.foreign++;
        continue;
      }
      this.count(n);
    }
  }

  private count(n: number): void {
    this.total++;
    if (this.seen[n] === 0) this.distinct++;
    if (this.seen[n] < 255) this.seen[n]++;
  }

  /** the first numbers never seen (diagnostics) */
  missing(sent: number, max = 20): number[] {
    const out: number[] = [];
    for (let i = 0; i < sent && out.length < max; i++) if (this.seen[i] === 0) out.push(i);
    return out;
  }

  result(sent: number): FaultResult {
    return {
      sent,
      delivered: this.distinct,
      lost: sent - this.distinct,
      duplicates: this.total - this.distinct,
      foreign: this.foreign,
    };
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.client.end(true, {}, () => resolve()));
  }
}

/** QoS 2 publishes a publisher keeps unacknowledged at most. */
const QOS2_WINDOW = 16;

/** Publishes `{"n": 0…count-1}` at QoS 1 (or 2) at about `rate` messages per second; resolves when all are acknowledged. */
export class Publisher {
  sent = 0;
  private constructor(
    private readonly client: MqttClient,
    private readonly qos: 1 | 2,
  ) {}

  static async start(url: string, qos: 1 | 2 = 1): Promise<Publisher> {
    const client = mqtt.connect(url, { clean: true, reconnectPeriod: 500 });
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    return new Publisher(client, qos);
  }

  /** One warm-up row that passes the rule's filter but is not numbered. */
  probe(topic: string): void {
    this.client.publish(topic, JSON.stringify({ probe: true, temperature: 60 }), { qos: this.qos });
  }

  async run(topic: string, count: number, rate: number): Promise<void> {
    const start = Date.now();
    const acks: Promise<void>[] = [];
    let unacknowledged = 0;
    while (this.sent < count) {
      const due = Math.min(count, Math.floor(((Date.now() - start) * rate) / 1000) + 1);
      // Mosquitto 2.0 drops the QoS 2 messages a 3.1.1 client sends beyond its inflight limit (20) without a word,
      // and MQTT.js sets no limit of its own: the publisher keeps under it, or the broker would lose what Eddy is
      // asked not to
      for (; this.sent < due && (this.qos === 1 || unacknowledged < QOS2_WINDOW); this.sent++) {
        const n = this.sent;
        unacknowledged++;
        acks.push(
          new Promise((resolve, reject) =>
            this.client.publish(topic, JSON.stringify({ n, temperature: 60 }), { qos: this.qos }, (err) => {
              unacknowledged--;
              if (err) reject(err);
              else resolve();
            }),
          ),
        );
      }
      await sleep(this.qos === 1 ? 10 : 1);
    }
    await Promise.all(acks);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.client.end(false, {}, () => resolve()));
  }
}

/**
 * Publishes warm-up probes until one came through the rule: a rule reports running before its subscription is in
 * place, so numbered messages start once a probe went through.
 */
export async function probeThrough(
  publisher: Publisher,
  collector: Collector,
  topic: string,
  deadlineMs = 60_000,
): Promise<void> {
  await waitFor(
    () => {
      if (collector.probes > 0) return true;
      publisher.probe(topic);
      return false;
    },
    deadlineMs,
    'a probe through the rule',
    200,
  );
}

/**
 * `disk-full`: the home's `data/` folder (a small file system of its own) is filled for `outageMs`, then freed;
 * `none`: no fault, what the rule and the brokers lose on their own
 */
export type Fault = 'none' | 'kill9' | 'source-outage' | 'sink-outage' | 'disk-full';

export interface FaultScenario {
  fault: Fault;
  count: number;
  rate: number;
  /** broker outage length (outage faults) */
  outageMs?: number;
  /** the rule's checkpoint interval */
  checkpointInterval?: number;
  /** the stream is SHARED (one source instance for all rules) */
  shared?: boolean;
  /** the sink has `enableCache` */
  sinkCache?: boolean;
  /** the rule gathers the numbers in 1 s tumbling windows (operator state in the checkpoints) */
  window?: boolean;
  /** the rule's qos (default 1; 0 shows what at-least-once prevents) */
  ruleQos?: number;
  /** the QoS of the stream's subscription and of the publisher (default 1) */
  sourceQos?: 1 | 2;
  /** the QoS of the MQTT sink (default 1) */
  sinkQos?: 1 | 2;
  /** the home's `data/` folder is a file system of this size (tmpfs, root only; `disk-full` needs it) */
  dataDiskBytes?: number;
}

/** Waits until the collector stops making progress for `quietMs` (or has everything). */
async function settle(c: Collector, sent: number, quietMs: number, deadlineMs: number): Promise<void> {
  let last = -1;
  let since = Date.now();
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (c.distinct >= sent) return;
    if (c.total !== last) {
      last = c.total;
      since = Date.now();
    } else if (Date.now() - since > quietMs) return;
    await sleep(100);
  }
}

/** Runs one scenario end to end on its own broker and home; everything it starts is stopped before it returns. */
export async function runFaultScenario(s: FaultScenario): Promise<FaultResult> {
  const broker: TestBroker = await startBroker();
  const home = mkdtempSync(join(tmpdir(), 'eddy-faults-'));
  if (s.fault === 'disk-full' && s.dataDiskBytes === undefined) throw new Error('disk-full needs dataDiskBytes');
  const disk = s.dataDiskBytes === undefined ? undefined : mountSmallDisk(join(home, 'data'), s.dataDiskBytes);
  let maxWalBytes = 0;
  const wal = join(home, 'data', 'sqliteKV.db-wal');
  const walWatch = setInterval(() => {
    if (existsSync(wal)) maxWalBytes = Math.max(maxWalBytes, statSync(wal).size);
  }, 50);
  let proxy: TcpProxy | undefined;
  let eddy: EddyProcess | undefined;
  let collector: Collector | undefined;
  let publisher: Publisher | undefined;
  try {
    if (s.fault === 'source-outage' || s.fault === 'sink-outage') proxy = await startTcpProxy(broker.port);
    const proxied = proxy ? `tcp://127.0.0.1:${proxy.port}` : broker.url;
    const sourceUrl = s.fault === 'source-outage' ? proxied : broker.url;
    const sinkUrl = s.fault === 'sink-outage' ? proxied : broker.url;
    const env = { MQTT_SOURCE__DEFAULT__SERVER: sourceUrl, MQTT_SOURCE__DEFAULT__QOS: String(s.sourceQos ?? 1) };
    eddy = await startEddyProcess(home, env);
    const inTopic = `faults/${s.fault}/in`;
    const outTopic = `faults/${s.fault}/out`;
    let r = await eddy.req('POST', '/streams', {
      sql: `CREATE STREAM faultin () WITH (DATASOURCE="${inTopic}", FORMAT="json"${s.shared ? ', SHARED="true"' : ''})`,
    });
    if (r.status !== 201) throw new Error(`create stream: ${r.status} ${r.text}`);
    r = await eddy.req('POST', '/rules', {
      id: 'faultrule',
      sql: s.window
        ? 'SELECT collect(n) AS ns, collect(probe) AS probes FROM faultin WHERE temperature > 50 GROUP BY TumblingWindow(ss, 1)'
        : 'SELECT * FROM faultin WHERE temperature > 50',
      actions: [
        {
          mqtt: {
            server: sinkUrl,
            topic: outTopic,
            qos: s.sinkQos ?? 1,
            sendSingle: true,
            ...(s.sinkCache ? { enableCache: true } : {}),
          },
        },
      ],
      options: { qos: s.ruleQos ?? 1, checkpointInterval: s.checkpointInterval ?? 1000 },
    });
    if (r.status !== 201) throw new Error(`create rule: ${r.status} ${r.text}`);
    const running = eddy;
    await waitFor(
      async () =>
        ((await running.req('GET', '/rules/faultrule/status')).json() as { status?: string }).status === 'running',
      30_000,
      'the rule to run',
    );
    collector = await Collector.start(broker.url, outTopic);
    publisher = await Publisher.start(broker.url, s.sourceQos ?? 1);
    const c = collector;
    await probeThrough(publisher, c, inTopic);
    const publishing = publisher.run(inTopic, s.count, s.rate);
    // the fault strikes under load, once about a third has gone through
    await waitFor(() => c.distinct >= s.count / 3, 120_000, 'a third of the messages at the sink', 20);
    if (s.fault === 'kill9') {
      await eddy.kill9();
      eddy = await startEddyProcess(home, env);
      // a slow restart (a loaded machine) is not a loss: the quiet period of settle() starts once the rule runs
      const restarted = eddy;
      await waitFor(
        async () =>
          ((await restarted.req('GET', '/rules/faultrule/status')).json() as { status?: string }).status === 'running',
        120_000,
        'the rule to run again after the restart',
      );
    } else if (s.fault === 'disk-full') {
      // filled again and again: whatever the store frees (a rolled-back log) is taken at once
      const until = Date.now() + (s.outageMs ?? 10_000);
      while (Date.now() < until) {
        disk!.fill();
        await sleep(50);
      }
      disk!.free();
    } else if (s.fault === 'source-outage' || s.fault === 'sink-outage') {
      proxy!.cut();
      await sleep(s.outageMs ?? 10_000);
      proxy!.restore();
    }
    await publishing;
    await settle(c, s.count, 20_000, 180_000);
    const status = ((await eddy.req('GET', '/rules/faultrule/status')).json() as { status?: string }).status;
    return {
      ...c.result(s.count),
      status,
      missing: c.missing(s.count),
      ...(disk ? { maxWalBytes } : {}),
    };
  } finally {
    await publisher?.close().catch(() => undefined);
    await collector?.close().catch(() => undefined);
    await eddy?.stop().catch(() => undefined);
    await proxy?.close().catch(() => undefined);
    await broker.stop().catch(() => undefined);
    clearInterval(walWatch);
    disk?.unmount();
    rmSync(home, { recursive: true, force: true });
  }
}
