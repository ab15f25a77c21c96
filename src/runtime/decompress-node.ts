/** The MQTT decompression node of a source (docs/runtime.md §1.6), beside source.ts. */
import type { SourceEvent } from '../contracts/index.js';
import { checkCompression, decompress, type Compression } from '../core/compression.js';
import { kinds, RawEvent, type Item } from './items.js';
import { QueueNode } from './node.js';

/** A raw event, rather than a connector's event queued as it is. */
export function isRaw(item: RawEvent | SourceEvent): item is RawEvent {
  return (item as Partial<RawEvent>).kind === 'raw';
}

/**
 * MQTT decompression node (`op_<N>_decompress`). The MQTT connector decompresses in its own message callback
 * (reporting failures as transient errors), so here the bytes only pass, counted under eKuiper's node name;
 * payloads still compressed (a connector that leaves it to the runtime marks them) are inflated here.
 */
export class DecompressNode extends QueueNode<'raw'> {
  /** raw events, and a connector's events queued as they are (no kind) */
  protected readonly handles = kinds('raw');
  private readonly algorithm: Compression | null;
  constructor(
    name: string,
    capacity: number,
    algorithm: string,
    private readonly sendError: boolean,
  ) {
    super(name, capacity);
    this.algorithm = algorithm ? checkCompression(algorithm) : null;
  }
  /** inside the source's work: no queue between them (docs/runtime.md §1.6) */
  override accept(item: Item): boolean {
    return this.runFused(item);
  }
  /** `item`: a raw event, or a connector's event as the source node queued it */
  protected process(item: RawEvent): void {
    const raw = isRaw(item as RawEvent | SourceEvent) ? item : null;
    const ev = raw !== null ? raw.ev : (item as unknown as SourceEvent);
    if (this.algorithm === null || ev.meta.$compressed !== true || (raw !== null && raw.decoded !== null)) {
      this.emit(item);
      return;
    }
    const p = ev.payload;
    if (!(p instanceof Uint8Array)) {
      this.emit(item);
      return;
    }
    let out: Uint8Array;
    try {
      out = decompress(this.algorithm, p);
    } catch (err) {
      this.emitError(err, this.sendError);
      return;
    }
    const { $compressed: _drop, ...meta } = ev.meta;
    this.emit(new RawEvent({ payload: out, meta, timestamp: ev.timestamp }, null));
  }
}
