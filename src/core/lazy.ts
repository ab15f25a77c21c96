/**
 * Client libraries imported on first use. A server loads every connector, and so does each rule worker thread; the
 * database, Redis, NATS, ZeroMQ and websocket clients cost tens of megabytes and a few hundred milliseconds of start
 * in each, for connectors most servers never use.
 */

/** `load` runs once, on the first call; every call answers its promise. */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load());
}
