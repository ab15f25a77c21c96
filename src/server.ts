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
import { createLogger, type Logger } from './config/log.js';
import { openStore, type KVStore } from './store/index.js';
import { createHttp } from './api/server.js';
import { registerRootRoutes } from './api/root.js';
import { registerAuth } from './api/auth.js';
import { Catalog } from './catalog/catalog.js';
import { registerStreamRoutes } from './api/streams.js';
import { UploadsService } from './catalog/uploads.js';
import { registerUploadRoutes } from './api/uploads.js';
import { SchemaRegistry } from './catalog/schemas.js';
import { registerSchemaRoutes } from './api/schemas.js';
import { protobufFieldsOrUndefined, protobufFormatFactory } from './connectors/protobuf.js';
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
import { ScriptService } from './extensions/scripts.js';
import { registerUdfRoutes } from './api/udf.js';
import { ServiceManager } from './extensions/services.js';
import { registerServiceRoutes } from './api/services.js';
import { registerPluginRoutes } from './api/plugins.js';
import { PortableManager } from './extensions/plugins-portable.js';
import { registerConfigRoutes } from './api/configs.js';
import { PrometheusExporter } from './api/prometheus.js';
import { RuleTestService } from './rules/trial.js';
import { registerRuleTestRoutes } from './api/ruletest.js';
import { registerOpsRoutes } from './api/ops.js';
import { registerConsoleRoutes } from './api/console.js';
import { RemoteTopology, WorkerPool, workerCount } from './workers/pool.js';

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
  /** topology builder with the shared sources and lookup tables */
  readonly runtime: RuntimeBuilder;
  /** rule registry */
  readonly rules: RuleService;
  /** rule executor threads, when `basic.workers` > 1 */
  readonly workers: WorkerPool | undefined;
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
  const home = resolveHome(opts.home);
  prepareHome(home);
  const config = loadConfig(home, opts.env ?? process.env);
  const logger = createLogger(config, home);
  const store = await openStore(config, home, opts.redisPrefix);
  const closers: Array<() => Promise<void> | void> = [() => store.close()];
  const http = createHttp(logger, { maxBodySize: config.basic.maxBodySize });
  const fileRoots = new FileRoots(fileAccessRoots(home, config));
  const connectors = await Connectors.create({ home, config, env: opts.env ?? process.env, store, logger });
  closers.push(() => connectors.close());
  const catalog = await Catalog.load(
    store,
    {
      runningRulesUsing: (name) => rules.runningRulesUsing(name),
      // FORMAT must be registered (plugins add formats); `custom` needs a format plugin, checked when a rule starts
      formatExists: (name) => name === 'custom' || connectors.registry.format(name) !== undefined,
      openLookup: (def) => runtime.lookups.openTable(def),
      closeLookup: (name) => runtime.lookups.closeTable(name),
      schemaFields: (schemaId) => protobufFieldsOrUndefined(app.schemas, schemaId),
    },
    (name, err) => logger.warn({ err }, 'stream or table %s is stored but cannot be parsed; it is skipped', name),
  );
  const functions = createBuiltinRegistry();
  // scripts are SQL functions: registered before any rule is planned (rules are restored later)
  const scripts = new ScriptService({ store, functions, logger });
  await scripts.load();
  // external-service functions come after built-ins and scripts (docs/runtime.md §5.1), also before rules are restored
  const services = new ServiceManager({ store, functions, dir: join(home.data, 'services'), logger, fileRoots });
  await services.load();
  closers.push(() => services.close());
  // portable plugins register source/sink types and functions, before rules are restored
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
  try {
    setDefaultZone(config.basic.timezone); // zone of datetime parsing/formatting and clock functions
  } catch (err) {
    logger.warn({ err }, 'unknown basic.timezone %s; the host zone is used', config.basic.timezone);
  }
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
  // docs/runtime.md §1.10: with more than one worker, rules that can run away from the main thread run on workers
  const workers = workerCount(config.basic.workers ?? 0);
  const pool =
    workers > 1
      ? new WorkerPool({
          size: workers,
          home: home.root,
          env: opts.env ?? process.env,
          store,
          catalog,
          functions,
          local: runtime,
          logger,
          heartbeatLimitMs: Number(config.basic.ruleEvalLimit) > 0 ? Number(config.basic.ruleEvalLimit) : undefined,
        })
      : undefined;
  if (pool) closers.push(() => pool.close());
  const rules = new RuleService({
    store,
    logger,
    defaults: config.rule,
    engine: createRuleEngine({
      builder: pool ?? runtime,
      sourcesOf: (topo) => {
        const t = topo instanceof RemoteTopology ? topo.local : topo;
        return t instanceof RuleTopology ? t.plan.sources.map((s) => s.name) : undefined;
      },
      validate: (sql, options) => validateQuery(sql, { catalog, functions, options }).sources,
      explain: (sql, options) => explainQuery(sql, { catalog, functions, options }),
      cleanup: async (rule) => {
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
  });
  closers.push(() => rules.close());
  const app: App = {
    home,
    config,
    logger,
    store,
    http,
    catalog,
    uploads: new UploadsService(join(home.data, 'uploads'), store, fileRoots),
    schemas: new SchemaRegistry(join(home.data, 'schemas'), join(home.etc, 'schemas', 'protobuf'), store, fileRoots),
    connectors,
    functions,
    scripts,
    services,
    portables,
    runtime,
    rules,
    workers: pool,
    onClose: (fn) => closers.push(fn),
  };

  connectors.registry.registerFormat('protobuf', protobufFormatFactory(app.schemas));
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
    extensions: { portablePlugins: portables, Service: services },
    builtIn: (kind, name) =>
      kind === 'functions'
        ? functions.has(name)
        : kind === 'sources'
          ? !!connectors.registry.source(name) || !!connectors.registry.lookup(name)
          : !!connectors.registry.sink(name),
    propsValidator: (kind, type) => connectors.registry.propsValidator(kind, type),
    fileRoots,
  });
  await bundle.recoverInterruptedImport();

  if (config.basic.authentication) registerAuth(http, join(home.etc, 'mgmt'));
  registerRootRoutes(http, startedAt);
  registerStreamRoutes(http, catalog);
  registerUploadRoutes(http, app.uploads, config.basic.maxBodySize);
  registerSchemaRoutes(http, app.schemas);
  registerConfKeyRoutes(http, connectors);
  registerConnectionRoutes(http, connectors, store);
  registerRuleRoutes(http, rules);
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
  closers.push(() => trials.close());
  registerRuleTestRoutes(http, trials);
  registerUdfRoutes(http, scripts);
  registerServiceRoutes(http, services);
  registerPluginRoutes(http, { pluginHosts: config.basic.pluginHosts, portables });
  registerDataRoutes(http, { bundle, tasks, requestExit: (code) => void close().finally(() => process.exit(code)) });
  registerRulesetRoutes(http, bundle);
  registerConfigRoutes(http, { config, logger, onTimezone: (zone) => rules.setTimezone(zone) });
  // docs/rest-api.md §16.8: on the REST port when prometheusPort equals it, else on a server of its own
  const prometheus = config.basic.prometheus ? new PrometheusExporter(rules) : undefined;
  const metricsOnRest = prometheus !== undefined && config.basic.prometheusPort === config.basic.restPort;
  if (prometheus && metricsOnRest) prometheus.route(http);
  registerOpsRoutes(http, {
    startedAt,
    dataServer: {
      host: config.source.httpServerIp,
      configuredPort: Number(config.source.httpServerPort),
      port: () => connectors.dataServer.port,
    },
    ruleCount: () => rules.ids().length,
    ruleList: () => rules.list(),
    ruleStatus: (id) => rules.status(id),
  });
  registerConsoleRoutes(http, join(packageRoot(), 'console'));

  let closed = false;
  const close = async () => {
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
    logger.flush?.();
  };

  // requests addressing rules wait for the stored rules to be registered (restored below, after listening)
  rules.expectRestore();
  try {
    const address = await http.listen({ host: config.basic.restIp, port: config.basic.restPort });
    const port = new URL(address).port;
    const url = `http://127.0.0.1:${port}`;
    logger.info('REST API listening on %s', address);
    let metricsUrl: string | undefined;
    if (prometheus) {
      let metricsPort = Number(port);
      if (!metricsOnRest) {
        closers.push(() => prometheus.close());
        metricsPort = await prometheus.listen(config.basic.restIp || '0.0.0.0', config.basic.prometheusPort);
        logger.info('Prometheus metrics listening on port %d', metricsPort);
      }
      metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    }
    // docs/runtime.md §10.3: lookup tables, then rules, restored once the REST API answers (not awaited). The tables are
    // registered at once and connect in the background: rule requests wait for the restore, not for connections.
    const booting = (async () => {
      const opening = catalog
        .list('table')
        .filter((def) => def.options.KIND === 'lookup')
        .map((def) =>
          runtime.lookups
            .openTable(def)
            .catch((err: unknown) => logger.error({ err }, 'lookup table %s cannot be opened', def.name)),
        );
      // docs/runtime.md §10.3 step 4 before step 6: the initial ruleset's streams exist before any request is read, its rules before
      // rule requests are answered (they wait for the restore)
      await bundle
        .importInitialRuleset(home.data)
        .catch((err: unknown) => logger.error({ err }, 'importing the initial ruleset failed'));
      await rules.restore();
      await Promise.all(opening);
    })().catch((err: unknown) => logger.error({ err }, 'restoring the rules failed'));
    // imports wait for the restore: a reset racing it would see rules come back
    bundle.waitFor(booting);
    return { app, url, metricsUrl, close };
  } catch (err) {
    await close();
    throw err;
  }
}
