/**
 * What travels between the nodes of a topology, besides the {@link Tuple}/{@link JoinTuple} rows and
 * {@link ErrorRecord}s of the shared contract. Every item carries a readonly `kind` tag: operators dispatch with
 * `switch (item.kind)` (a compare of interned strings, as cheap as `instanceof`), and a node passes on unchanged
 * every kind outside its {@link KindSet} (runtime/node.ts).
 */
import type { Collection, Row, SourceEvent } from '../contracts/index.js';
import type { EvalUnit } from '../plan/plan.js';
import { ErrorRecord, JoinTuple, Tuple } from '../contracts/index.js';
import type { ValueObject } from '../values/value.js';

/** Event-time progress: every event with a timestamp ≤ `ts` has been released (docs/sql.md §5.10). */
export class Watermark {
  declare readonly kind: 'watermark';
  constructor(readonly ts: number) {}
}

/**
 * The rows of one window emission or join result. `windowed` is false for the join result of a single event
 * (windowless stream–table or lookup join): window_start()/window_end() are then null.
 */
export class RowBatch implements Collection {
  declare readonly kind: 'rows';
  constructor(
    public rows: Row[],
    public windowStart: number,
    public windowEnd: number,
    public windowed = true,
  ) {}
}

/** The units (rows or groups) of one emission after GROUP BY / HAVING / window functions / ORDER BY. */
export class UnitBatch {
  declare readonly kind: 'units';
  constructor(
    public units: EvalUnit[],
    public windowStart: number,
    public windowEnd: number,
    public windowed = true,
  ) {}
}

/** The rows of one event of a scan table's source: they update the table snapshot in the join aligner. */
export class TableUpdate {
  declare readonly kind: 'table';
  constructor(
    readonly table: string,
    readonly rows: Tuple[],
  ) {}
}

/** A source event not decoded yet (MQTT sources decode in a separate decoder node), or decoded by a shared source. */
export class RawEvent {
  declare readonly kind: 'raw';
  constructor(
    readonly ev: SourceEvent,
    /** messages decoded once by a shared source instance (or the decode error) */
    readonly decoded: ValueObject[] | Error | null,
  ) {}
}

/** The projected rows of one trigger, on their way to the sinks. `single`: a windowless event's projection. */
export class Output {
  declare readonly kind: 'output';
  constructor(
    public rows: ValueObject[],
    public single = false,
    /** timestamp of the event (windowless) or the window end, for hit bookkeeping */
    public timestamp = 0,
  ) {}
}

// the tags live on the prototypes: no per-item field to initialise or store
for (const [cls, kind] of [
  [Watermark, 'watermark'],
  [RowBatch, 'rows'],
  [UnitBatch, 'units'],
  [TableUpdate, 'table'],
  [RawEvent, 'raw'],
  [Output, 'output'],
] as const)
  Object.defineProperty(cls.prototype, 'kind', { value: kind });

export type Item = Tuple | JoinTuple | RowBatch | UnitBatch | TableUpdate | RawEvent | Output | ErrorRecord | Watermark;

export type ItemKind = Item['kind'];

/** The item class of one kind (or a union of kinds). */
export type ItemOf<K extends ItemKind> = Extract<Item, { readonly kind: K }>;

/**
 * The item kinds a node handles, as a bit mask ({@link kindBit}): the base node hands the node only these and passes
 * the others on (runtime/node.ts).
 */
export type KindSet<K extends ItemKind> = number & { readonly __handles?: K };

/**
 * The bit of a kind in a {@link KindSet}: a chain of compares of interned strings, most frequent kinds first,
 * cheaper on the hot path than a keyed lookup. A connector's event queued as is (no kind) has bit 0.
 */
export function kindBit(kind: ItemKind | undefined): number {
  switch (kind) {
    case 'tuple':
      return 1;
    case 'rows':
      return 2;
    case 'output':
      return 4;
    case 'units':
      return 8;
    case 'join':
      return 16;
    case 'error':
      return 32;
    case 'watermark':
      return 64;
    case 'table':
      return 128;
    case 'raw':
      return 256;
    default:
      return 0;
  }
}

export function kinds<K extends ItemKind>(...handled: K[]): KindSet<K> {
  let set = 0;
  for (const k of handled) set |= kindBit(k);
  return set;
}

/** For the `default` branch of an exhaustive `switch (item.kind)`: a kind left out fails to compile. */
export function unhandled(item: never): never {
  throw new Error(`unhandled item ${String((item as { kind?: unknown }).kind)}`);
}

export { ErrorRecord, JoinTuple, Tuple };
