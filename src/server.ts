/**
 * The composition root: config → store → catalog → connectors → extensions → REST → rules restored.
 * `startServer` is what `main.ts` runs and what tests start on a temporary home with port 0.
 */
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  fileAccessRoots,
  loadConfig,
  packageRoot,
  prepareHome,
  resolveHome,
  type EddyConfig,
  type Home,
} from './config/index.js';
import { FileRoots } from './core/files.js';
import { closeLogger, createLogger, type Logger } from './config/log.js';
import { openStore, type KVStore } from './store/index.js';
import { ekuiperStoreNotice } from './store/ekuiper-sqlite.js';
import { createHttp, unexpectedErrorCount } from './api/server.js';
import { registerRootRoutes } from './api/root.js';
import { metricsAuth, registerAuth } from './api/auth.js';
import { Catalog } from './catalog/catalog.js';
import { useIdleCollector } from './core/idle-memory.js';
import { registerStreamRoutes } from './api/streams.js';
import { UploadsService } from './catalog/uploads.js';
import { registerUploadRoutes } from './api/uploads.js';
import { SchemaRegistry } from './catalog/schemas.js';
import { registerSchemaRoutes } from './api/schemas.js';
import { protobufFieldsOrUndefined } from './connectors/formats/protobuf.js';
import { protobufDeclaration } from './connectors/formats/index.js';
import { BundleService } from './bundle/service.js';
import { TaskManager } from './bundle/tasks.js';
import { registerDataRoutes } from './api/data.js';
import { registerRulesetRoutes } from './api/ruleset.js';
import { Connectors } from './connectors/index.js';
import { registerConfKeyRoutes } from './api/confkeys.js';
import { registerConnectionRoutes } from './api/connections.js';
import { createBuiltinRegistry, type FunctionRegistry } from './functions/index.js';
import { setDefaultZone } from './values/index.js';
import { createTopologyBuilder, dropCheckpoints, RuleTopology, type RuntimeBuilder } from './runtime/topology.js';
import { explainQuery, validateQuery } from './plan/planner.js';
import { RuleService } from './rules/service.js';
import { createRuleEngine } from './rules/engine.js';
import { registerRuleRoutes } from './api/rules.js';
import { registerTraceRoutes } from './api/traces.js';
import { ScriptService } from './extensions/scripts.js';
import { registerUdfRoutes } from './api/udf.js';
import { ServiceManager } from './extensions/services.js';
import { registerServiceRoutes } from './api/services.js';
import { registerPluginRoutes } from './api/plugins.js';
import { registerCatalogRoutes } from './api/catalogs.js';
import { functionCatalog } from './functions/catalog.js';
import { operatorCatalog } from './plan/graph-validate.js';
import { PortableManager } from './extensions/plugins-portable.js';
import { NativeManager } from './extensions/plugins-native.js';
import { registerConfigRoutes } from './api/configs.js';
import type { PrometheusExporter } from './api/prometheus.js';
import { RuleTestService } from './rules/trial.js';
import { registerRuleTestRoutes } from './api/ruletest.js';
import { QueryService } from './rules/queries.js';
import { registerQueryRoutes } from './api/queries.js';
import { registerOpsRoutes } from './api/ops.js';
import { registerConsoleRoutes } from './api/console.js';
import { WorkerPool, workerCount } from './workers/pool.js';
import { clusterSettings, openCluster, type Cluster } from './cluster/index.js';
import { registerClusterRoutes } from './api/cluster.js';

/** Everything a service or route module may need; built once per server. */
export interface App {
  readonly home: Home;
  readonly config: EddyConfig;
  readonly logger: Logger;
  readonly store: KVStore;
  readonly http: FastifyInstance;
  /** streams and tables */
  readonly catalog: Catalog;
  /** configuration-file uploads */
  readonly uploads: UploadsService;
  /** protobuf schemas */
  readonly schemas: SchemaRegistry;
  /** connector registry, config keys, sink nodes, data server */
  readonly connectors: Connectors;
  /** SQL functions: built-ins and plugins */
  readonly functions: FunctionRegistry;
  /** JavaScript functions, registered in `functions` */
  readonly scripts: ScriptService;
  /** external services, their functions registered in `functions` */
  readonly services: ServiceManager;
  /** portable plugins: sources, sinks and functions run by child processes */
  readonly portables: PortableManager;
  /** native plugins (ES modules): connectors, functions and formats declared like built-ins */
  readonly natives: NativeManager;
  /** topology builder with the shared sources and lookup tables */
  readonly runtime: RuntimeBuilder;
  /** rule registry */
  readonly rules: RuleService;
  /** rule executor threads; undefined with `basic.workers: none` (every rule on the main thread) */
  readonly workers: WorkerPool | undefined;
  /** what the start-up says besides where things are: unknown settings, an eKuiper store in the home */
  readonly notices: readonly string[];
  /** cluster mode (`cluster.backend`, docs/cluster.md); undefined on a single node */
  readonly cluster: Cluster | undefined;
  /** Closers run in reverse order of registration at shutdown. */
  onClose(fn: () => Promise<void> | void): void;
}

export interface StartOptions {
  /** home folder (default EDDY_HOME or the current folder) */
  home?: string;
  /** environment used for `KUIPER__...` overrides (default process.env) */
  env?: NodeJS.ProcessEnv;
  /** key prefix when `store.type` is redis (tests isolate themselves with it) */
  redisPrefix?: string;
  /** lifetime of a rule trial run after its creation or last start (default 5 min; tests shorten it) */
  ruleTestTimeoutMs?: number;
}

export interface EddyServer {
  readonly app: App;
  /** base URL of the REST API, e.g. http://127.0.0.1:9081 */
  readonly url: string;
  /** `GET /metrics` URL when `basic.prometheus` is on (docs/rest-api.md §16.8) */
  readonly metricsUrl?: string;
  close(): Promise<void>;
}

export async function startServer(opts: StartOptions = {}): Promise<EddyServer> {
  const startedAt = Date.now();
  const base = await openHomeAndStore(opts);
  // the catalog's ports reach services built after it; they are only called once a request or rule needs them
  const later: LaterServices = {};
  const connectors = await openConnectors(base);
  const catalog = await loadCatalog(base, connectors, later);
  const { functions, scripts, services, portables, natives } = await loadFunctionsAndPlugins(base, connectors);
  applyDefaultZone(base);
  const runtime = buildRuntime(base, catalog, functions, connectors);
  const pool = startWorkerPool(base, catalog, functions, scripts, runtime, connectors, portables);
  const rules = buildRuleService(base, catalog, functions, connectors, runtime, pool);
  const app = assembleApp(base, {
    catalog,
    connectors,
    functions,
    scripts,
    services,
    portables,
    natives,
    runtime,
    rules,
    pool,
  });
  later.rules = rules;
  later.runtime = runtime;
  later.schemas = app.schemas;
  connectors.registry.declare(protobufDeclaration(async () => app.schemas));
  // the main thread loads every format at start (its callers create formats at once)
  await connectors.registry.prepare('format', 'protobuf');
  const { bundle, tasks } = await openBundleService(base, app);
  base.cluster?.attach({
    catalog,
    rules,
    confKeys: connectors.confKeys,
    uploads: app.uploads,
    schemas: app.schemas,
    scripts,
  });
  const close = closerOf(base);
  registerRoutes(app, { startedAt, bundle, tasks, opts, close });
  const prometheus = await exportMetrics(app);
  return listenAndRestore(app, { bundle, prometheus, close, closers: base.closers });
}

/** What every step after the first needs: the home folder with its config, logger, store and HTTP server. */
interface Base {
  readonly env: NodeJS.ProcessEnv;
  readonly home: Home;
  readonly config: EddyConfig;
  readonly logger: Logger;
  readonly store: KVStore;
  readonly http: FastifyInstance;
  readonly fileRoots: FileRoots;
  readonly notices: readonly string[];
  /** cluster mode: the backend holds the store (docs/cluster.md) */
  readonly cluster: Cluster | undefined;
  /** run in reverse order at shutdown */
  readonly closers: Array<() => Promise<void> | void>;
}

/** Services the catalog's ports call but that are built after the catalog. */
interface LaterServices {
  rules?: RuleService;
  runtime?: RuntimeBuilder;
  schemas?: SchemaRegistry;
}

function built<T>(service: T | undefined, name: string): T {
  if (service === undefined) throw new Error(`${name} used before the server built it`);
  return service;
}

async function openHomeAndStore(opts: StartOptions): Promise<Base> {
  const env = opts.env ?? process.env;
  const home = resolveHome(opts.home);
  prepareHome(home);
  const config = loadConfig(home, env);
  const logger = createLogger(config, home);
  const cluster = await joinClusterStore(config, logger);
  const store = cluster ? cluster.store : await openStore(config, home, opts.redisPrefix);
  const closers: Array<() => Promise<void> | void> = [
    () => (cluster ? cluster.closeStore() : store.close()),
    useIdleCollector(),
  ];
  const http = createHttp(logger, { maxBodySize: config.basic.maxBodySize });
  const fileRoots = new FileRoots(fileAccessRoots(home, config));
  const notices = [...config.warnings];
  if (config.store?.type !== 'redis') {
    const found = await ekuiperStoreNotice(
      join(home.data, config.store?.sqlite?.name || 'sqliteKV.db'),
      store,
      home.root,
    ).catch(() => undefined);
    if (found) notices.push(found);
  }
  for (const n of notices) logger.warn(n);
  return { env, home, config, logger, store, http, fileRoots, notices, closers, cluster };
}

/**
 * Cluster mode (docs/cluster.md §1): the backend is the metadata store, config keys included (they must reach every
 * node). Undefined without `cluster.backend`: a single node, as before.
 */
async function joinClusterStore(config: EddyConfig, logger: Logger): Promise<Cluster | undefined> {
  const settings = clusterSettings(config);
  if (!settings) return undefined;
  config.basic.cfgStorageType = 'kv';
  return openCluster(settings, logger);
}

async function openConnectors({ home, config, env, store, logger, closers }: Base): Promise<Connectors> {
  const connectors = await Connectors.create({ home, config, env, store, logger });
  closers.push(() => connectors.close());
  return connectors;
}

function loadCatalog({ store, logger }: Base, connectors: Connectors, later: LaterServices): Promise<Catalog> {
  return Catalog.load(
    store,
    {
      runningRulesUsing: (name) => built(later.rules, 'rules').runningRulesUsing(name),
      // FORMAT must be registered (plugins add formats); `custom` needs a format plugin, checked when a rule starts
      formatExists: (name) => name === 'custom' || connectors.registry.format(name) !== undefined,
      openLookup: (def) => built(later.runtime, 'runtime').lookups.openTable(def),
      closeLookup: (name) => built(later.runtime, 'runtime').lookups.closeTable(name),
      schemaFields: (schemaId) => protobufFieldsOrUndefined(built(later.schemas, 'schemas'), schemaId),
    },
    (name, err) => logger.warn({ err }, 'stream or table %s is stored but cannot be parsed; it is skipped', name),
  );
}

/** SQL functions from every origin, all registered before any rule is planned (rules are restored later). */
async function loadFunctionsAndPlugins(
  { home, config, store, logger, fileRoots, closers }: Base,
  connectors: Connectors,
): Promise<{
  functions: FunctionRegistry;
  scripts: ScriptService;
  services: ServiceManager;
  portables: PortableManager;
  natives: NativeManager;
}> {
  const functions = createBuiltinRegistry();
  const scripts = new ScriptService({ store, functions, logger });
  await scripts.load();
  // external-service functions come after built-ins and scripts (docs/runtime.md §5.1)
  const services = new ServiceManager({ store, functions, dir: join(home.data, 'services'), logger, fileRoots });
  await services.load();
  closers.push(() => services.close());
  // portable plugins register source/sink types and functions
  const portables = new PortableManager({
    store,
    functions,
    connectors: connectors.registry,
    confKeys: connectors.confKeys,
    dir: join(home.plugins, 'portable'),
    dataDir: home.data,
    pythonBin: config.portable?.pythonBin || 'python',
    initTimeoutMs: config.portable?.initTimeout || 5000,
    logger,
    fileRoots,
  });
  await portables.load();
  closers.push(() => portables.close());
  // native plugins (ES modules) declare connectors and functions as built-ins do; rule workers load the same modules
  const natives = new NativeManager({
    dir: join(home.plugins, 'native'),
    etcDir: home.etc,
    functions,
    connectors: {
      declare: (d) => connectors.registry.declare(d),
      source: (t) => connectors.registry.source(t),
      sink: (t) => connectors.registry.sink(t),
      forgetDefaults: (t) => connectors.confKeys.forgetDefaults(t),
    },
    logger,
    fileRoots,
  });
  await natives.load();
  return { functions, scripts, services, portables, natives };
}

/** The zone of datetime parsing/formatting and clock functions. */
function applyDefaultZone({ config, logger }: Base): void {
  try {
    setDefaultZone(config.basic.timezone);
  } catch (err) {
    logger.warn({ err }, 'unknown basic.timezone %s; the host zone is used', config.basic.timezone);
  }
}

function buildRuntime(
  { home, store, logger, closers }: Base,
  catalog: Catalog,
  functions: FunctionRegistry,
  connectors: Connectors,
): RuntimeBuilder {
  const runtime = createTopologyBuilder({
    catalog,
    functions,
    connectors: connectors.registry,
    createSinkNode: (o) => connectors.createSinkNode(o),
    store,
    dataDir: home.data,
    logger,
  });
  closers.push(() => runtime.close());
  return runtime;
}

/**
 * docs/runtime.md §1.10: rules that can run away from the main thread run on the workers, however few (one is enough
 * to keep a rule from holding the API); only `basic.workers: none` runs them all here.
 */
function startWorkerPool(
  { home, config, env, store, logger, closers, cluster }: Base,
  catalog: Catalog,
  functions: FunctionRegistry,
  scripts: ScriptService,
  runtime: RuntimeBuilder,
  connectors: Connectors,
  portables: PortableManager,
): WorkerPool | undefined {
  const workers = workerCount(config.basic.workers ?? 0);
  const pool =
    workers > 0
      ? new WorkerPool({
          size: workers,
          home: home.root,
          env,
          store,
          catalog,
          functions,
          scriptRevision: () => scripts.revision,
          memoryLimitMb: Number(config.basic.workerMemoryLimit) > 0 ? Number(config.basic.workerMemoryLimit) : 0,
          parallelInstances: !cluster,
          local: runtime,
          connectors: connectors.registry,
          logger,
          heartbeatLimitMs: Number(config.basic.ruleEvalLimit) > 0 ? Number(config.basic.ruleEvalLimit) : undefined,
          confRevision: () => connectors.confKeys.revision,
          relays: {
            data: (port) => connectors.serveWorker(port),
            neuron: (port) => connectors.serveNeuron(port),
            portable: (port) => portables.serveWorker(port),
            connectors: (port) => connectors.serveMainConnectors(port),
          },
          portableConnectors: () => portables.installedConnectors(),
        })
      : undefined;
  if (pool) closers.push(() => pool.close());
  return pool;
}

function buildRuleService(
  { home, config, store, logger, closers, cluster }: Base,
  catalog: Catalog,
  functions: FunctionRegistry,
  connectors: Connectors,
  runtime: RuntimeBuilder,
  pool: WorkerPool | undefined,
): RuleService {
  const rules = new RuleService({
    store,
    logger,
    defaults: config.rule,
    engine: createRuleEngine({
      builder: cluster ? cluster.builder(pool ?? runtime) : (pool ?? runtime),
      sourcesOf: (topo) => {
        const planned = topo.plannedReads?.();
        if (planned) return [...planned];
        return topo instanceof RuleTopology ? topo.plan.sources.map((s) => s.name) : undefined;
      },
      validate: (sql, options) => validateQuery(sql, { catalog, functions, options }).sources,
      // planned here, never opened: the pool would only place the rule on a worker
      validateGraph: (rule, options) => runtime.build(rule, options, logger).printable().sources,
      explain: (sql, options) => explainQuery(sql, { catalog, functions, options }),
      cleanup: async (rule) => {
        // in a cluster, the node that ran the rule cleans up (another one's broker connection would cut its session)
        if (cluster && !cluster.cleansUp(rule.id)) return;
        await dropCheckpoints(store, rule.id);
        await connectors.dropSinkCaches(rule.id, rule.actions);
        // in the background: a broker that is away must not hold the DELETE for its connect timeout
        void connectors
          .dropMqttSessions(rule.id)
          .catch((err: unknown) =>
            logger.warn({ err, rule: rule.id }, 'cannot end the mqtt sessions of a deleted rule'),
          );
      },
    }),
    timezone: config.basic.timezone,
    rulePatrolInterval: config.basic.rulePatrolInterval,
    sinkConfKey: (type, resourceId) => connectors.registry.sinkProps(type, resourceId),
    logDir: home.log,
    placement: cluster,
  });
  closers.push(() => rules.close());
  return rules;
}

/** The services built so far, with the upload and schema stores, as the one `App` the route modules receive. */
function assembleApp(
  { home, config, logger, store, http, fileRoots, notices, closers, cluster }: Base,
  parts: Pick<
    App,
    'catalog' | 'connectors' | 'functions' | 'scripts' | 'services' | 'portables' | 'natives' | 'runtime' | 'rules'
  > & {
    pool: WorkerPool | undefined;
  },
): App {
  return {
    home,
    config,
    logger,
    store,
    http,
    catalog: parts.catalog,
    uploads: new UploadsService(join(home.data, 'uploads'), store, fileRoots),
    schemas: new SchemaRegistry(home.data, home.etc, store, fileRoots),
    connectors: parts.connectors,
    functions: parts.functions,
    scripts: parts.scripts,
    services: parts.services,
    portables: parts.portables,
    natives: parts.natives,
    runtime: parts.runtime,
    rules: parts.rules,
    workers: parts.pool,
    notices,
    cluster,
    onClose: (fn) => closers.push(fn),
  };
}

/** Import/export and its background tasks; an import a crash interrupted is rolled back or finished first. */
async function openBundleService(
  { store, logger, config, fileRoots, closers }: Base,
  app: App,
): Promise<{ bundle: BundleService; tasks: TaskManager }> {
  const { catalog, rules, connectors, scripts, portables, services, functions } = app;
  const tasks = new TaskManager(store, logger);
  await tasks.init();
  closers.push(() => tasks.close());
  const bundle = new BundleService({
    store,
    logger,
    catalog,
    rules,
    confKeys: connectors.confKeys,
    uploads: app.uploads,
    schemas: app.schemas,
    scripts,
    ruleDefaults: config.rule,
    timezone: config.basic.timezone,
    extensions: { nativePlugins: app.natives, portablePlugins: portables, Service: services },
    builtIn: (kind, name) =>
      kind === 'functions'
        ? functions.has(name)
        : kind === 'sources'
          ? !!connectors.registry.source(name) || !!connectors.registry.lookup(name)
          : !!connectors.registry.sink(name),
    propsValidator: (kind, type) => connectors.registry.propsValidator(kind, type),
    fileRoots,
    customSchemas: {
      records: () => app.natives.customRecords(),
      install: (name, soFile) => app.natives.installCustom(name, soFile),
    },
  });
  await bundle.recoverInterruptedImport();
  return { bundle, tasks };
}

/** Shuts the server down once: the REST server first, then every closer in reverse order of registration. */
function closerOf({ http, closers, logger }: Base): () => Promise<void> {
  let closed = false;
  return async () => {
    if (closed) return;
    closed = true;
    await http.close();
    for (const fn of closers.reverse()) {
      try {
        await fn();
      } catch (err) {
        logger.warn({ err }, 'error while shutting down');
      }
    }
    await closeLogger(logger);
  };
}

interface MetricsExport {
  readonly exporter: PrometheusExporter;
  /** served by the REST server rather than a server of its own */
  readonly onRest: boolean;
}

/** Every REST route, in the order the original registration used (the metrics route aside: {@link exportMetrics}). */
function registerRoutes(
  app: App,
  ctx: {
    startedAt: number;
    bundle: BundleService;
    tasks: TaskManager;
    opts: StartOptions;
    close: () => Promise<void>;
  },
): void {
  const { http, config, home, catalog, connectors, store, rules, scripts, services, portables, logger } = app;
  const { startedAt, bundle, tasks, close } = ctx;
  if (config.basic.authentication) registerAuth(http, join(home.etc, 'mgmt'));
  registerRootRoutes(http, startedAt);
  registerStreamRoutes(http, catalog);
  registerUploadRoutes(http, app.uploads, config.basic.maxBodySize);
  registerSchemaRoutes(http, app.schemas, app.natives);
  registerConfKeyRoutes(http, connectors);
  registerConnectionRoutes(http, connectors, store);
  if (app.cluster) registerClusterRoutes(http, app.cluster, rules);
  registerRuleRoutes(http, rules);
  registerTraceRoutes(http, rules);
  registerRuleTestRoutes(http, startRuleTrials(app, ctx.opts));
  registerQueryRoutes(http, startQueries(app));
  registerUdfRoutes(http, scripts);
  registerServiceRoutes(http, services);
  const requestExit = (code: number) => void close().finally(() => process.exit(code));
  registerPluginRoutes(http, { pluginHosts: config.basic.pluginHosts, portables, natives: app.natives, requestExit });
  registerDataRoutes(http, { bundle, tasks, requestExit });
  registerCatalogRoutes(http, {
    functionCatalog: () => functionCatalog(app.functions, app.natives),
    operatorCatalog,
    authentication: config.basic.authentication,
    requestExit,
  });
  registerRulesetRoutes(http, bundle);
  registerConfigRoutes(http, { config, logger, onTimezone: (zone) => rules.setTimezone(zone) });
  registerOpsRoutes(http, {
    startedAt,
    dataServer: {
      host: config.source.httpServerIp,
      configuredPort: Number(config.source.httpServerPort),
      port: () => connectors.dataServer.port,
    },
    ruleCount: () => rules.ids().length,
    ruleList: () => rules.list(),
    ruleSummary: (id) => rules.summary(id),
    ...(app.cluster ? { nodeId: () => app.cluster?.nodeId ?? '' } : {}),
  });
  registerConsoleRoutes(http, join(packageRoot(), 'console'));
}

function startRuleTrials(app: App, opts: StartOptions): RuleTestService {
  const { runtime, catalog, connectors, config, logger } = app;
  const trials = new RuleTestService({
    runtime,
    catalog,
    connectors: connectors.registry,
    endpoints: {
      acquire: (path, holder) => connectors.wsEndpoints.acquire(path, holder),
      release: (path, holder) => connectors.wsEndpoints.release(path, holder),
      get port() {
        return connectors.dataServer.port;
      },
    },
    defaults: config.rule,
    logger,
    timeoutMs: opts.ruleTestTimeoutMs,
  });
  app.onClose(() => trials.close());
  return trials;
}

/** `eddy query`'s temporary rules: never stored, gone with their reader (rules/queries.ts). */
function startQueries(app: App): QueryService {
  const { runtime, connectors, config, logger } = app;
  const ws = connectors.wsEndpoints;
  const queries = new QueryService({
    runtime,
    endpoints: {
      acquire: (path, holder) => ws.acquire(path, holder),
      release: (path, holder) => ws.release(path, holder),
      watch: (path, watcher) => ws.watch(path, watcher),
      broadcast: (path, data) => ws.broadcast(path, data),
      get port() {
        return connectors.dataServer.port;
      },
    },
    defaults: config.rule,
    logger,
  });
  app.onClose(() => queries.close());
  return queries;
}

/**
 * docs/rest-api.md §16.8: on the REST port when prometheusPort equals it, else on a server of its own. The exporter and
 * its client library load only when metrics are on (a few megabytes a server without them does not hold).
 */
async function exportMetrics({ config, rules, http }: App): Promise<MetricsExport | undefined> {
  if (!config.basic.prometheus) return undefined;
  const { PrometheusExporter } = await import('./api/prometheus.js');
  const exporter = new PrometheusExporter(rules, () => unexpectedErrorCount(http));
  const onRest = config.basic.prometheusPort === config.basic.restPort;
  if (onRest) exporter.route(http);
  return { exporter, onRest };
}

/** Listens, then restores the stored rules in the background; a failure to listen shuts everything down. */
async function listenAndRestore(
  app: App,
  ctx: {
    bundle: BundleService;
    prometheus: MetricsExport | undefined;
    close: () => Promise<void>;
    closers: Array<() => Promise<void> | void>;
  },
): Promise<EddyServer> {
  const { http, config, logger, rules } = app;
  const { bundle, prometheus, close } = ctx;
  // requests addressing rules wait for the stored rules to be registered (restored below, after listening)
  rules.expectRestore();
  try {
    const address = await http.listen({ host: config.basic.restIp, port: config.basic.restPort });
    const port = new URL(address).port;
    const url = `http://127.0.0.1:${port}`;
    logger.info('REST API listening on %s', address);
    if (app.cluster) await joinCluster(app, Number(port), prometheus, ctx.closers);
    const metricsUrl = prometheus ? await listenMetrics(app, prometheus, Number(port), ctx.closers) : undefined;
    // imports wait for the restore: a reset racing it would see rules come back
    bundle.waitFor(restoreInBackground(app, bundle));
    return { app, url, metricsUrl, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * Cluster mode: joins the cluster once the REST API listens (the node's address is known); leaving it is the first
 * step of a shutdown, so that the rules here stop and the other nodes take them at once.
 */
async function joinCluster(
  { cluster, config, catalog }: App,
  port: number,
  prometheus: MetricsExport | undefined,
  closers: Array<() => Promise<void> | void>,
): Promise<void> {
  if (!cluster) return;
  await cluster.start(config, port, catalog);
  closers.push(() => cluster.stop());
  prometheus?.exporter.labelNode(cluster.nodeId);
}

async function listenMetrics(
  { config, logger, home }: App,
  { exporter, onRest }: MetricsExport,
  restPort: number,
  closers: Array<() => Promise<void> | void>,
): Promise<string> {
  let metricsPort = restPort;
  if (!onRest) {
    closers.push(() => exporter.close());
    const authorize = config.basic.authentication ? metricsAuth(join(home.etc, 'mgmt')) : undefined;
    metricsPort = await exporter.listen(config.basic.restIp || '0.0.0.0', config.basic.prometheusPort, authorize);
    logger.info('Prometheus metrics listening on port %d', metricsPort);
  }
  return `http://127.0.0.1:${metricsPort}/metrics`;
}

/**
 * docs/runtime.md §10.3: lookup tables, then rules, restored once the REST API answers (not awaited). The tables
 * are registered at once and connect in the background: rule requests wait for the restore, not for connections.
 */
function restoreInBackground({ catalog, runtime, logger, rules, home }: App, bundle: BundleService): Promise<void> {
  return (async () => {
    const opening = catalog
      .list('table')
      .filter((def) => def.options.KIND === 'lookup')
      .map((def) =>
        runtime.lookups
          .openTable(def)
          .catch((err: unknown) => logger.error({ err }, 'lookup table %s cannot be opened', def.name)),
      );
    // docs/runtime.md §10.3 step 4 before step 6: the initial ruleset's streams exist before any request is read,
    // its rules before rule requests are answered (they wait for the restore)
    await bundle
      .importInitialRuleset(home.data)
      .catch((err: unknown) => logger.error({ err }, 'importing the initial ruleset failed'));
    await rules.restore();
    await Promise.all(opening);
  })().catch((err: unknown) => logger.error({ err }, 'restoring the rules failed'));
}
