/**
 * An NNG PAIR (v0) socket that dials one peer, as the neuron connectors need (docs/connectors.md neuron): the SP
 * handshake `00 'S' 'P' 00 <protocol 0x0010> 00 00`, then messages framed with a 64-bit big-endian length (over IPC
 * preceded by a `0x01` message-type byte). IPC addresses are Unix socket paths. The dialler retries every second
 * until closed, so a peer may come and go.
 *
 * This is the pair protocol only; the portable-plugin transport (extensions) speaks other protocols over the same
 * framing and keeps its own copy, as connectors do not depend on extensions.
 */
import { createConnection, type Socket } from 'node:net';

const PAIR0 = 0x10;
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

function handshake(): Buffer {
  const b = Buffer.alloc(8);
  b[1] = 0x53;
  b[2] = 0x50;
  b.writeUInt16BE(PAIR0, 4);
  return b;
}

export class NngPairDialer {
  private socket: Socket | undefined;
  private ready = false;
  private buf: Buffer = Buffer.alloc(0);
  private shaken = false;
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
    this.buf = Buffer.alloc(0);
    this.shaken = false;
    let lastError: Error | undefined;
    socket.on('connect', () => socket.write(handshake()));
    socket.on('data', (d: Buffer) => this.feed(socket, d));
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

  private feed(socket: Socket, d: Buffer): void {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    if (!this.shaken) {
      if (this.buf.length < 8) return;
      if (this.buf[0] !== 0 || this.buf[1] !== 0x53 || this.buf[2] !== 0x50 || this.buf.readUInt16BE(4) !== PAIR0) {
        socket.destroy(new Error('the peer is not an NNG pair socket'));
        return;
      }
      this.buf = this.buf.subarray(8);
      this.shaken = true;
      this.ready = true;
      this.onStatus(true);
    }
    const head = this.addr.ipc ? 9 : 8;
    while (this.buf.length >= head) {
      if (this.addr.ipc && this.buf[0] !== 1) {
        socket.destroy(new Error('unexpected NNG IPC message type'));
        return;
      }
      const len = Number(this.buf.readBigUInt64BE(head - 8));
      if (this.buf.length < head + len) return;
      const msg = Buffer.from(this.buf.subarray(head, head + len));
      this.buf = this.buf.subarray(head + len);
      this.onMessage(msg);
    }
  }

  /** Sends one message; false when not connected. */
  send(payload: Uint8Array): boolean {
    const socket = this.socket;
    if (!this.ready || !socket) return false;
    const h = Buffer.alloc(this.addr.ipc ? 9 : 8);
    if (this.addr.ipc) h[0] = 1;
    h.writeBigUInt64BE(BigInt(payload.length), this.addr.ipc ? 1 : 0);
    socket.write(Buffer.concat([h, payload]));
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
