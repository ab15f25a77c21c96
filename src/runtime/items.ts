/**
 * What travels between the nodes of a topology, besides the {@link Tuple}/{@link JoinTuple} rows and
 * {@link ErrorRecord}s of the shared contract.
 */
import type { Collection, Row, SourceEvent } from '../contracts/index.js';
import type { EvalUnit } from '../plan/plan.js';
import { ErrorRecord, JoinTuple, Tuple } from '../contracts/index.js';
import type { ValueObject } from '../values/value.js';

/** Event-time progress: every event with a timestamp ≤ `ts` has been released (docs/sql.md §5.10). */
export class Watermark {
  constructor(readonly ts: number) {}
}

/**
 * The rows of one window emission or join result. `windowed` is false for the join result of a single event
 * (windowless stream–table or lookup join): window_start()/window_end() are then null.
 */
export class RowBatch implements Collection {
  constructor(
    public rows: Row[],
    public windowStart: number,
    public windowEnd: number,
    public windowed = true,
  ) {}
}

/** The units (rows or groups) of one emission after GROUP BY / HAVING / window functions / ORDER BY. */
export class UnitBatch {
  constructor(
    public units: EvalUnit[],
    public windowStart: number,
    public windowEnd: number,
    public windowed = true,
  ) {}
}

/** The rows of one event of a scan table's source: they update the table snapshot in the join aligner. */
export class TableUpdate {
  constructor(
    readonly table: string,
    readonly rows: Tuple[],
  ) {}
}

/** A source event not decoded yet (MQTT sources decode in a separate decoder node), or decoded by a shared source. */
export class RawEvent {
  constructor(
    readonly ev: SourceEvent,
    /** messages decoded once by a shared source instance (or the decode error) */
    readonly decoded: ValueObject[] | Error | null,
  ) {}
}

/** The projected rows of one trigger, on their way to the sinks. `single`: a windowless event's projection. */
export class Output {
  constructor(
    public rows: ValueObject[],
    public single = false,
    /** timestamp of the event (windowless) or the window end, for hit bookkeeping */
    public timestamp = 0,
  ) {}
}

export type Item = Tuple | JoinTuple | RowBatch | UnitBatch | TableUpdate | RawEvent | Output | ErrorRecord | Watermark;

export { ErrorRecord, JoinTuple, Tuple };
