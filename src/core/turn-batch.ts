/**
 * Items asked for during one turn of the event loop, handed over together at its end: the messages for a worker
 * thread (and from it), the SUBSCRIBEs of one MQTT connection, the writes of the SQLite store. Concurrent requests and
 * a restore create many rules in one turn; each then costs one message, one packet and one transaction together,
 * not one each.
 */
export class TurnBatch<T> {
  private items: T[] = [];

  constructor(private readonly handOver: (items: T[]) => void) {}

  add(item: T): void {
    this.items.push(item);
    if (this.items.length === 1) setImmediate(() => this.flush());
  }

  /** Hands over what was collected now, before the turn ends (nothing when it is empty). */
  flush(): void {
    const list = this.items;
    if (list.length === 0) return;
    this.items = [];
    this.handOver(list);
  }

  /** Drops what was collected: it was for a receiver that is gone. */
  clear(): void {
    this.items = [];
  }
}
