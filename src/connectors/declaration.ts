/**
 * What a connector is, said once. Each source, lookup and sink type, each format and each shared connection type
 * has one declaration: how to make it, the file of its read-only default config keys, its UI metadata, its
 * connection check and config-key validation, and whether the rules using it may run on a worker thread. The
 * registry, `GET /metadata/*` (docs/rest-api.md §16.13), the config keys, the connection checks
 * (docs/runtime.md §4), the placement of rules on workers (docs/runtime.md §1.10) and the connector table of
 * docs/connectors.md all read the declarations; a plugin declares its connectors the same way
 * (`Registry.declare`).
 */
import type {
  ConnectorContext,
  ConnectorRegistry,
  FormatFactory,
  LookupConnector,
  Props,
  SinkConnector,
  SinkContext,
  SourceConnector,
} from '../contracts/index.js';
import type { FileRoots } from '../core/files.js';
import type { ConfKeys } from './confkeys.js';
import type { DataServer } from './dataserver.js';
import type { PushHub, WsEndpointsPort } from './data-relay.js';
import type { SinkMeta, SourceMeta } from './meta.js';
import type { MemoryBus } from './memory/bus.js';
import type { MqttPool } from './mqtt/connection.js';
import type { NeuronLinks } from './neuron/pool.js';
import type { MainRelayClient } from './main-relay.js';

/**
 * What the connectors of one server share, handed to every factory, check and validator. Each thread that runs
 * rules has its own (docs/runtime.md §1.10).
 */
export interface ConnectorHost {
  readonly confKeys: ConfKeys;
  /** formats by name, for connectors that decode by themselves */
  readonly formats: Pick<ConnectorRegistry, 'format'>;
  readonly memory: MemoryBus;
  readonly mqtt: MqttPool;
  /** the neuron connections (on a worker, the main thread's: neuron/relay.ts) */
  readonly neuron: NeuronLinks;
  readonly dataServer: DataServer;
  /** the websocket endpoints of the data server (on a worker, those of the main thread's: data-relay.ts) */
  readonly wsEndpoints: WsEndpointsPort;
  /** the routes of httppush sources on the data server (on a worker, the main thread's: data-relay.ts) */
  readonly pushHub: PushHub;
  /** with authentication on, the folders file sources and sinks may use (docs/runtime.md §2.5 file) */
  readonly fileRoots: FileRoots | undefined;
  /** the context of a connector configured only to check its properties (never connected) */
  readonly checkContext: ConnectorContext & SinkContext;
  /** one instance per host of something a family's connectors share, made on first use */
  shared<T>(key: string, make: () => T): T;
  /** on a rule worker: the main thread's instances of the connectors that keep them there (main-relay.ts) */
  readonly mainRelay?: MainRelayClient;
}

/**
 * The threads a rule using the connector may run on (docs/runtime.md §1.10). `because` says why a rule stays on the
 * main thread; a connector that becomes reachable from workers later (the memory bus, the data server) changes only
 * its declaration.
 */
export type Threads =
  | { readonly worker: true }
  | { readonly worker: false; readonly because: string }
  /** a worker for some properties only (a websocket client may move, an endpoint of the data server may not) */
  | { readonly worker: (props: Props) => boolean; readonly because: string };

/** `POST /metadata/{sources|sinks|lookups}/connection/{type}`: rejects with the reason the connection failed. */
export type HostConnectionCheck = (props: Props, host: ConnectorHost) => Promise<void>;

/** `PUT /metadata/{sources|sinks|connections}/{type}/confKeys/{key}`: throws with what is wrong. */
export type PropsValidator = (props: Props, host: ConnectorHost) => void;

interface ConnectorDeclaration<K extends 'source' | 'lookup' | 'sink', C> {
  readonly kind: K;
  /** the stream's `TYPE` (lower case as the runtime resolves it), or the key of a rule action */
  readonly type: string;
  /** a new connector, one per rule instance */
  readonly create: (host: ConnectorHost) => C;
  /**
   * Imports the implementation that `create`, `check` and `validate` use, with its client library (a family's
   * `lazyModule`, core/lazy.ts); absent when nothing is left to import (a plugin's declaration). The main thread loads
   * every family at start; a rule worker loads a family when a rule it plans first uses it (`Registry.prepare`).
   */
  readonly load?: () => Promise<unknown>;
  /** the connection check; null: the endpoint answers that the type does not support one */
  readonly check: HostConnectionCheck | null;
  readonly threads: Threads;
  /**
   * Why the connector's instances must live on the main thread while rules using it run on a worker (their events
   * and payloads cross: main-relay.ts); absent for the connectors that live on the rule's own thread.
   */
  readonly instancesOnMain?: string;
}

export interface SourceDeclaration extends ConnectorDeclaration<'source', SourceConnector> {
  /** the read-only default config keys: a yaml file under `etc/` (`sources/<type>.yaml`), null for none */
  readonly defaults: string | null;
  /** `GET /metadata/sources/{type}`; null: not listed (a plugin without metadata) */
  readonly meta: SourceMeta | null;
  /** checks the properties of a config key of the type; null: any properties are stored */
  readonly validate: PropsValidator | null;
}

export interface LookupDeclaration extends ConnectorDeclaration<'lookup', LookupConnector> {
  /** as for sources; a type that is both reads the same file */
  readonly defaults: string | null;
  /** `GET /metadata/sources/{type}` of a type that is only a lookup table (the source's when it is both) */
  readonly meta: SourceMeta | null;
}

export interface SinkDeclaration extends ConnectorDeclaration<'sink', SinkConnector> {
  /** `GET /metadata/sinks/{type}`; null: not listed */
  readonly meta: SinkMeta | null;
  readonly validate: PropsValidator | null;
}

export interface FormatDeclaration {
  readonly kind: 'format';
  /** `FORMAT` of a stream, `format` of a sink; case-insensitive */
  readonly type: string;
  readonly create: FormatFactory;
  /**
   * Imports the implementation that `create`, `check` and `validate` use, with its client library (a family's
   * `lazyModule`, core/lazy.ts); absent when nothing is left to import (a plugin's declaration). The main thread loads
   * every family at start; a rule worker loads a family when a rule it plans first uses it (`Registry.prepare`).
   */
  readonly load?: () => Promise<unknown>;
  readonly threads: Threads;
}

/** A shared connection type (`connectionSelector: <type>.<key>`, `/metadata/connections`). */
export interface ConnectionDeclaration {
  readonly kind: 'connection';
  readonly type: string;
  readonly meta: SourceMeta;
  readonly validate: PropsValidator | null;
}

export type Declaration =
  SourceDeclaration | LookupDeclaration | SinkDeclaration | FormatDeclaration | ConnectionDeclaration;

export type DeclarationKind = Declaration['kind'];

/**
 * Every field each kind must state, even as null: a declaration that leaves one out is refused (a plugin is
 * JavaScript, so the compiler cannot hold it to the type).
 */
export const DECLARATION_FIELDS: {
  readonly [K in DeclarationKind]: readonly (keyof Extract<Declaration, { kind: K }>)[];
} = {
  source: ['kind', 'type', 'create', 'defaults', 'meta', 'check', 'validate', 'threads'],
  lookup: ['kind', 'type', 'create', 'defaults', 'meta', 'check', 'threads'],
  sink: ['kind', 'type', 'create', 'meta', 'check', 'validate', 'threads'],
  format: ['kind', 'type', 'create', 'threads'],
  connection: ['kind', 'type', 'meta', 'validate'],
};

/** What is missing or malformed in a declaration; empty when it is whole. */
export function declarationProblems(d: unknown): string[] {
  if (typeof d !== 'object' || d === null) return ['a declaration must be an object'];
  const r = d as Record<string, unknown>;
  const kind = r.kind;
  if (typeof kind !== 'string' || !(kind in DECLARATION_FIELDS)) return [`unknown declaration kind ${String(kind)}`];
  const name = typeof r.type === 'string' && r.type !== '' ? r.type : '?';
  const problems: string[] = [];
  for (const field of DECLARATION_FIELDS[kind as DeclarationKind]) {
    if (r[field] === undefined) problems.push(`${kind} ${name} does not declare ${field}`);
  }
  if (name === '?') problems.push(`a ${kind} declaration needs a type name`);
  if ('create' in r && r.create !== undefined && typeof r.create !== 'function')
    problems.push(`${kind} ${name}: create must be a function`);
  const threads = r.threads as { worker?: unknown; because?: unknown } | undefined;
  if (threads !== undefined) {
    const w = threads.worker;
    if (w !== true && w !== false && typeof w !== 'function')
      problems.push(`${kind} ${name}: threads.worker is unknown`);
    if (w !== true && typeof threads.because !== 'string')
      problems.push(`${kind} ${name}: threads must say why rules stay on the main thread`);
  }
  return problems;
}

/** Whether a rule using the declared connector with `props` may run on a worker thread. */
export function runsOnWorker(threads: Threads, props: Props): boolean {
  const w = threads.worker;
  return typeof w === 'function' ? w(props) : w;
}

/**
 * A config-key validator that configures a fresh sink with the properties (no connection is made), as eKuiper's
 * Validate does; `adjust` fills in what a config key may leave to the actions that use it.
 */
export function provisionCheck(
  make: (host: ConnectorHost) => SinkConnector,
  adjust: (props: Props) => Props = (props) => props,
): PropsValidator {
  return (props, host) => make(host).provision(host.checkContext, adjust(props));
}

/**
 * Lookup tables run wherever their rules run (docs/runtime.md §1.10): each thread keeps its own instance of a table's
 * connector (runtime/lookup.ts), opened by the first rule there that joins it. A table that queries its system (sql,
 * redis, httppull) reads the same rows from every thread; the memory table, which holds rows itself, starts from the
 * main thread's rows (connectors/memory/bus.ts).
 */
export const LOOKUP_THREADS: Threads = { worker: true };
