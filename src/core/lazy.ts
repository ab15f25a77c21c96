/**
 * Libraries loaded on first use. A server loads every connector, and so does each rule worker thread; the database,
 * Redis, NATS, ZeroMQ and websocket clients cost tens of megabytes and a few hundred milliseconds of start in each, for
 * connectors most servers never use. The same holds on the main thread for what only some requests need (protobuf
 * schemas, zip archives).
 */
import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

/** `load` runs once, on the first call; every call answers its promise. */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load());
}

/** A module imported on first use whose exports are then read synchronously (`get`), as a constructor must. */
export interface LazyModule<T> {
  /** imports it once; every call answers the same promise */
  readonly load: () => Promise<T>;
  /** its exports, once `load` has resolved; before that a defect of the caller (nothing prepared it) */
  get(): T;
}

export function lazyModule<T>(name: string, load: () => Promise<T>): LazyModule<T> {
  let loaded: T | undefined;
  const once = lazy(async () => (loaded = await load()));
  return {
    load: once,
    get: () => {
      if (loaded === undefined) throw new TypeError(`${name} is used before it was loaded`);
      return loaded;
    },
  };
}

/**
 * A CommonJS library required on the first call, synchronously: its users stay synchronous (a schema checked while a
 * request is validated, an archive read) and none of them has to prepare it first.
 */
export function lazyRequire<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= requireHere(name) as T);
}
