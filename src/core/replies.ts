/**
 * Requests numbered by the asker and settled by a reply that carries the number back: what a worker asks the main
 * thread over its port (the store, the relays, the main thread's functions) and what the main thread asks the plugin
 * host; and the main thread's side of a relay telling a worker that may have ended.
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

/** Something messages are posted to: a worker's relay port. */
interface PostTarget {
  postMessage(message: unknown): void;
}

/**
 * Posts to the port of a worker that may have ended meanwhile: what it held is let go when the port closes (each
 * relay's `close` handler), so a message that can no longer be delivered is dropped here.
 */
export function tellPort<T>(port: PostTarget): (message: T) => void {
  return (message) => {
    try {
      port.postMessage(message);
    } catch {
      // the worker is gone
    }
  };
}
