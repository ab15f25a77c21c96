/**
 * The connectors service of one server: the registry with every built-in connector and format, config keys, the
 * memory topic bus, pooled MQTT connections, the HTTP data server with its websocket endpoints, and the factory of
 * sink nodes the runtime wires into topologies.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { fileAccessRoots, type EddyConfig, type Home } from '../config/index.js';
import { FileRoots } from '../core/files.js';
import { AuthError, verifyToken } from '../core/jwt.js';
import type { KVStore } from '../store/kv.js';
import type { RuleAction, RuleDef, SinkNode, SinkNodeOptions } from '../contracts/index.js';
import type { StreamCatalog } from '../catalog/types.js';
import { parseSelect } from '../sql/index.js';
import { readerUses, sinkUses, type ConnectorUse } from './uses.js';
import { ConfKeys } from './confkeys.js';
import { Registry } from './registry.js';
import { BUILTIN_DECLARATIONS } from './builtins.js';
import type { ConnectorHost } from './declaration.js';
import { MemoryBus } from './memory/bus.js';
import { MqttPool } from './mqtt/connection.js';
import { MqttSessionLedger } from './mqtt/sessions.js';
import { NeuronPool, type NeuronLinks } from './neuron/pool.js';
import { NeuronRelayServer, type NeuronRelayClient } from './neuron/relay.js';
import { MainRelayServer, type MainRelayClient } from './main-relay.js';
import { DataServer, WsEndpoints } from './dataserver.js';
import { DataRelayServer, type DataRelayClient, type PushHub, type WsEndpointsPort } from './data-relay.js';
import { HttpPushHub } from './http/push-source.js';
import type { MessagePort } from 'node:worker_threads';
import { createSinkNode, sinkCacheNamespace, type SinkDefaults } from './pipeline/sinknode.js';
import { compileTemplate, renderTemplate } from '../template/index.js';

export { Registry } from './registry.js';
export { ConfKeys, type ConfKind, type ConfMap } from './confkeys.js';
export { DataServer, WsEndpoints } from './dataserver.js';
export { MemoryBus } from './memory/bus.js';
export { MqttPool } from './mqtt/connection.js';

export interface ConnectorsOptions {
  home: Home;
  config: EddyConfig;
  /** environment for the `<FILE>__...` overrides of the etc config-key files */
  env: NodeJS.ProcessEnv;
  store: KVStore;
  logger: Logger;
  /**
   * Load each connector family when a rule first uses it (`prepareRule`) rather than all at start: a rule worker,
   * whose rules are planned only after `prepareRule`. The main thread creates connectors wherever a request needs one
   * and loads every family at start.
   */
  onDemand?: boolean;
  /** on a rule worker: the main thread's data server, where its httppush routes and websocket endpoints live */
  relay?: DataRelayClient;
  /** on a rule worker: the main thread's neuron connections */
  neuronRelay?: NeuronRelayClient;
  /** on a rule worker: the main thread's instances of the connectors that keep them there (main-relay.ts) */
  mainRelay?: MainRelayClient;
}

/** `source.httpServerTls: {certfile, keyfile}` of kuiper.yaml, read once; both files are needed. */
function dataServerTls(source: object): { cert: Buffer; key: Buffer } | undefined {
  const tls = (source as { httpServerTls?: unknown }).httpServerTls;
  if (typeof tls !== 'object' || tls === null) return undefined;
  const { certfile, keyfile } = tls as { certfile?: unknown; keyfile?: unknown };
  if (typeof certfile !== 'string' || typeof keyfile !== 'string' || certfile === '' || keyfile === '')
    return undefined;
  return { cert: readFileSync(certfile), key: readFileSync(keyfile) };
}

export class Connectors implements ConnectorHost {
  readonly registry: Registry;
  readonly confKeys: ConfKeys;
  /** the server's memory topics, shared with its worker threads (memory/bus.ts) */
  readonly memory: MemoryBus;
  readonly mqtt: MqttPool;
  readonly neuron: NeuronLinks;
  readonly dataServer: DataServer;
  readonly wsEndpoints: WsEndpointsPort;
  readonly pushHub: PushHub;
  private relayServer: DataRelayServer | undefined;
  private neuronRelayServer: NeuronRelayServer | undefined;
  private mainRelayServer: MainRelayServer | undefined;
  readonly mainRelay: MainRelayClient | undefined;
  readonly fileRoots: FileRoots | undefined;
  readonly checkContext: ConnectorHost['checkContext'];
  private readonly sinkDefaults: SinkDefaults;
  private readonly sharedByKey = new Map<string, unknown>();

  private constructor(private readonly opts: ConnectorsOptions) {
    this.memory = new MemoryBus(`eddy-memory-bus:${opts.home.root}`);
    this.confKeys = new ConfKeys({
      home: opts.home,
      env: opts.env,
      storage: opts.config.basic.cfgStorageType,
      store: opts.store,
      defaultsFile: (type) => this.registry.defaultsFile(type),
    });
    this.registry = new Registry(this.confKeys, this);
    this.mqtt = new MqttPool(new MqttSessionLedger(opts.store));
    const src = opts.config.source ?? { httpServerIp: '0.0.0.0', httpServerPort: 10081 };
    this.dataServer = new DataServer({
      host: src.httpServerIp || '0.0.0.0',
      port: Number(src.httpServerPort ?? 10081),
      logger: opts.logger.child({ component: 'dataserver' }),
      tls: dataServerTls(src),
      maxBodySize: opts.config.basic?.maxBodySize,
      authorize: opts.config.basic?.authentication ? dataServerAuth(join(opts.home.etc, 'mgmt')) : undefined,
    });
    this.wsEndpoints = opts.relay ?? new WsEndpoints(this.dataServer);
    this.pushHub = opts.relay ?? new HttpPushHub(this.dataServer);
    this.neuron = opts.neuronRelay ?? new NeuronPool();
    this.mainRelay = opts.mainRelay;
    const s = opts.config.sink ?? ({} as Partial<SinkDefaults>);
    this.sinkDefaults = {
      enableCache: s.enableCache ?? false,
      memoryCacheThreshold: s.memoryCacheThreshold ?? 1024,
      maxDiskCache: s.maxDiskCache ?? 1024000,
      bufferPageSize: s.bufferPageSize ?? 256,
      resendInterval: s.resendInterval ?? 0,
      cleanCacheAtStop: s.cleanCacheAtStop ?? false,
    };
    // with authentication on, file sources and sinks stay inside the folders the API may use (docs/runtime.md §2)
    this.fileRoots = opts.config.basic?.authentication
      ? new FileRoots(fileAccessRoots(opts.home, opts.config))
      : undefined;
    this.checkContext = { ruleId: '', logger: opts.logger, dataDir: opts.home.data, render: renderTemplate };
    for (const d of BUILTIN_DECLARATIONS) this.registry.declare(d);
  }

  get formats(): Registry {
    return this.registry;
  }

  shared<T>(key: string, make: () => T): T {
    if (!this.sharedByKey.has(key)) this.sharedByKey.set(key, make());
    return this.sharedByKey.get(key) as T;
  }

  /** Creates the service and loads the user config keys. */
  static async create(opts: ConnectorsOptions): Promise<Connectors> {
    const c = new Connectors(opts);
    await c.confKeys.load();
    if (!opts.onDemand) await c.registry.prepareAll();
    return c;
  }

  /**
   * Loads the connector families a rule uses before it is planned (docs/runtime.md §1.10): the sources and formats of
   * the streams and tables its statement reads, and its actions' sinks and formats. A graph rule names its connectors
   * in nodes of its own shape: every family is loaded. A statement that does not parse loads nothing (planning it
   * answers the parser's error).
   */
  async prepareRule(rule: RuleDef, catalog: StreamCatalog): Promise<void> {
    if (rule.sql === undefined) return this.registry.prepareAll();
    let names: string[];
    try {
      // the tree the planner reads next: parseSelect keeps it
      const stmt = parseSelect(rule.sql);
      names = [stmt.from.name, ...stmt.joins.map((j) => j.source.name)];
    } catch {
      return;
    }
    const r = this.registry;
    const uses: ConnectorUse[] = [];
    for (const name of names) {
      const def = catalog.get(name);
      if (def) uses.push(...readerUses(def, r));
    }
    for (const action of rule.actions)
      for (const [type, raw] of Object.entries(action)) uses.push(...sinkUses(type, raw, r));
    const loads = uses.map((u) => r.prepare(u.kind, u.type));
    await Promise.all(loads);
  }

  /** Serves the data server to a rule worker through `port` (data-relay.ts); main thread only. */
  serveWorker(port: MessagePort): void {
    this.relayServer ??= new DataRelayServer(() => this.pushHub, this.wsEndpoints);
    this.relayServer.serve(port);
  }

  /** Serves instances of this thread's connectors to a rule worker through `port` (main-relay.ts); main thread only. */
  serveMainConnectors(port: MessagePort): void {
    this.mainRelayServer ??= new MainRelayServer({
      source: (type) => this.registry.source(type),
      sink: (type) => this.registry.sink(type),
      logger: this.opts.logger,
      dataDir: this.opts.home.data,
      render: renderTemplate,
    });
    this.mainRelayServer.serve(port);
  }

  /** Serves the neuron connections to a rule worker through `port` (neuron/relay.ts); main thread only. */
  serveNeuron(port: MessagePort): void {
    if (!(this.neuron instanceof NeuronPool)) throw new TypeError('a rule worker serves no neuron relay');
    this.neuronRelayServer ??= new NeuronRelayServer(this.neuron);
    this.neuronRelayServer.serve(port);
  }

  /** Renders a Go text/template (cached per text) against data. */
  render(template: string, data: unknown): string {
    return renderTemplate(template, data);
  }

  /** The node of one rule action; throws EddyError 2201 for an unknown sink type or invalid properties. */
  createSinkNode(opts: SinkNodeOptions): SinkNode {
    return createSinkNode(opts, {
      registry: this.registry,
      store: this.opts.store,
      sinkDefaults: this.sinkDefaults,
      dataDir: this.opts.home.data,
      render: (t, d) => renderTemplate(t, d),
      checkTemplate: (t) => void compileTemplate(t),
    });
  }

  /** Deletes the failure caches of a rule's actions (rule deletion). */
  async dropSinkCaches(ruleId: string, actions: readonly RuleAction[]): Promise<void> {
    for (let i = 0; i < actions.length; i++) {
      for (const type of Object.keys(actions[i])) await this.opts.store.clear(sinkCacheNamespace(ruleId, type, i));
    }
  }

  /** Ends the persistent MQTT sessions a deleted rule opened, so that brokers stop keeping messages for it. */
  async dropMqttSessions(ruleId: string): Promise<void> {
    await this.mqtt.endSessions(ruleId);
  }

  /** Closes broker connections, websocket endpoints and the data server (shutdown). */
  async close(): Promise<void> {
    this.memory.close();
    await this.wsEndpoints.close();
    await this.dataServer.close();
    await this.mqtt.close();
    this.neuron.close();
  }
}

/** With authentication on, the data server asks for the REST API's token (`Authorization` header) on every request. */
function dataServerAuth(mgmtDir: string): (req: IncomingMessage) => string | undefined {
  return (req) => {
    try {
      verifyToken(String(req.headers.authorization ?? ''), mgmtDir);
      return undefined;
    } catch (e) {
      return e instanceof AuthError ? e.message : `validate token error: ${(e as Error).message}`;
    }
  };
}
