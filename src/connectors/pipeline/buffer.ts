/**
 * The bounded buffer of a sink node (`bufferLength`, docs/runtime.md §3.2): one entry per push, as eKuiper's input
 * channel holds one item per upstream result. With `sendSingle` a collection of any size takes one slot and is
 * handed out row by row as it is sent.
 */
import type { ValueObject } from '../../values/value.js';
import type { SinkUnit } from './cache.js';
import type { SendLedger } from './ledger.js';

/** A FIFO with O(1) shift (`Array#shift` copies large arrays). */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(v: T): void {
    this.items.push(v);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}

export class SinkBuffer {
  private readonly queue = new Fifo<ValueObject[]>();
  /** with `sendSingle`: the collection being sent row by row and the position of its next row */
  private current: ValueObject[] | undefined;
  private currentPos = 0;

  constructor(
    private readonly sendSingle: boolean,
    private readonly omitIfEmpty: boolean,
    /** told when every unit of an entry has been started (a flush waits for the entries pushed before it) */
    private readonly ledger: SendLedger,
  ) {}

  /** entries waiting, one per push */
  get entries(): number {
    return this.queue.length;
  }

  /** what the buffer metric counts: entries waiting plus the rows still to send of the current collection */
  get size(): number {
    const pendingRows = this.current === undefined ? 0 : this.current.length - this.currentPos;
    return this.queue.length + pendingRows;
  }

  push(rows: ValueObject[]): void {
    this.queue.push(rows);
  }

  /** An empty row is not sent when `omitIfEmpty` is set. */
  skipRow(row: ValueObject): boolean {
    if (!this.omitIfEmpty) return false;
    for (const _ in row) return false;
    return true;
  }

  /** The next unit to send: a whole list, or with sendSingle the next (non-skipped) row of the queued lists. */
  next(): SinkUnit | undefined {
    if (!this.sendSingle) return this.queue.shift();
    for (;;) {
      const cur = this.current;
      if (cur !== undefined && this.currentPos < cur.length) {
        const row = cur[this.currentPos++];
        if (!this.skipRow(row)) return row;
        continue;
      }
      // every row of the previous entry has been started: it is done once they have settled
      if (cur !== undefined) this.ledger.entryTaken();
      const next = this.queue.shift();
      this.current = next;
      this.currentPos = 0;
      if (next === undefined) return undefined;
    }
  }

  hasNext(): boolean {
    return this.queue.length > 0 || (this.current !== undefined && this.currentPos < this.current.length);
  }

  clear(): void {
    this.queue.clear();
    this.current = undefined;
  }
}
