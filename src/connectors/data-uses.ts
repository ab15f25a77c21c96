/**
 * What the data server's users share, on the main thread and through the relay to the rule workers (data-relay.ts):
 * websocket endpoints held by several holders with their listeners and watchers, and httppush routes opened once for
 * all their consumers.
 */

/** A listener of one websocket endpoint's inbound messages. */
export type WsListener = (data: Buffer, isBinary: boolean) => void;

/**
 * What each side of the relay keeps of a websocket endpoint (dataserver.ts `WsEndpoints`, data-relay.ts
 * `DataRelayClient`).
 */
export interface EndpointUse {
  holders: Set<string>;
  listeners: Set<WsListener>;
  /** told the number of connected clients whenever one connects or leaves */
  watchers: Set<(clients: number) => void>;
}

/** Adds `fn` to a set of the acquired endpoint `ep` (at `path`); the function returned takes it out again. */
export function subscribe<T>(
  ep: EndpointUse | undefined,
  path: string,
  set: (ep: EndpointUse) => Set<T>,
  fn: T,
): () => void {
  if (!ep) throw new Error(`websocket endpoint ${path} is not registered`);
  const s = set(ep);
  s.add(fn);
  return () => s.delete(fn);
}

/** Drops `holder`'s claim on endpoint `path`; when it was the last one, the endpoint, taken out of `endpoints`. */
export function dropHolder<E extends EndpointUse>(
  endpoints: Map<string, E>,
  path: string,
  holder: string,
): E | undefined {
  const ep = endpoints.get(path);
  if (!ep) return undefined;
  ep.holders.delete(holder);
  if (ep.holders.size > 0) return undefined;
  endpoints.delete(path);
  return ep;
}

/**
 * Consumers of something opened once for all of them, by key, and closed with the last one: an httppush route on the
 * data server (http/push-source.ts) and a worker's hold on one through the relay.
 */
export class SharedUses<C> {
  private readonly uses = new Map<string, { consumers: Set<C>; opened: Promise<() => Promise<void>> }>();

  consumers(key: string): Iterable<C> {
    return this.uses.get(key)?.consumers ?? [];
  }

  /** Adds `consumer` to `key`, opened by `open` (with the set it will serve) for the first; resolves to its detach. */
  async attach(
    key: string,
    consumer: C,
    open: (consumers: ReadonlySet<C>) => Promise<() => Promise<void>>,
  ): Promise<() => Promise<void>> {
    let use = this.uses.get(key);
    if (!use) {
      const consumers = new Set<C>();
      const fresh = { consumers, opened: open(consumers) };
      this.uses.set(key, (use = fresh));
      fresh.opened.catch(() => this.uses.get(key) === fresh && this.uses.delete(key));
    }
    const u = use;
    await u.opened;
    u.consumers.add(consumer);
    return async () => {
      u.consumers.delete(consumer);
      if (u.consumers.size > 0 || this.uses.get(key) !== u) return;
      this.uses.delete(key);
      await (
        await u.opened
      )();
    };
  }
}
