/**
 * The entry of a rule worker thread (docs/runtime.md §1.10): builds its own connector registry, catalog view and
 * topology builder from the same home and configuration as the main thread, then opens and closes the topologies the
 * main thread places on it and reports their metrics, fatal errors and ends. The metadata store (checkpoints, sink
 * caches, config keys kept in the store) is the main thread's, reached by request.
 */
import { TurnBatch } from '../core/turn-batch.js';
import { parentPort, workerData } from 'node:worker_threads';
import { loadConfig, resolveHome } from '../config/index.js';
import { createLogger } from '../config/log.js';
import { Connectors } from '../connectors/index.js';
import { DataRelayClient } from '../connectors/data-relay.js';
import { NeuronRelayClient } from '../connectors/neuron/relay.js';
import { MainRelayClient } from '../connectors/main-relay.js';
import { PortableRelayClient } from '../extensions/plugins-portable-relay.js';
import { createBuiltinRegistry } from '../functions/index.js';
import { createTopologyBuilder, RuleTopology } from '../runtime/topology.js';
import { GraphTopology } from '../runtime/graph-topology.js';
import type { TopologyBase } from '../runtime/topology-base.js';
import { WindowNode } from '../runtime/windows.js';
import { ScriptService, SCRIPT_NS } from '../extensions/scripts.js';
import { trackActivity } from '../runtime/node.js';
import { setDefaultZone } from '../values/index.js';
import { EddyError } from '../core/errors.js';
import { protobufDeclaration } from '../connectors/formats/index.js';
import { useIdleCollector } from '../core/idle-memory.js';
import { endLog, ruleLogger, type LogDestination } from '../core/rule-log.js';
import { join } from 'node:path';
import { NativeRuntime } from '../extensions/plugins-native-runtime.js';
import type { StreamCatalog, StreamDef, StreamKind } from '../catalog/types.js';
import type { KVOp, KVStore } from '../store/kv.js';
import { MainFunctionStandIns } from './main-functions.js';
import type { FromWorker, NodeMetricsRow, PlannedInfo, RuleRequest, ToWorker, WorkerInit } from './protocol.js';
import type { NodeMetrics, Topology, TraceSpan } from '../contracts/index.js';
import { Replies } from '../core/replies.js';

/** Node slots per topology in an activity id (pool.ts decodes it the same way). */
const ACTIVITY_NODES = 4096;

/** How often the metrics of changed topologies are sent to the main thread. */
const METRICS_INTERVAL_MS = 100;
/**
 * A topology is looked at every {@link METRICS_INTERVAL_MS} while it works and for this many reports after (a sink's
 * answer may come a little later); every topology is looked at once in this many reports, which catches what changes
 * with no record moving (a connection lost or made, a late send failure). Looking at every topology at every report
 * cost O(rules) ten times a second: 16% of a worker's CPU while 8,000 rules were created (issue 22).
 */
const WATCH_REPORTS = 5;
const SWEEP_EVERY = 10;
/** Spans of traced rules waiting for the next metrics message, at most (the rest are dropped). */
const MAX_PENDING_SPANS = 10_000;

if (!parentPort) throw new Error('the rule worker must run in a worker thread');
const port = parentPort;
const init = workerData as WorkerInit;
/** Messages for the main thread, sent together at the end of this turn of the event loop (as the pool sends its own). */
const outbox = new TurnBatch<FromWorker>((list) =>
  port.postMessage(list.length === 1 ? list[0] : ({ ev: 'batch', messages: list } satisfies FromWorker)),
);
const post = (m: FromWorker): void => outbox.add(m);

/** The main thread's store, by request. */
class MainStore implements KVStore {
  readonly replies = new Replies<unknown>();
  private call<T>(method: string, ...args: unknown[]): Promise<T> {
    return this.replies.ask((id) => post({ ev: 'kv', id, method, args })) as Promise<T>;
  }
  get = (ns: string, key: string) => this.call<string | undefined>('get', ns, key);
  set = (ns: string, key: string, value: string) => this.call<void>('set', ns, key, value);
  setIfAbsent = (ns: string, key: string, value: string) => this.call<boolean>('setIfAbsent', ns, key, value);
  delete = (ns: string, key: string) => this.call<boolean>('delete', ns, key);
  keys = (ns: string) => this.call<string[]>('keys', ns);
  entries = (ns: string) => this.call<Array<[string, string]>>('entries', ns);
  clear = (ns: string) => this.call<void>('clear', ns);
  batch = (ops: readonly KVOp[]) => this.call<void>('batch', ops);
  close = () => Promise.resolve();
}

/** The streams and tables of the main thread, kept up to date by the changes each open carries. */
class CatalogView implements StreamCatalog {
  private readonly defs = new Map<string, StreamDef>();
  apply(changed: StreamDef[], dropped: string[]): void {
    for (const d of changed) this.defs.set(d.name, d);
    for (const n of dropped) this.defs.delete(n);
  }
  get(name: string): StreamDef | undefined {
    return this.defs.get(name);
  }
  list(kind: StreamKind): StreamDef[] {
    return [...this.defs.values()].filter((d) => d.kind === kind);
  }
}

function metricsRows(nodes: readonly NodeMetrics[]): NodeMetricsRow[] {
  return nodes.map((n) => [
    n.name,
    n.recordsIn,
    n.recordsOut,
    n.messagesProcessed,
    n.processLatencyUs,
    n.bufferLength,
    n.lastInvocation,
    n.exceptions,
    n.lastException,
    n.lastExceptionTime,
    n.busyUs,
    n.latencyCounts ? Array.from(n.latencyCounts) : null,
    n.latencySumUs,
    n.connection,
    n.failingSince,
  ]);
}

/** The bytes a topology's windows hold, estimated. */
function heldBytes(topo: TopologyBase): number {
  let n = 0;
  for (const node of topo.queueNodes()) if (node instanceof WindowNode) n += node.heldBytes;
  return n;
}

/** What the main thread shows of a planned topology. */
function plannedInfo(topo: Topology): PlannedInfo {
  return {
    nodes: topo.nodes().map((n) => n.name),
    printable: topo.printable(),
    sources:
      topo instanceof RuleTopology
        ? topo.plan.sources.map((s) => s.name)
        : topo instanceof GraphTopology
          ? [...topo.reads]
          : [],
  };
}

/** Changes whenever a node processed, failed, buffered something or saw its connection change. */
function signature(nodes: readonly NodeMetrics[]): number {
  let s = 0;
  for (const n of nodes)
    s +=
      n.messagesProcessed +
      n.recordsOut +
      n.exceptions * 7 +
      n.bufferLength * 13 +
      n.lastInvocation +
      n.connectionChanges * 17 +
      n.failingSince;
  return s;
}

async function main(): Promise<void> {
  const home = resolveHome(init.home);
  const config = loadConfig(home, init.env);
  try {
    setDefaultZone(config.basic.timezone);
  } catch {
    // the main thread logs the unknown zone
  }
  const logger = createLogger(config, home).child({ worker: init.index });
  /** topologies that worked lately, by handle: the reports left before they are only swept (WATCH_REPORTS) */
  const watched = new Map<number, number>();
  trackActivity(new Int32Array(init.activity), (activityId) => {
    watched.set(Math.floor(activityId / ACTIVITY_NODES), WATCH_REPORTS);
  });
  // this thread's heap is its own: a burst of messages leaves it grown until a collection here gives it back
  useIdleCollector();
  const store = new MainStore();
  // each connector family is loaded here when a rule first uses it: a worker running MQTT rules holds no other client
  const connectors = await Connectors.create({
    home,
    config,
    env: init.env,
    store,
    logger,
    relay: init.relays.data ? new DataRelayClient(init.relays.data) : undefined,
    neuronRelay: init.relays.neuron ? new NeuronRelayClient(init.relays.neuron) : undefined,
    mainRelay: init.relays.connectors ? new MainRelayClient(init.relays.connectors) : undefined,
    onDemand: true,
  });
  const catalog = new CatalogView();
  // JavaScript functions run here, each call under the script time limit (docs/runtime.md §8): a looping function
  // holds this thread, never the main one
  const functions = createBuiltinRegistry();
  const scripts = new ScriptService({ store, functions, logger });
  const scriptTexts = new Map<string, string>();
  // service and portable-plugin functions: stand-ins whose calls cross to the main thread
  const standIns = new MainFunctionStandIns(functions, post);
  // portable-plugin sources and sinks: their sockets are this thread's, their start and stop cross to the main thread
  const portable = init.relays.portable
    ? new PortableRelayClient(init.relays.portable, (d) => connectors.registry.declare(d))
    : undefined;
  // protobuf rules read the schema files here, as the main thread does; protobuf.js is imported with the first of them
  connectors.registry.declare(
    protobufDeclaration(async () => {
      const { SchemaFiles } = await import('../catalog/schema-files.js');
      return new SchemaFiles(home.data, home.etc);
    }),
  );
  // native plugins: the modules the main thread loaded, loaded here too so their rules run on this thread
  const natives = new NativeRuntime(connectors.registry, functions);
  const syncNatives = () => natives.sync(join(home.plugins, 'native', 'loaded.json'), (msg) => logger.warn(msg));
  await syncNatives();
  const builder = createTopologyBuilder({
    catalog,
    functions,
    connectors: connectors.registry,
    createSinkNode: (o) => connectors.createSinkNode(o),
    store,
    dataDir: home.data,
    logger,
  });
  // each topology's node list is kept: the metrics scan reads every topology ten times a second
  const topologies = new Map<number, { topo: TopologyBase; nodes: readonly NodeMetrics[]; sig: number }>();
  /** planned for an open to come: a rule is planned once, here, and opened from that plan */
  const prepared = new Map<number, TopologyBase>();

  /** finished spans of traced rules, sent with the metrics (docs/runtime.md §1.11) */
  const spans: Array<[number, TraceSpan]> = [];
  let confRevision = -1;
  let scriptRevision = -1;
  /** Brings this thread's catalog, config keys and JavaScript functions to the main thread's state. */
  const syncState = async (m: RuleRequest): Promise<void> => {
    catalog.apply(m.streams, m.dropped);
    // config keys may have changed through the REST API since the last request
    if (m.confRevision < 0 || m.confRevision !== confRevision) {
      await connectors.confKeys.load();
      confRevision = m.confRevision;
    }
    if (m.scriptRevision < 0 || m.scriptRevision !== scriptRevision) {
      const stored = new Map(await store.entries(SCRIPT_NS));
      for (const [id, text] of stored) {
        if (scriptTexts.get(id) === text) continue;
        scriptTexts.set(id, text);
        await scripts.applyStored(id, text).catch((err: unknown) => logger.warn({ err }, 'javascript function %s', id));
      }
      for (const id of [...scriptTexts.keys()]) {
        if (stored.has(id)) continue;
        scriptTexts.delete(id);
        await scripts.applyStored(id, undefined);
      }
      scriptRevision = m.scriptRevision;
    }
    standIns.sync(m.mainFunctions);
    portable?.sync(m.portable);
  };

  /** {@link syncState}, then the native plugins and the connector families the rule uses, before planning it. */
  const sync = async (m: RuleRequest): Promise<void> => {
    await syncState(m);
    await syncNatives();
    await connectors.prepareRule(m.rule, catalog);
  };

  /** the files of the rules with `logFilename`, by handle: the main thread appends its lines about the rule too */
  const ruleLogs = new Map<number, LogDestination>();
  const endRuleLog = (handle: number): void => {
    endLog(ruleLogs.get(handle));
    ruleLogs.delete(handle);
  };
  const planOf = (m: RuleRequest): TopologyBase => {
    endRuleLog(m.handle);
    const own = ruleLogger(m.rule.id, m.options, logger, home.log);
    if (own.dest) ruleLogs.set(m.handle, own.dest);
    // the in-process builder makes only these two (runtime/topology.ts)
    return builder.build(m.rule, m.options, own.logger) as RuleTopology | GraphTopology;
  };

  const plan = async (m: RuleRequest): Promise<PlannedInfo> => {
    await sync(m);
    const topo = planOf(m);
    prepared.set(m.handle, topo);
    return plannedInfo(topo);
  };

  const open = async (m: RuleRequest): Promise<PlannedInfo | undefined> => {
    // the open carries the catalog changes made since the last request: they are applied even when the rule was
    // planned already, else a stream created between this rule's plan and its open never reaches this thread; what
    // its plan loaded (native plugins, connector families) is not looked at again
    let topo = prepared.get(m.handle);
    prepared.delete(m.handle);
    await (topo === undefined ? sync(m) : syncState(m));
    // the main thread has what the plan answered, as a rule; a restart attempt, a cron firing or a replaced worker is
    // planned here and now, and the answer says what that plan is
    const answer = topo === undefined || !m.known;
    topo ??= planOf(m);
    topologies.set(m.handle, { topo, nodes: topo.nodes(), sig: -1 });
    // handle and node index in one id: the main thread can name the node even while this thread is stuck in it
    topo.queueNodes().forEach((n, i) => (n.activityId = m.handle * ACTIVITY_NODES + i + 1));
    topo.onFatal((err) => post({ ev: 'fatal', handle: m.handle, message: err.message }));
    topo.onEnd(() => post({ ev: 'end', handle: m.handle }));
    try {
      await topo.open();
    } catch (err) {
      topologies.delete(m.handle);
      throw err;
    }
    // the metrics as the open left them (the connections: rules/health.ts) reach the main thread before the reply, and
    // once more after it when the reply gives the main thread fresh node metrics to fill (a plan made by this open)
    post({ ev: 'metrics', topologies: [[m.handle, metricsRows(topo.nodes()), heldBytes(topo)]] });
    const entry = topologies.get(m.handle);
    if (entry) entry.sig = answer ? -1 : signature(entry.nodes);
    watched.set(m.handle, WATCH_REPORTS);
    return answer ? plannedInfo(topo) : undefined;
  };

  const close = async (handle: number): Promise<void> => {
    prepared.delete(handle);
    const t = topologies.get(handle);
    if (!t) return endRuleLog(handle);
    topologies.delete(handle);
    const rows = metricsRows(t.nodes);
    await t.topo.close();
    endRuleLog(handle);
    post({ ev: 'metrics', topologies: [[handle, rows, 0]] });
  };

  const reply = (req: number, p: Promise<PlannedInfo | void>): void => {
    p.then(
      (planned) => post(planned ? { ev: 'reply', req, planned } : { ev: 'reply', req }),
      (err: unknown) =>
        post({
          ev: 'reply',
          req,
          error: {
            message: err instanceof Error ? err.message : String(err),
            code: err instanceof EddyError ? err.code : undefined,
          },
        }),
    );
  };

  const handle = (m: ToWorker): void => {
    switch (m.op) {
      case 'plan':
        reply(m.req, plan(m));
        break;
      case 'open':
        reply(m.req, open(m));
        break;
      case 'release':
        prepared.delete(m.handle);
        if (!topologies.has(m.handle)) endRuleLog(m.handle);
        break;
      case 'close':
        reply(m.req, close(m.handle));
        break;
      case 'resetOffset': {
        const t: Topology | undefined = topologies.get(m.handle)?.topo;
        reply(
          m.req,
          t?.resetOffset
            ? t.resetOffset(m.streamName, m.input)
            : Promise.reject(new Error(t ? 'the rule cannot reset its sources' : 'the rule is not running')),
        );
        break;
      }
      case 'trace':
        topologies.get(m.handle)?.topo.trace(m.strategy, (span) => {
          // bounded: spans the main thread has not taken yet are dropped past this many
          if (spans.length < MAX_PENDING_SPANS) spans.push([m.handle, span]);
        });
        break;
      case 'ping':
        post({ ev: 'pong', seq: m.seq });
        break;
      case 'kv':
        store.replies.settle(m.id, m.error, m.value);
        break;
      case 'called':
        standIns.answer(m);
        break;
      case 'stall': {
        const end = Date.now() + m.ms;
        while (Date.now() < end) {
          // busy on purpose: a test's stand-in for an evaluation that never yields
        }
        break;
      }
      case 'crash':
        process.exit(1);
        break;
      case 'batch':
        // in order, in this one task: the rules opened together subscribe together (one SUBSCRIBE packet)
        for (const one of m.messages) handle(one);
    }
  };
  port.on('message', handle);

  let reports = 0;
  setInterval(() => {
    if (spans.length > 0) post({ ev: 'spans', spans: spans.splice(0) });
    const changed: Array<[number, NodeMetricsRow[], number]> = [];
    const look = (handle: number): boolean => {
      const t = topologies.get(handle);
      if (!t) return false;
      const sig = signature(t.nodes);
      if (sig === t.sig) return false;
      t.sig = sig;
      changed.push([handle, metricsRows(t.nodes), heldBytes(t.topo)]);
      return true;
    };
    if (++reports % SWEEP_EVERY === 0) {
      watched.clear();
      for (const handle of topologies.keys()) if (look(handle)) watched.set(handle, WATCH_REPORTS);
    } else {
      for (const [handle, left] of watched) {
        if (look(handle)) watched.set(handle, WATCH_REPORTS);
        else if (left > 1) watched.set(handle, left - 1);
        else watched.delete(handle);
      }
    }
    if (changed.length > 0) post({ ev: 'metrics', topologies: changed });
  }, METRICS_INTERVAL_MS);
  // alone, never inside a batch: the pool waits for this very message
  outbox.flush();
  port.postMessage({ ev: 'ready' } satisfies FromWorker);
}

main().catch((err: unknown) => {
  // the main thread sees the worker exit and replaces it
  console.error('rule worker failed to start', err);
  process.exit(1);
});
