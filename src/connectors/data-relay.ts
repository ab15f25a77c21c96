/**
 * The data server reached from the rule workers (docs/runtime.md §1.10). The HTTP data server listens on the main
 * thread; httppush sources and websocket endpoints of rules on a worker attach to it through one message port per
 * worker, as memory topics cross threads on the memory bus: the worker asks the main thread to hold the route or the
 * endpoint for it, the main thread sends each body, frame and client count there, and the worker sends what its
 * websocket sinks broadcast. A worker that ends (its port closes) lets go of everything it held.
 *
 * On the worker, {@link DataRelayClient} stands for the main thread's push hub and websocket endpoints: the sources
 * and sinks use it as they use those on the main thread, so they answer and fail alike. Bodies are checked on the main
 * thread (the client gets its 200 or 400 there), and each worker holds a route or endpoint once, whatever the number
 * of its rules using it.
 */
import type { MessagePort } from 'node:worker_threads';
import type { SourceEvent } from '../contracts/index.js';
import { transientError } from '../contracts/failures.js';
import { SharedUses, dropHolder, subscribe, type EndpointUse, type WsListener } from './data-uses.js';
import { Replies, tellPort } from '../core/replies.js';

/** What an httppush source attaches to (http/push-source.ts `HttpPushHub`, or its stand-in on a worker). */
export interface PushHub {
  attach(method: string, path: string, consumer: PushConsumer): Promise<() => Promise<void>>;
}

export interface PushConsumer {
  emit: (ev: SourceEvent) => void;
  onError: (err: Error) => void;
}

/** The websocket endpoints of the data server as sources, sinks and the REST API use them (dataserver.ts). */
export interface WsEndpointsPort {
  has(path: string): boolean;
  acquire(path: string, holder: string): Promise<void>;
  release(path: string, holder: string): Promise<void>;
  listen(path: string, listener: WsListener): () => void;
  watch(path: string, watcher: (clients: number) => void): () => void;
  broadcast(path: string, data: string | Uint8Array): number;
  close(): Promise<void>;
}

/** What a worker asks the main thread, answered by a reply of the same id. */
type Request = { k: 'attach' | 'detach'; method: string; path: string } | { k: 'acquire' | 'release'; path: string };

/** Worker → main. */
type Ask = (Request & { id: number }) | { k: 'broadcast'; path: string; data: string | Uint8Array };

/** Main → worker. */
type Tell =
  | { k: 'reply'; id: number; error?: string }
  | { k: 'push'; route: string; payload: Uint8Array; meta: Record<string, string>; timestamp: number }
  | { k: 'pushError'; route: string; message: string }
  | { k: 'frame'; path: string; data: Uint8Array; isBinary: boolean }
  | { k: 'clients'; path: string; clients: number };

const routeKey = (method: string, path: string): string => `${method} ${path}`;

let nextWorkerHolder = 1;

/** The main thread's side: serves the port of each worker with this thread's push hub and websocket endpoints. */
export class DataRelayServer {
  constructor(
    private readonly hub: () => PushHub,
    private readonly endpoints: WsEndpointsPort,
  ) {}

  serve(port: MessagePort): void {
    const holder = `worker-relay-${nextWorkerHolder++}`;
    const routes = new Map<string, Promise<() => Promise<void>>>();
    const held = new Map<string, () => void>();
    const tell = tellPort<Tell>(port);
    const answer = (id: number, p: Promise<unknown>): void => {
      p.then(
        () => tell({ k: 'reply', id }),
        (err: unknown) => tell({ k: 'reply', id, error: err instanceof Error ? err.message : String(err) }),
      );
    };
    const detach = async (key: string): Promise<void> => {
      const d = routes.get(key);
      routes.delete(key);
      if (d) await (await d.catch(() => async () => {}))();
    };
    const release = async (path: string): Promise<void> => {
      const stop = held.get(path);
      if (!stop) return;
      held.delete(path);
      stop();
      await this.endpoints.release(path, holder);
    };
    port.on('message', (m: Ask) => {
      switch (m.k) {
        case 'attach': {
          const key = routeKey(m.method, m.path);
          const attached = this.hub().attach(m.method, m.path, {
            emit: (ev) =>
              tell({
                k: 'push',
                route: key,
                payload: ev.payload as Uint8Array,
                meta: ev.meta as Record<string, string>,
                timestamp: ev.timestamp ?? Date.now(),
              }),
            onError: (err) => tell({ k: 'pushError', route: key, message: err.message }),
          });
          routes.set(key, attached);
          attached.catch(() => routes.get(key) === attached && routes.delete(key));
          answer(m.id, attached);
          return;
        }
        case 'detach':
          answer(m.id, detach(routeKey(m.method, m.path)));
          return;
        case 'acquire':
          answer(
            m.id,
            this.endpoints.acquire(m.path, holder).then(() => {
              if (held.has(m.path)) return;
              const path = m.path;
              const unlisten = this.endpoints.listen(path, (data, isBinary) =>
                tell({ k: 'frame', path, data: new Uint8Array(data), isBinary }),
              );
              const unwatch = this.endpoints.watch(path, (clients) => tell({ k: 'clients', path, clients }));
              held.set(path, () => {
                unlisten();
                unwatch();
              });
            }),
          );
          return;
        case 'release':
          answer(m.id, release(m.path));
          return;
        case 'broadcast':
          this.endpoints.broadcast(m.path, m.data);
          return;
      }
    });
    // the worker ended (replaced, or the server stops): its routes and endpoints are let go
    port.on('close', () => {
      for (const key of [...routes.keys()]) void detach(key);
      for (const path of [...held.keys()]) void release(path);
    });
  }
}

interface RelayedEndpoint extends EndpointUse {
  /** the number of clients the main thread last reported */
  clients: number;
  ready: Promise<void>;
}

/** A worker's side: the push hub and websocket endpoints of the main thread's data server, reached over `port`. */
export class DataRelayClient implements PushHub, WsEndpointsPort {
  private readonly replies = new Replies<void>();
  private readonly routes = new SharedUses<PushConsumer>();
  private readonly endpoints = new Map<string, RelayedEndpoint>();

  constructor(private readonly port: MessagePort) {
    // the relay must not keep the worker alive
    port.unref();
    port.on('message', (m: Tell) => this.onTell(m));
  }

  private ask(m: Request): Promise<void> {
    return this.replies.ask((id) => this.port.postMessage({ ...m, id } satisfies Ask));
  }

  private onTell(m: Tell): void {
    switch (m.k) {
      case 'reply':
        this.replies.settle(m.id, m.error, undefined);
        return;
      case 'push':
        for (const c of this.routes.consumers(m.route))
          c.emit({ payload: m.payload, meta: m.meta, timestamp: m.timestamp });
        return;
      case 'pushError': {
        const err = transientError(new Error(m.message));
        for (const c of this.routes.consumers(m.route)) c.onError(err);
        return;
      }
      case 'frame': {
        const buf = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
        for (const l of this.endpoints.get(m.path)?.listeners ?? []) l(buf, m.isBinary);
        return;
      }
      case 'clients': {
        const ep = this.endpoints.get(m.path);
        if (!ep) return;
        ep.clients = m.clients;
        for (const w of ep.watchers) w(m.clients);
        return;
      }
    }
  }

  attach(method: string, path: string, consumer: PushConsumer): Promise<() => Promise<void>> {
    return this.routes.attach(routeKey(method, path), consumer, async () => {
      await this.ask({ k: 'attach', method, path });
      return () => this.ask({ k: 'detach', method, path });
    });
  }

  has(path: string): boolean {
    return this.endpoints.has(path);
  }

  async acquire(path: string, holder: string): Promise<void> {
    let ep = this.endpoints.get(path);
    if (!ep) {
      const fresh: RelayedEndpoint = {
        holders: new Set(),
        listeners: new Set(),
        watchers: new Set(),
        clients: 0,
        ready: this.ask({ k: 'acquire', path }),
      };
      this.endpoints.set(path, (ep = fresh));
      fresh.ready.catch(() => this.endpoints.get(path) === fresh && this.endpoints.delete(path));
    }
    await ep.ready;
    ep.holders.add(holder);
  }

  async release(path: string, holder: string): Promise<void> {
    if (dropHolder(this.endpoints, path, holder)) await this.ask({ k: 'release', path });
  }

  listen(path: string, listener: WsListener): () => void {
    return subscribe(this.endpoints.get(path), path, (ep) => ep.listeners, listener);
  }

  watch(path: string, watcher: (clients: number) => void): () => void {
    return subscribe(this.endpoints.get(path), path, (ep) => ep.watchers, watcher);
  }

  /** Sent on the main thread; the number is that of the clients last reported connected. */
  broadcast(path: string, data: string | Uint8Array): number {
    const ep = this.endpoints.get(path);
    if (!ep) return 0;
    this.port.postMessage({ k: 'broadcast', path, data } satisfies Ask);
    return ep.clients;
  }

  async close(): Promise<void> {
    for (const path of [...this.endpoints.keys()]) {
      this.endpoints.delete(path);
      await this.ask({ k: 'release', path }).catch(() => undefined);
    }
  }
}
