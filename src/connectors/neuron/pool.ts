/**
 * The neuron connections of one server (docs/connectors.md): one NNG PAIR connection per URL, shared by every neuron
 * source and sink of the server, wherever their rules run, and closed when the last of them leaves. The pair admits
 * one peer, so the connection lives on the main thread; a rule worker reaches it through its relay (relay.ts).
 */
import { NngPairDialer, nngAddress } from './nng-pair.js';

export const NEURON_URL = 'ipc:///tmp/neuron-ekuiper.ipc';

/** One URL's connection as its sources and sinks use it. */
export interface NeuronLink {
  /** Sends one message; false when not connected. */
  send(payload: Uint8Array): boolean;
  /** every message received */
  readonly messages: Set<(msg: Buffer) => void>;
  /** every change of the connection */
  readonly statuses: Set<(connected: boolean, err?: Error) => void>;
}

/** The connections of a thread's neuron connectors: the main thread's pool, or a worker's relay to it. */
export interface NeuronLinks {
  acquire(url: string): NeuronLink;
  release(url: string): void;
  close(): void;
}

interface Shared extends NeuronLink {
  dialer: NngPairDialer;
  refs: number;
}

/** The neuron connections of one server, one per URL, closed when their last user leaves. */
export class NeuronPool implements NeuronLinks {
  private readonly conns = new Map<string, Shared>();

  acquire(url: string): NeuronLink {
    let s = this.conns.get(url);
    if (!s) {
      const messages = new Set<(msg: Buffer) => void>();
      const statuses = new Set<(connected: boolean, err?: Error) => void>();
      const dialer = new NngPairDialer(
        nngAddress(url),
        (m) => {
          for (const h of messages) h(m);
        },
        (c, e) => {
          for (const h of statuses) h(c, e);
        },
      );
      s = { dialer, refs: 0, messages, statuses, send: (payload) => dialer.send(payload) };
      this.conns.set(url, s);
      dialer.start();
    }
    s.refs++;
    return s;
  }

  /** Whether the connection of `url` is up (a relay tells a worker acquiring it). */
  connected(url: string): boolean {
    return this.conns.get(url)?.dialer.connected ?? false;
  }

  release(url: string): void {
    const s = this.conns.get(url);
    if (!s || --s.refs > 0) return;
    this.conns.delete(url);
    s.dialer.close();
  }

  close(): void {
    for (const s of this.conns.values()) s.dialer.close();
    this.conns.clear();
  }
}
