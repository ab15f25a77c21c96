/**
 * Event-time watermark operator (docs/sql.md §5.10): buffers events in timestamp order and releases them, followed by
 * the watermark, whenever min over streams(largest timestamp) − lateTolerance grows. Late events are dropped.
 */
import type { Tuple } from '../contracts/index.js';
import { kinds, Watermark, type ItemOf } from './items.js';
import { QueueNode } from './node.js';
import { decodeRow, encodeRow, type Checkpointed, type Json } from './checkpoint.js';

/** the kinds that end here: the node emits watermarks of its own, and only single tuples make progress */
type WatermarkKinds = 'tuple' | 'join' | 'rows' | 'units' | 'watermark';

export class WatermarkNode extends QueueNode<WatermarkKinds> implements Checkpointed {
  protected readonly handles = kinds<WatermarkKinds>('tuple', 'join', 'rows', 'units', 'watermark');
  private readonly maxTs = new Map<string, number>();
  private watermark = 0;
  /** pending events sorted by timestamp (stable for equal timestamps) */
  private pending: Tuple[] = [];

  constructor(
    name: string,
    bufferLength: number,
    /** names (emitters) of the streams whose progress makes the watermark */
    private readonly streams: readonly string[],
    private readonly lateTolerance: number,
  ) {
    super(name, bufferLength);
  }

  protected process(item: ItemOf<WatermarkKinds>): void {
    if (item.kind !== 'tuple') return;
    const t = item.timestamp;
    if (t < this.watermark) return;
    this.insert(item);
    const prev = this.maxTs.get(item.emitter);
    if (prev === undefined || t > prev) this.maxTs.set(item.emitter, t);
    const next = this.compute();
    if (next > this.watermark) {
      this.watermark = next;
      this.release();
    }
  }

  private insert(row: Tuple): void {
    const p = this.pending;
    let i = p.length;
    while (i > 0 && p[i - 1].timestamp > row.timestamp) i--;
    if (i === p.length) p.push(row);
    else p.splice(i, 0, row);
  }

  private compute(): number {
    let min = Infinity;
    for (const s of this.streams) {
      const m = this.maxTs.get(s);
      if (m === undefined) return 0;
      if (m < min) min = m;
    }
    if (min === Infinity) return 0;
    return min - this.lateTolerance;
  }

  private release(): void {
    const wm = this.watermark;
    const p = this.pending;
    let n = 0;
    while (n < p.length && p[n].timestamp <= wm) n++;
    for (let i = 0; i < n; i++) this.emit(p[i]);
    this.pending = n === p.length ? [] : p.slice(n);
    this.emit(new Watermark(wm));
  }

  get checkpointKey(): string {
    return this.name;
  }
  hasState(): boolean {
    return true;
  }

  /** `{maxTs, watermark, rows}`: the largest timestamp per stream, the watermark, the events not released yet */
  snapshot(): Json {
    return { maxTs: Object.fromEntries(this.maxTs), watermark: this.watermark, rows: this.pending.map(encodeRow) };
  }

  restore(state: Json): void {
    const s = state as { maxTs: Record<string, number>; watermark: number; rows: unknown[] };
    this.maxTs.clear();
    for (const [k, v] of Object.entries(s.maxTs)) this.maxTs.set(k, v);
    this.watermark = s.watermark;
    this.pending = s.rows.map((r) => decodeRow(r) as Tuple);
  }
}
