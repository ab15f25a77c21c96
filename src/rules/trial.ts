/**
 * Rule trial runs (`/ruletest`, docs/rest-api.md §16.4): a temporary SQL rule whose streams are replaced by simulator
 * sources replaying mock data, with one sink only, a websocket endpoint `/test/<id>` on the HTTP data server. Nothing
 * is persisted and no real sink is touched; streams without mock data keep their real source. A trial is removed when
 * deleted, or when its time is up: `timeoutMs` (5 min) after it was created or last started.
 */
import type { Logger } from 'pino';
import { EddyError, ErrorCode } from '../core/errors.js';
import { idTooLong } from '../core/limits.js';
import type { StreamCatalog, StreamDef, StreamKind } from '../catalog/types.js';
import type { ConnectorRegistry, Props, RuleOptions } from '../contracts/index.js';
import type { RuleTopology, RuntimeBuilder } from '../runtime/topology.js';
import { mergeOptions } from './definition.js';
import { requireSelect } from './engine.js';

/** The websocket endpoints of the data server, as far as trial runs need them. */
export interface TrialEndpoints {
  acquire(path: string, holder: string): Promise<void>;
  release(path: string, holder: string): Promise<void>;
  /** port of the data server, once it listens */
  readonly port: number | undefined;
}

export interface TrialDeps {
  runtime: RuntimeBuilder;
  catalog: StreamCatalog;
  connectors: ConnectorRegistry;
  endpoints: TrialEndpoints;
  /** the server's `rule:` option defaults */
  defaults: RuleOptions;
  logger: Logger;
  /** lifetime of a trial after its creation or last start (default 5 min) */
  timeoutMs?: number;
}

interface Trial {
  id: string;
  /** this trial's claim on the endpoint (a replacing trial claims it before the old one lets go) */
  holder: string;
  sql: string;
  /** stream name → simulator properties */
  mocks: Map<string, Props>;
  sinkProps: Props;
  topo?: RuleTopology;
  timer?: NodeJS.Timeout;
}

let holders = 0;
/** config key under which a mocked stream's simulator finds its properties */
const mockKey = (id: string, stream: string) => `$ruletest/${id}/${stream}`;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function pick(obj: Record<string, unknown>, name: string): unknown {
  if (name in obj) return obj[name];
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) return obj[k];
  return undefined;
}

export class RuleTestService {
  private readonly trials = new Map<string, Trial>();
  private closed = false;

  constructor(private readonly deps: TrialDeps) {}

  /** `POST /ruletest`: validates and plans the trial, opens its websocket endpoint; an existing id is replaced. */
  async create(body: Record<string, unknown>): Promise<{ id: string; port: number }> {
    if (this.closed) throw new EddyError(ErrorCode.Undefined, 'the server is shutting down');
    const id = pick(body, 'id');
    const sql = pick(body, 'sql');
    const mockSource = pick(body, 'mockSource') ?? {};
    const sinkProps = pick(body, 'sinkProps') ?? {};
    if (typeof id !== 'string' || id.trim() === '') throw new EddyError(ErrorCode.Undefined, 'missing id');
    // the id names the trial's websocket endpoint and its later `/ruletest/{id}` requests (src/core/limits.ts)
    const long = idTooLong('test rule id', id);
    if (long) throw new EddyError(ErrorCode.Undefined, long);
    if (/[/#%]/.test(id)) throw new EddyError(ErrorCode.Undefined, `test rule id ${id} contains an invalid character`);
    if (typeof sql !== 'string' || sql.trim() === '') throw new EddyError(ErrorCode.Undefined, 'missing sql');
    if (!isObject(mockSource)) throw new EddyError(ErrorCode.Undefined, 'mockSource must be an object');
    if (!isObject(sinkProps)) throw new EddyError(ErrorCode.Undefined, 'sinkProps must be an object');
    requireSelect(sql);
    const mocks = new Map<string, Props>();
    for (const [stream, props] of Object.entries(mockSource)) {
      if (!isObject(props)) throw new EddyError(ErrorCode.Undefined, `mockSource ${stream} must be an object`);
      mocks.set(stream, props);
    }
    const trial: Trial = { id, holder: `ruletest-${++holders}`, sql, mocks, sinkProps };
    // plan now: a trial that cannot run is refused at once (planner codes: 2101 unknown stream...)
    this.build(trial);
    await this.deps.endpoints.acquire(this.path(id), trial.holder);
    await this.remove(id);
    this.trials.set(id, trial);
    this.arm(trial);
    return { id, port: this.deps.endpoints.port ?? 0 };
  }

  /** `POST /ruletest/{id}/start`: (re)starts the trial's run. */
  async start(id: string): Promise<void> {
    const trial = this.trials.get(id);
    if (!trial) throw new EddyError(ErrorCode.NotFound, `test rule ${id} is not found`);
    await this.stopRun(trial);
    const topo = this.build(trial);
    trial.topo = topo;
    const end = () => {
      if (trial.topo === topo) void this.stopRun(trial);
    };
    topo.onFatal((err) => {
      this.deps.logger.warn({ rule: id, err: err.message }, 'test rule stopped by an error');
      end();
    });
    topo.onEnd?.(end);
    this.arm(trial);
    await topo.open();
  }

  /** `DELETE /ruletest/{id}`: stops and forgets the trial (answers the same whether it existed or not). */
  async delete(id: string): Promise<void> {
    await this.remove(id);
  }

  has(id: string): boolean {
    return this.trials.has(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const id of [...this.trials.keys()]) await this.remove(id);
  }

  private path(id: string): string {
    return `/test/${id}`;
  }

  /** (Re)starts the trial's lifetime. */
  private arm(trial: Trial): void {
    if (trial.timer) clearTimeout(trial.timer);
    trial.timer = setTimeout(
      () => {
        if (this.trials.get(trial.id) === trial) void this.remove(trial.id);
      },
      this.deps.timeoutMs ?? 5 * 60_000,
    );
    trial.timer.unref();
  }

  private async remove(id: string): Promise<void> {
    const trial = this.trials.get(id);
    if (!trial) return;
    this.trials.delete(id);
    if (trial.timer) clearTimeout(trial.timer);
    await this.stopRun(trial);
    await this.deps.endpoints.release(this.path(id), trial.holder);
  }

  private async stopRun(trial: Trial): Promise<void> {
    const topo = trial.topo;
    trial.topo = undefined;
    if (topo)
      await topo
        .close()
        .catch((err: unknown) => this.deps.logger.warn({ rule: trial.id, err }, 'closing a test rule failed'));
  }

  /** The trial's topology: mocked streams read a simulator, the only action is the websocket endpoint. */
  private build(trial: Trial): RuleTopology {
    const { catalog, connectors } = this.deps;
    const mocked = (def: StreamDef | undefined): StreamDef | undefined => {
      if (!def || def.kind !== 'stream' || !trial.mocks.has(def.name)) return def;
      return {
        ...def,
        options: { ...def.options, TYPE: 'simulator', CONF_KEY: mockKey(trial.id, def.name), SHARED: false },
      };
    };
    const overlayCatalog: StreamCatalog = {
      get: (name: string) => mocked(catalog.get(name)),
      list: (kind: StreamKind) => catalog.list(kind).map((d) => mocked(d)!),
    };
    const overlayConnectors: ConnectorRegistry = {
      source: (type) => connectors.source(type),
      lookup: (type) => connectors.lookup(type),
      sink: (type) => connectors.sink(type),
      format: (name) => connectors.format(name),
      sourceProps: (type, confKey) => {
        for (const [stream, props] of trial.mocks)
          if (confKey === mockKey(trial.id, stream)) return { ...connectors.sourceProps(type, undefined), ...props };
        return connectors.sourceProps(type, confKey);
      },
      sinkProps: (type, resourceId) => connectors.sinkProps(type, resourceId),
    };
    const options = mergeOptions(this.deps.defaults, {});
    const props = { ...trial.sinkProps, path: this.path(trial.id), sendSingle: true };
    const rule = { id: `$ruletest_${trial.id}`, sql: trial.sql, actions: [{ websocket: props }], triggered: true };
    const logger = this.deps.logger.child({ ruletest: trial.id });
    return this.deps.runtime.buildOverlay(rule, options, logger, {
      catalog: overlayCatalog,
      connectors: overlayConnectors,
    });
  }
}
