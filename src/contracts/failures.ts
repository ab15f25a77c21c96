/**
 * How a connector tells the runtime what kind of failure it met (docs/runtime.md §3.5): a source's failure marked
 * transient travels to the rule as an error record instead of ending the run; a sink's failure marked recoverable is
 * kept by the failure cache and sent again. Both are marks on an ordinary `Error`, so a connector needs nothing but
 * this module to raise them.
 */
import type { SinkConnector, SinkContext } from './index.js';

/** An error travelling from a source to its rule as an error record, not a fatal failure. */
export function transientError(err: Error): Error & { transient: true } {
  return Object.assign(err, { transient: true as const });
}

export function isTransient(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { transient?: unknown }).transient === true;
}

/** An error a sink connector may throw from `collect` to have the item cached and resent. */
export function recoverable(err: unknown): Error & { recoverable: true } {
  const e = (err instanceof Error ? err : new Error(String(err))) as Error & { recoverable: true };
  e.recoverable = true;
  return e;
}

export function isRecoverable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { recoverable?: unknown }).recoverable === true;
}

/** A sink connector that wants to hear about items the pipeline could not transform (websocket `sendError`). */
export interface TransformFailureListener {
  transformFailed(ctx: SinkContext, err: Error): Promise<void>;
}

export function listensToTransformFailures(c: SinkConnector): c is SinkConnector & TransformFailureListener {
  return typeof (c as Partial<TransformFailureListener>).transformFailed === 'function';
}
