/**
 * What the two send paths of a sink node share (docs/runtime.md §3): the parts of the node they work with, the
 * interface the node drives them through, and the bookkeeping of one send. Without a failure cache the live path
 * sends (`live.ts`); with one, the resend loop does (`resend.ts`).
 */
import type { Logger } from 'pino';
import { disconnected, type NodeMetrics, type SinkConnector, type SinkContext } from '../../contracts/index.js';
import { isRecoverable, listensToTransformFailures } from '../../contracts/failures.js';
import type { SinkBuffer } from './buffer.js';
import type { ValueObject } from '../../values/value.js';
import type { SinkUnit } from './cache.js';
import type { SendLedger } from './ledger.js';
import type { SinkSettings } from './settings.js';
import type { SinkTransform } from './transform.js';

/** The parts of a sink node a send path works with. */
export interface SinkParts {
  readonly metrics: NodeMetrics;
  readonly connector: SinkConnector;
  readonly ctx: SinkContext;
  readonly settings: SinkSettings;
  readonly buffer: SinkBuffer;
  readonly ledger: SendLedger;
  readonly transform: SinkTransform;
  readonly logger: Logger;
  /** the node is closing: nothing more is sent */
  readonly closed: boolean;
  /** the rule's qos is ≥ 1: a recoverable failure is tried again rather than given up (docs/runtime.md §1.9) */
  readonly atLeastOnce: boolean;
  /** refreshes the buffer metric */
  updateBuffer(): void;
  /** units left the live buffer: sources held back by back-pressure may go on once it is half empty */
  releasePressure(): void;
}

/** How the node drives a send path. */
export interface Sender {
  /** units held by the failure cache (0 without one) */
  readonly cached: number;
  /** takes a pushed entry itself (the failure cache) instead of the live buffer; false: the buffer keeps it */
  accept(rows: ValueObject[]): boolean;
  /** before the connector connects (the cache is loaded or dropped) */
  open(): Promise<void>;
  /** something was pushed, or may be sent again */
  kick(): void;
  /** units wait to be sent (and are not held back by a failing target) */
  hasWork(): boolean;
  /** sends under way, or waiting to be sent, that a close should give their time */
  pending(): boolean;
  /** the target is failing: what waits stays in the cache rather than holding the close */
  stalled(): boolean;
  /** resolves at the next progress: a send settled, or the cache loop ended */
  progress(): Promise<void> | undefined;
  /** the node closes: timers stop, sends in flight get a bounded wait */
  halt(): Promise<void>;
  /** after the halt: the cache is saved (or dropped with `cleanCacheAtStop`) */
  finish(): Promise<void>;
}

/** Counts a unit sent, with the time since its send started; a failing spell ends (docs/runtime.md §1.5). */
export function countSent(metrics: NodeMetrics, unit: SinkUnit, start: number): void {
  metrics.recordsOut++;
  if (metrics.failingSince !== 0) {
    metrics.failingSince = 0;
    metrics.setConnection('connected');
  }
  metrics.messagesProcessed += Array.isArray(unit) ? unit.length : 1;
  metrics.processLatencyUs = Math.round((performance.now() - start) * 1000);
}

/**
 * A send failed: counted as an exception and as part of a failing spell; a recoverable failure (the target down,
 * a 5xx, a timeout) also says the connection is lost, until a send succeeds.
 */
export function countFailed(metrics: NodeMetrics, err: unknown): void {
  metrics.sendFailed(err);
  if (isRecoverable(err)) metrics.setConnection(disconnected(err));
}

/** A unit could not be transformed: counted, logged, and told to a connector that listens (websocket `sendError`). */
export function transformFailed(parts: SinkParts, err: unknown): Promise<void> {
  parts.metrics.error(err);
  parts.logger.warn({ err }, 'sink %s cannot transform data', parts.metrics.name);
  if (!listensToTransformFailures(parts.connector)) return Promise.resolve();
  return parts.connector
    .transformFailed(parts.ctx, err instanceof Error ? err : new Error(String(err)))
    .catch(() => undefined);
}
