/**
 * Messages between the main thread and a rule worker (docs/runtime.md §1.10). The main thread keeps the control plane
 * and the metadata store; a worker owns the topologies of the rules placed on it and reaches the store through
 * `kv` requests.
 */
import type { ConnectionState, RuleDef, RuleOptions, TraceSpan, TraceStrategy } from '../contracts/index.js';
import type { StreamDef } from '../catalog/types.js';
import type { ValueObject } from '../values/value.js';

/** What a worker is started with (its `workerData`). */
export interface WorkerInit {
  index: number;
  home: string;
  env: NodeJS.ProcessEnv;
  /** cell 0: the activity id of the node working now, cell 1: batches started (see runtime/node.ts) */
  activity: SharedArrayBuffer;
}

/** Main → worker. */
export type ToWorker =
  /** `streams`/`dropped`: the catalog's changes since the previous open on this thread */
  | {
      op: 'open';
      req: number;
      handle: number;
      rule: RuleDef;
      options: RuleOptions;
      streams: StreamDef[];
      dropped: string[];
      /** the main thread's config-key revision: -1 when unknown (read them again) */
      confRevision: number;
    }
  | { op: 'close'; req: number; handle: number }
  /** `PUT /rules/{id}/reset_state` of a rule on the worker (docs/rest-api.md §16.6) */
  | { op: 'resetOffset'; req: number; handle: number; streamName: string; input: ValueObject }
  /** rule tracing of a rule on the worker (docs/runtime.md §1.11): a strategy starts it, null stops it */
  | { op: 'trace'; handle: number; strategy: TraceStrategy | null }
  | { op: 'ping'; seq: number }
  | { op: 'kv'; id: number; value?: unknown; error?: string }
  /** fault injection of the tests: busy the worker's thread for `ms` */
  | { op: 'stall'; ms: number }
  /** fault injection of the tests: end the worker's thread as a crash would */
  | { op: 'crash' };

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
  | { ev: 'reply'; req: number; error?: { message: string; code?: number } }
  | { ev: 'pong'; seq: number }
  | { ev: 'fatal'; handle: number; message: string }
  | { ev: 'end'; handle: number }
  | { ev: 'metrics'; topologies: Array<[number, NodeMetricsRow[]]> }
  /** the spans of traced records finished since the last message, by topology handle */
  | { ev: 'spans'; spans: Array<[number, TraceSpan]> }
  | { ev: 'kv'; id: number; method: string; args: unknown[] };
