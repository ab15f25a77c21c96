/**
 * Prometheus metrics (`basic.prometheus: true`, docs/rest-api.md §16.8): every running rule's node metrics under
 * eKuiper's names, `kuiper_<source|op|sink>_<metric>{instance, op, rule, type}`, plus `kuiper_rule_status{ruleID}`
 * and `kuiper_rule_count{status}`, Eddy's `eddy_rest_unexpected_errors_total` (REST requests answered 500), and
 * prom-client's process and Node.js series (`process_resident_memory_bytes`,
 * `process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`, …) that dashboards read for memory and CPU. Served at
 * `GET /metrics` on the REST port when `prometheusPort` equals it, otherwise by a server of its own; with
 * authentication on, both ask for the REST API's token (src/api/auth.ts).
 *
 * Label pairs are printed sorted by name, with a histogram's `le` (a summary's `quantile`) last, as Go's client prints
 * them, so that text compared with eKuiper's output lines up.
 *
 * Values are read from the live counters at scrape time, so a deleted rule's series are gone from the next scrape.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { LATENCY_BUCKETS_US, type NodeMetrics } from '../contracts/index.js';
import type { RuleMetricsSnapshot } from '../rules/service.js';

export interface RuleMetricsSource {
  metricsSnapshot(): RuleMetricsSnapshot[];
}

type NodeKind = 'source' | 'op' | 'sink';
type NodeLabel = 'instance' | 'op' | 'rule' | 'type';
/** sorted by name: the label objects are built in this order and prom-client prints them in insertion order */
const NODE_LABELS: NodeLabel[] = ['instance', 'op', 'rule', 'type'];
const KINDS: NodeKind[] = ['source', 'op', 'sink'];

interface LabelledNode {
  labels: Record<NodeLabel, string>;
  metrics: NodeMetrics;
}

/** `source_s1` → source `s1`, `op_2_filter` → op `2_filter`, `sink_log_0` → sink `log_0` (eKuiper's op ids). */
function nodeKind(name: string): { kind: NodeKind; op: string } | undefined {
  const cut = name.indexOf('_');
  const kind = name.slice(0, cut);
  if (cut < 0 || (kind !== 'source' && kind !== 'op' && kind !== 'sink')) return undefined;
  return { kind, op: name.slice(cut + 1) };
}

interface ExportedValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

const LATENCY_HELP = 'Histogram of process latency in microseconds';

/**
 * The histogram of node latencies: the buckets each node counts itself (`NodeMetrics.latencyCounts`, one increment
 * per latency recorded, no label look-up on the hot path), handed to the registry's text exposition as they are.
 */
class NodeLatencyHistogram extends Histogram<NodeLabel> {
  constructor(
    private readonly metricName: string,
    private readonly nodes: () => readonly LabelledNode[],
  ) {
    super({
      name: metricName,
      help: LATENCY_HELP,
      labelNames: NODE_LABELS,
      buckets: [...LATENCY_BUCKETS_US],
      registers: [],
    });
  }

  /** what the registry's text exposition reads (the base `get()` reads it too) */
  async getForPromString(): Promise<{
    name: string;
    help: string;
    type: string;
    values: ExportedValue[];
    aggregator: string;
  }> {
    const name = this.metricName;
    const values: ExportedValue[] = [];
    for (const { labels, metrics } of this.nodes()) {
      const counts = metrics.latencyCounts;
      let cumulative = 0;
      LATENCY_BUCKETS_US.forEach((le, i) => {
        cumulative += counts?.[i] ?? 0;
        values.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
      });
      cumulative += counts?.[LATENCY_BUCKETS_US.length] ?? 0;
      values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cumulative });
      values.push({ metricName: `${name}_sum`, labels, value: metrics.latencySumUs });
      values.push({ metricName: `${name}_count`, labels, value: cumulative });
    }
    return { name, help: LATENCY_HELP, type: 'histogram', values, aggregator: 'sum' };
  }
}

/** the label a histogram bucket (`le`) or a summary quantile adds: printed after the sorted pairs, as Go's client does */
const TRAILING_LABELS = new Set(['le', 'quantile']);
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * Exposition text with the label pairs of every sample sorted by name (`le`/`quantile` last). prom-client prints them
 * in the order the collector built them; the process and Node.js series it collects are not in that order.
 */
export function sortLabelPairs(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      const open = line.indexOf('{');
      if (line.startsWith('#') || open < 0) return line;
      const close = line.lastIndexOf('}');
      const pairs = [...line.slice(open + 1, close).matchAll(LABEL_PAIR)].map((m) => [m[1], m[0]] as const);
      pairs.sort(([a], [b]) => Number(TRAILING_LABELS.has(a)) - Number(TRAILING_LABELS.has(b)) || (a < b ? -1 : 1));
      return `${line.slice(0, open + 1)}${pairs.map(([, pair]) => pair).join(',')}${line.slice(close)}`;
    })
    .join('\n');
}

export class PrometheusExporter {
  readonly registry = new Registry();
  /** prom-client's process and Node.js series: CPU seconds, resident memory, heap, event-loop lag, GC */
  private readonly process = new Registry();
  /** the snapshot of the scrape in progress */
  private snapshot: RuleMetricsSnapshot[] = [];
  private byKind = new Map<NodeKind, LabelledNode[]>();
  private server: Server | undefined;

  /** `unexpectedErrors`: how many REST requests were answered 500 (`api/server.ts` `unexpectedErrorCount`) */
  constructor(
    private readonly rules: RuleMetricsSource,
    unexpectedErrors?: () => number,
  ) {
    collectDefaultMetrics({ register: this.process });
    if (unexpectedErrors) {
      new Counter({
        name: 'eddy_rest_unexpected_errors_total',
        help: 'REST requests answered 500: a bug, logged with its stack',
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(unexpectedErrors());
        },
      });
    }
    for (const kind of KINDS) {
      const nodes = () => this.byKind.get(kind) ?? [];
      const named = (metric: string, help: string) => ({
        name: `kuiper_${kind}_${metric}`,
        help,
        labelNames: NODE_LABELS,
        registers: [this.registry],
      });
      // both are refilled from the snapshot at every scrape: a counter is added to once after its reset
      const counter = (metric: string, help: string, read: (m: NodeMetrics) => number) =>
        new Counter<NodeLabel>({
          ...named(metric, help),
          collect() {
            this.reset();
            for (const n of nodes()) this.inc(n.labels, read(n.metrics));
          },
        });
      const gauge = (metric: string, help: string, read: (m: NodeMetrics) => number) =>
        new Gauge<NodeLabel>({
          ...named(metric, help),
          collect() {
            this.reset();
            for (const n of nodes()) this.set(n.labels, read(n.metrics));
          },
        });
      counter('records_in_total', 'Total number of records received', (m) => m.recordsIn);
      counter('records_out_total', 'Total number of records sent', (m) => m.recordsOut);
      counter('messages_processed_total', 'Total number of messages processed', (m) => m.messagesProcessed);
      counter('exceptions_total', 'Total number of exceptions', (m) => m.exceptions);
      gauge('process_latency_us', 'Process latency of the last record in microseconds', (m) =>
        Math.max(0, Math.round(m.processLatencyUs)),
      );
      this.registry.registerMetric(new NodeLatencyHistogram(`kuiper_${kind}_process_latency_us_hist`, nodes));
      gauge('buffer_length', 'Length of the input buffer', (m) => m.bufferLength);
    }
    const snapshot = () => this.snapshot;
    new Gauge<'ruleID'>({
      name: 'kuiper_rule_status',
      help: 'Rule status: 1 running, 0 stopped, -1 stopped by an error',
      labelNames: ['ruleID'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const r of snapshot()) this.set({ ruleID: r.id }, r.status);
      },
    });
    new Gauge<'status'>({
      name: 'kuiper_rule_count',
      help: 'Number of rules by status',
      labelNames: ['status'],
      registers: [this.registry],
      collect() {
        const running = snapshot().filter((r) => r.status === 1).length;
        this.set({ status: 'running' }, running);
        this.set({ status: 'stop' }, snapshot().length - running);
      },
    });
  }

  /** The exposition text of every metric, read now. */
  async scrape(): Promise<string> {
    this.snapshot = this.rules.metricsSnapshot();
    const byKind = new Map<NodeKind, LabelledNode[]>(KINDS.map((k) => [k, []]));
    for (const r of this.snapshot) {
      for (const metrics of r.nodes) {
        const k = nodeKind(metrics.name);
        if (k) byKind.get(k.kind)!.push({ labels: { instance: '0', op: k.op, rule: r.id, type: k.kind }, metrics });
      }
    }
    this.byKind = byKind;
    try {
      const [own, process] = await Promise.all([this.registry.metrics(), this.process.metrics()]);
      return `${own}\n${sortLabelPairs(process)}`;
    } finally {
      this.snapshot = [];
      this.byKind = new Map();
    }
  }

  /** Cluster mode: every series, the process ones included, carries the node's label (docs/cluster.md §5). */
  labelNode(node: string): void {
    this.registry.setDefaultLabels({ node });
    this.process.setDefaultLabels({ node });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** `GET /metrics` on the REST server. */
  route(http: FastifyInstance): void {
    http.get('/metrics', async (_req, reply) =>
      reply
        .code(200)
        .type(this.contentType)
        .send(await this.scrape()),
    );
  }

  /**
   * A server of its own answering `GET /metrics`; resolves with its port. `authorize` (authentication on) gives the
   * reason to refuse a scrape, answered 401 as the REST API does.
   */
  async listen(
    host: string,
    port: number,
    authorize?: (authorization: string | undefined) => string | undefined,
  ): Promise<number> {
    const server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405).end();
        return;
      }
      const refused = authorize?.(req.headers.authorization);
      if (refused !== undefined) {
        res
          .writeHead(401, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' })
          .end(refused);
        return;
      }
      this.scrape().then(
        (text) => res.writeHead(200, { 'content-type': this.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(String(err)),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    return (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
