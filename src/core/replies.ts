/**
 * Requests numbered by the asker and settled by a reply that carries the number back: what a worker asks the main
 * thread over its port (the store, the data-server relay, the main thread's functions) and what the main thread asks
 * the plugin host.
 */
export class Replies<T> {
  private next = 1;
  private readonly waiting = new Map<number, { resolve: (v: T) => void; reject: (e: Error) => void }>();

  /** A new request: `send` posts it under the number given; the promise settles with its reply. */
  ask(send: (id: number) => void): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      send(id);
    });
  }

  /** The reply to request `id`: an error's text, or the value (a reply to no waiting request is ignored). */
  settle(id: number, error: string | undefined, value: T): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    if (error !== undefined) w.reject(new Error(error));
    else w.resolve(value);
  }

  /** Rejects every request still waiting: the peer is gone. */
  rejectAll(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}
