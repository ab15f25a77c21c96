/**
 * The sink batch node `op_<sinkType>_<i>_0_batch` (docs/runtime.md §1.6, §3.2): inserted before a sink whose action
 * sets `batchSize` or `lingerInterval`, it gathers the rows of incoming triggers and hands them on as one list,
 * after `batchSize` triggers and/or every `lingerInterval` ms (only when something is gathered).
 */
import type { ValueObject } from '../values/value.js';
import type { Props } from '../contracts/index.js';
import type { Clock, TimerHandle } from './clock.js';
import { kinds, Output } from './items.js';
import { QueueNode } from './node.js';
import { decodeValue, encodeValue, type Checkpointed, type Json } from './checkpoint.js';

export interface BatchSettings {
  batchSize: number;
  lingerInterval: number;
}

function intProp(props: Props, name: string): number {
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(props)) {
    if (k.toLowerCase() !== lower) continue;
    const n = typeof v === 'bigint' ? Number(v) : v;
    return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0;
  }
  return 0;
}

/** The batch settings of a sink action's (merged) properties, or null when the action does not batch. */
export function batchSettings(props: Props): BatchSettings | null {
  const batchSize = intProp(props, 'batchSize');
  const lingerInterval = intProp(props, 'lingerInterval');
  return batchSize > 0 || lingerInterval > 0 ? { batchSize, lingerInterval } : null;
}

export class BatchNode extends QueueNode<'output'> implements Checkpointed {
  protected readonly handles = kinds('output');
  private rows: ValueObject[] = [];
  private count = 0;
  private timer: TimerHandle | undefined;

  constructor(
    name: string,
    capacity: number,
    private readonly settings: BatchSettings,
    private readonly clock: Clock,
  ) {
    super(name, capacity);
  }

  override open(): Promise<void> {
    if (this.settings.lingerInterval > 0) this.schedule();
    return Promise.resolve();
  }

  override close(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    this.rows = [];
    this.count = 0;
    return super.close();
  }

  protected process(item: Output): void {
    const rows = this.rows;
    for (let i = 0; i < item.rows.length; i++) rows.push(item.rows[i]);
    this.count++;
    if (this.settings.batchSize > 0 && this.count >= this.settings.batchSize) this.flush();
  }

  private flush(): void {
    this.count = 0;
    if (this.rows.length === 0) return;
    const rows = this.rows;
    this.rows = [];
    this.emit(new Output(rows, false, this.clock.now()));
  }

  private schedule(): void {
    this.timer = this.clock.setTimeout(() => {
      if (this.closed) return;
      this.timed(() => this.flush());
      this.schedule();
    }, this.settings.lingerInterval);
  }

  /** Hands on what is gathered now (the sources ended: no more rows will complete the batch). */
  flushGathered(): void {
    if (this.closed) return;
    this.timed(() => this.flush());
  }

  get checkpointKey(): string {
    return this.name;
  }
  hasState(): boolean {
    return true;
  }

  /** `{rows, count}`: the rows gathered so far and the triggers they came in */
  snapshot(): Json {
    return { rows: this.rows.map(encodeValue), count: this.count };
  }

  restore(state: Json): void {
    const s = state as { rows: unknown[]; count: unknown };
    this.rows = s.rows.map((r) => decodeValue(r) as ValueObject);
    this.count = Number(s.count) || 0;
  }
}
