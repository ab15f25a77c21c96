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
import type { RuleAction, SinkNode, SinkNodeOptions } from '../contracts/index.js';
import { ConfKeys } from './confkeys.js';
import { Registry } from './registry.js';
import { registerBuiltinFormats } from './formats/index.js';
import { MemoryBus, registerMemory } from './memory/memory.js';
import { MqttPool, registerMqtt } from './mqtt/mqtt.js';
import { MqttSessionLedger } from './mqtt/sessions.js';
import { registerLogNop } from './log/lognop.js';
import { DataServer, WsEndpoints } from './dataserver.js';
import { createSinkNode, sinkCacheNamespace, type SinkDefaults } from './pipeline/sinknode.js';
import { compileTemplate, renderTemplate } from '../template/index.js';
import { registerHttpPush } from './http/push-source.js';
import { registerHttpPull } from './http/pull.js';
import { registerFileSource } from './file/source.js';
import { registerFileSink } from './file/sink.js';
import { registerRedisLookup } from './redis/lookup.js';
import { registerRedisSink } from './redis/sink.js';
import { registerRedisSub } from './redis/sub-source.js';
import { registerRedisPub } from './redis/pub-sink.js';
import { registerWebsocketSource } from './websocket/source.js';
import { registerWebsocketSink } from './websocket/sink.js';
import { registerRest } from './http/rest-sink.js';
import { registerSql } from './sql/register.js';
import { registerSimulator } from './generators/simulator.js';
import { registerRandom } from './generators/random.js';
import { registerNexmark } from './generators/nexmark.js';
import { registerInflux } from './influx/sink.js';
import { registerEdgex } from './edgex/edgex.js';
import { registerZmq } from './zmq/zmq.js';
import { registerVideo } from './media/video-source.js';
import { registerImage } from './media/image-sink.js';
import { NeuronPool, registerNeuron } from './neuron/neuron.js';

export { Registry } from './registry.js';
export { ConfKeys, type ConfKind, type ConfMap } from './confkeys.js';
export { DataServer, WsEndpoints } from './dataserver.js';
export { MemoryBus } from './memory/memory.js';
export { MqttPool } from './mqtt/mqtt.js';

export interface ConnectorsOptions {
  home: Home;
  config: EddyConfig;
  /** environment for the `<FILE>__...` overrides of the etc config-key files */
  env: NodeJS.ProcessEnv;
  store: KVStore;
  logger: Logger;
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

export class Connectors {
  readonly registry: Registry;
  readonly confKeys: ConfKeys;
  readonly memory = new MemoryBus();
  readonly mqtt: MqttPool;
  readonly neuron = new NeuronPool();
  readonly dataServer: DataServer;
  readonly wsEndpoints: WsEndpoints;
  private readonly sinkDefaults: SinkDefaults;

  private constructor(private readonly opts: ConnectorsOptions) {
    this.confKeys = new ConfKeys({
      home: opts.home,
      env: opts.env,
      storage: opts.config.basic.cfgStorageType,
      store: opts.store,
    });
    this.registry = new Registry(this.confKeys);
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
    this.wsEndpoints = new WsEndpoints(this.dataServer);
    const s = opts.config.sink ?? ({} as Partial<SinkDefaults>);
    this.sinkDefaults = {
      enableCache: s.enableCache ?? false,
      memoryCacheThreshold: s.memoryCacheThreshold ?? 1024,
      maxDiskCache: s.maxDiskCache ?? 1024000,
      bufferPageSize: s.bufferPageSize ?? 256,
      resendInterval: s.resendInterval ?? 0,
      cleanCacheAtStop: s.cleanCacheAtStop ?? false,
    };
    registerBuiltinFormats(this.registry);
    registerMemory(this.registry, this.memory);
    registerMqtt(this.registry, this.mqtt, this.confKeys);
    registerLogNop(this.registry);
    registerHttpPush(this.registry, this.dataServer);
    registerHttpPull(this.registry);
    // with authentication on, file sources and sinks stay inside the folders the API may use (docs/runtime.md §2)
    const fileRoots = opts.config.basic?.authentication
      ? new FileRoots(fileAccessRoots(opts.home, opts.config))
      : undefined;
    registerFileSource(this.registry, fileRoots);
    registerFileSink(this.registry, fileRoots);
    registerRedisLookup(this.registry);
    registerRedisSink(this.registry);
    registerRedisSub(this.registry);
    registerRedisPub(this.registry);
    registerWebsocketSource(this.registry, this.wsEndpoints);
    registerWebsocketSink(this.registry, this.wsEndpoints);
    registerRest(this.registry);
    registerSql(this.registry);
    registerSimulator(this.registry);
    registerRandom(this.registry);
    registerNexmark(this.registry);
    registerInflux(this.registry);
    registerEdgex(this.registry, this.mqtt, this.confKeys);
    registerZmq(this.registry);
    registerVideo(this.registry);
    registerImage(this.registry);
    registerNeuron(this.registry, this.neuron);
    this.registerSinkKeyValidation(opts.logger, opts.home.data);
  }

  /**
   * `PUT /metadata/sinks/{type}/confKeys/{key}` of rest, websocket, redisPub and redis is checked the way eKuiper's
   * Validate does: by configuring a fresh connector with the properties (no connection is made). A redis key may be
   * left to the actions that use the config key.
   */
  private registerSinkKeyValidation(logger: Logger, dataDir: string): void {
    const ctx = { ruleId: '', logger, dataDir, render: renderTemplate };
    for (const type of ['rest', 'websocket', 'redisPub', 'redis']) {
      this.registry.registerPropsValidator('sinks', type, (props) => {
        const connector = this.registry.sink(type)?.();
        if (!connector) return;
        const checked =
          type === 'redis' && props.key === undefined && props.field === undefined ? { ...props, key: 'key' } : props;
        connector.provision(ctx, checked);
      });
    }
  }

  /** Creates the service and loads the user config keys. */
  static async create(opts: ConnectorsOptions): Promise<Connectors> {
    const c = new Connectors(opts);
    await c.confKeys.load();
    return c;
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
