/**
 * An NNG PAIR (v0) socket that dials one peer, as the neuron connectors need (docs/connectors.md neuron): the SP
 * handshake `00 'S' 'P' 00 <protocol 0x0010> 00 00`, then messages framed with a 64-bit big-endian length (over IPC
 * preceded by a `0x01` message-type byte). IPC addresses are Unix socket paths. The dialler retries every second
 * until closed, so a peer may come and go.
 *
 * The handshake and framing are core/nng-wire.ts, which the portable-plugin transport (extensions) shares.
 */
import { createConnection, type Socket } from 'node:net';
import { NNG_PROTOCOL, NngReader, nngFrame, nngHeader } from '../../core/nng-wire.js';

const RETRY_MS = 1000;

export interface NngAddress {
  ipc: boolean;
  path?: string;
  host?: string;
  port?: number;
}

/** `ipc:///path` or `tcp://host:port`. */
export function nngAddress(url: string): NngAddress {
  if (url.startsWith('ipc://')) {
    const path = url.slice('ipc://'.length);
    if (path === '') throw new Error(`invalid neuron url ${url}`);
    return { ipc: true, path };
  }
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(url);
  if (!m) throw new Error(`invalid neuron url ${url}: only ipc:// and tcp:// are supported`);
  return { ipc: false, host: m[1].replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

export class NngPairDialer {
  private socket: Socket | undefined;
  private ready = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly addr: NngAddress,
    private readonly onMessage: (msg: Buffer) => void,
    private readonly onStatus: (connected: boolean, err?: Error) => void,
  ) {}

  get connected(): boolean {
    return this.ready;
  }

  start(): void {
    this.dial();
  }

  private dial(): void {
    if (this.closed) return;
    const a = this.addr;
    const socket = a.ipc ? createConnection(a.path!) : createConnection(a.port!, a.host!);
    this.socket = socket;
    const reader = new NngReader(NNG_PROTOCOL.PAIR, a.ipc);
    let lastError: Error | undefined;
    socket.on('connect', () => socket.write(nngHeader(NNG_PROTOCOL.PAIR)));
    const handshaken = (): void => {
      this.ready = true;
      this.onStatus(true);
    };
    socket.on('data', (d: Buffer) => {
      const broken = reader.feed(d, this.onMessage, handshaken);
      if (broken) socket.destroy(broken);
    });
    socket.on('error', (e) => (lastError = e));
    socket.on('close', () => {
      if (this.socket !== socket) return;
      const was = this.ready;
      this.ready = false;
      this.socket = undefined;
      if (was) this.onStatus(false, lastError ?? new Error('neuron connection closed'));
      if (!this.closed) this.timer = setTimeout(() => this.dial(), RETRY_MS);
    });
  }

  /** Sends one message; false when not connected. */
  send(payload: Uint8Array): boolean {
    const socket = this.socket;
    if (!this.ready || !socket) return false;
    socket.write(nngFrame(payload, this.addr.ipc));
    return true;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.ready = false;
    this.socket?.destroy();
    this.socket = undefined;
  }
}
