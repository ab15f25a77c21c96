/**
 * The neuron connections of one server (docs/connectors.md): one NNG PAIR connection per URL, shared by every neuron
 * source and sink and closed when the last of them leaves.
 */
import { NngPairDialer, nngAddress } from './nng-pair.js';

export const NEURON_URL = 'ipc:///tmp/neuron-ekuiper.ipc';

export interface Shared {
  dialer: NngPairDialer;
  refs: number;
  messages: Set<(msg: Buffer) => void>;
  statuses: Set<(connected: boolean, err?: Error) => void>;
}

/** The neuron connections of one server, one per URL, closed when their last user leaves. */
export class NeuronPool {
  private readonly conns = new Map<string, Shared>();

  acquire(url: string): Shared {
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
      s = { dialer, refs: 0, messages, statuses };
      this.conns.set(url, s);
      dialer.start();
    }
    s.refs++;
    return s;
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
