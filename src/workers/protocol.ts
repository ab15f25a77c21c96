/**
 * Messages between the main thread and a rule worker (docs/runtime.md §1.10). The main thread keeps the control plane
 * and the metadata store; a worker owns the topologies of the rules placed on it and reaches the store through
 * `kv` requests.
 */
import type {
  ConnectionState,
  PrintableTopo,
  RuleDef,
  RuleOptions,
  TraceSpan,
  TraceStrategy,
} from '../contracts/index.js';
import type { MessagePort } from 'node:worker_threads';
import type { StreamDef } from '../catalog/types.js';
import type { ValueObject } from '../values/value.js';
import type { MainCall, MainCallAnswer, MainFunction } from './main-functions.js';
import type { PortableSymbols } from '../extensions/plugins-portable-relay.js';

/**
 * What a rule worker reaches on the main thread through a message port of its own: the data server, for httppush
 * routes and websocket endpoints (connectors/data-relay.ts); the neuron connections (connectors/neuron/relay.ts); the
 * portable-plugin processes (extensions/plugins-portable-relay.ts); the instances of connectors that keep them there,
 * zmq's sockets (connectors/main-relay.ts).
 */
export type RelayName = 'data' | 'neuron' | 'portable' | 'connectors';

/** What a worker is started with (its `workerData`). */
export interface WorkerInit {
  index: number;
  home: string;
  env: NodeJS.ProcessEnv;
  /** cell 0: the activity id of the node working now, cell 1: batches started (see runtime/node.ts) */
  activity: SharedArrayBuffer;
  /** a port to each of the main thread's relays the pool serves ({@link RelayName}) */
  relays: Partial<Record<RelayName, MessagePort>>;
}

/**
 * A rule as the worker planned it: what the main thread shows of it (status node names, `GET /rules/{id}/topo`, the
 * streams it reads) without planning it a second time.
 */
export interface PlannedInfo {
  nodes: string[];
  printable: PrintableTopo;
  sources: string[];
}

/** A rule to plan (`plan`) or to plan when not planned yet and open (`open`) on a worker. */
export interface RuleRequest {
  req: number;
  handle: number;
  rule: RuleDef;
  options: RuleOptions;
  /** the catalog's changes since the previous request on this thread */
  streams: StreamDef[];
  dropped: string[];
  /** the main thread's config-key revision: -1 when unknown (read them again) */
  confRevision: number;
  /** the main thread's JavaScript-function revision: -1 when unknown (read them again) */
  scriptRevision: number;
  /** the functions the rules here reach on the main thread (main-functions.ts) */
  mainFunctions: MainFunction[];
  /** the source and sink names of the installed portable plugins (extensions/plugins-portable-relay.ts) */
  portable: PortableSymbols;
  /** the main thread holds the {@link PlannedInfo} of this handle: an open from the kept plan need not answer it */
  known: boolean;
}

/** Main → worker. */
export type ToWorker =
  /** plans and compiles the rule, keeps the topology for its open, answers with its {@link PlannedInfo} */
  | ({ op: 'plan' } & RuleRequest)
  | ({ op: 'open' } & RuleRequest)
  /** a planned topology that will not be opened (the rule was planned again, or its creation failed) */
  | { op: 'release'; handle: number }
  | { op: 'close'; req: number; handle: number }
  /** `PUT /rules/{id}/reset_state` of a rule on the worker (docs/rest-api.md §16.6) */
  | { op: 'resetOffset'; req: number; handle: number; streamName: string; input: ValueObject }
  /** rule tracing of a rule on the worker (docs/runtime.md §1.11): a strategy starts it, null stops it */
  | { op: 'trace'; handle: number; strategy: TraceStrategy | null }
  | { op: 'ping'; seq: number }
  | { op: 'kv'; id: number; value?: unknown; error?: string }
  | MainCallAnswer
  /** fault injection of the tests: busy the worker's thread for `ms` */
  | { op: 'stall'; ms: number }
  /** fault injection of the tests: end the worker's thread as a crash would */
  | { op: 'crash' }
  /** the messages asked for during one turn of the main thread's event loop, in order */
  | { op: 'batch'; messages: ToWorker[] };

/**
 * One node's metrics: name, records in and out, messages processed, last latency (µs), buffer length, last
 * invocation, exceptions, last exception and its time, busy µs, then the latency histogram as the worker counted it
 * (bucket counts, null before the first record, and their sum in µs) — copied, never counted again on this side;
 * last the node's connection and the start of a sink's failing spell (docs/runtime.md §1.5).
 */
export type NodeMetricsRow = [
  string,
  number,
  number,
  number,
  number,
  number,
  number,
  number,
  string,
  number,
  number,
  number[] | null,
  number,
  ConnectionState,
  number,
];

/** Worker → main. */
export type FromWorker =
  | { ev: 'ready' }
  | { ev: 'reply'; req: number; error?: { message: string; code?: number }; planned?: PlannedInfo }
  | { ev: 'pong'; seq: number }
  | { ev: 'fatal'; handle: number; message: string }
  | { ev: 'end'; handle: number }
  /** per topology: its handle, its nodes' metrics, and the bytes its windows hold (estimated, runtime/row-size.ts) */
  | { ev: 'metrics'; topologies: Array<[number, NodeMetricsRow[], number]> }
  /** the spans of traced records finished since the last message, by topology handle */
  | { ev: 'spans'; spans: Array<[number, TraceSpan]> }
  | { ev: 'kv'; id: number; method: string; args: unknown[] }
  | MainCall
  /** the messages of one turn of the worker's event loop, in order */
  | { ev: 'batch'; messages: FromWorker[] };
