/**
 * The neuron connections reached from the rule workers (docs/runtime.md §1.10). An NNG pair admits one peer, so each
 * URL's connection stays on the main thread (pool.ts) and a worker's neuron sources and sinks use it through one
 * message port per worker, as httppush routes reach the data server (../data-relay.ts): the worker asks the main
 * thread to hold a URL's connection for it, the main thread sends it every message and every change of the
 * connection, and the worker sends what its sinks write. A worker that ends (its port closes) lets go of every
 * connection it held.
 */
import type { MessagePort } from 'node:worker_threads';
import { tellPort } from '../../core/replies.js';
import type { NeuronLink, NeuronLinks, NeuronPool } from './pool.js';

/** Worker → main. */
type Ask = { k: 'acquire' | 'release'; url: string } | { k: 'send'; url: string; payload: Uint8Array };

/** Main → worker. */
type Tell =
  { k: 'message'; url: string; payload: Uint8Array } | { k: 'status'; url: string; connected: boolean; error?: string };

/** The main thread's side: serves the port of each worker with this thread's neuron connections. */
export class NeuronRelayServer {
  constructor(private readonly pool: NeuronPool) {}

  serve(port: MessagePort): void {
    const held = new Map<string, { link: NeuronLink; stop: () => void }>();
    const tell = tellPort<Tell>(port);
    const release = (url: string): void => {
      const h = held.get(url);
      if (!h) return;
      held.delete(url);
      h.stop();
    };
    port.on('message', (m: Ask) => {
      switch (m.k) {
        case 'acquire': {
          if (held.has(m.url)) return;
          const url = m.url;
          const link = this.pool.acquire(url);
          const onMessage = (msg: Buffer): void => tell({ k: 'message', url, payload: new Uint8Array(msg) });
          const onStatus = (connected: boolean, err?: Error): void =>
            tell({ k: 'status', url, connected, ...(err ? { error: err.message } : {}) });
          link.messages.add(onMessage);
          link.statuses.add(onStatus);
          held.set(url, {
            link,
            stop: () => {
              link.messages.delete(onMessage);
              link.statuses.delete(onStatus);
              this.pool.release(url);
            },
          });
          // the connection may be up already (another user of the URL): the worker learns it now
          tell({ k: 'status', url, connected: this.pool.connected(url) });
          return;
        }
        case 'release':
          release(m.url);
          return;
        case 'send':
          // a message the worker sent while the connection went down on the way is lost, as one written into a
          // socket that then broke
          held.get(m.url)?.link.send(m.payload);
          return;
      }
    });
    // the worker ended (replaced, or the server stops): its connections are let go
    port.on('close', () => {
      for (const url of [...held.keys()]) release(url);
    });
  }
}

interface RelayedLink extends NeuronLink {
  refs: number;
  connected: boolean;
}

/** A worker's side: the main thread's neuron connections, reached over `port`. */
export class NeuronRelayClient implements NeuronLinks {
  private readonly links = new Map<string, RelayedLink>();

  constructor(private readonly port: MessagePort) {
    // the relay must not keep the worker alive
    port.unref();
    port.on('message', (m: Tell) => this.onTell(m));
  }

  private onTell(m: Tell): void {
    const link = this.links.get(m.url);
    if (!link) return;
    if (m.k === 'message') {
      const msg = Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength);
      for (const h of link.messages) h(msg);
      return;
    }
    const was = link.connected;
    link.connected = m.connected;
    // the first word on a connection not up yet is no change: its users hear only of changes, as on the main thread
    if (was !== m.connected)
      for (const h of link.statuses) h(m.connected, m.error === undefined ? undefined : new Error(m.error));
  }

  acquire(url: string): NeuronLink {
    let link = this.links.get(url);
    if (!link) {
      const fresh: RelayedLink = {
        refs: 0,
        connected: false,
        messages: new Set(),
        statuses: new Set(),
        send: (payload) => {
          if (!fresh.connected) return false;
          this.port.postMessage({ k: 'send', url, payload } satisfies Ask);
          return true;
        },
      };
      this.links.set(url, (link = fresh));
      this.port.postMessage({ k: 'acquire', url } satisfies Ask);
    }
    link.refs++;
    return link;
  }

  release(url: string): void {
    const link = this.links.get(url);
    if (!link || --link.refs > 0) return;
    this.links.delete(url);
    this.port.postMessage({ k: 'release', url } satisfies Ask);
  }

  close(): void {
    for (const url of [...this.links.keys()]) {
      this.links.delete(url);
      this.port.postMessage({ k: 'release', url } satisfies Ask);
    }
  }
}
