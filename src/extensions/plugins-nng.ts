/**
 * The subset of NNG ("scalability protocols") over IPC that portable plugins speak (docs/runtime.md §5.3 Transport):
 * an 8-byte handshake `00 'S' 'P' 00 <protocol id> 00 00`, then frames of `0x01` + 64-bit big-endian length +
 * payload; REQ/REP payloads start with a 4-byte request id. The IPC address is a Unix socket path.
 *
 * `NNG_SOURCE` is the same logic as plain JavaScript for the plugin host worker (which cannot load TypeScript);
 * the TypeScript side below, on the shared wire helpers of core/nng-wire.ts, serves the data channels of sources
 * (PULL, listening) and sinks (PUSH, dialling).
 */
import { unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { NNG_PROTOCOL as PROTO, NngReader, nngFrame, nngHeader } from '../core/nng-wire.js';

/** JavaScript (CommonJS) of `nngHandshake`, `nngFrame` and `NngConn`, evaluated inside workers and test plugins. */
export const NNG_SOURCE = String.raw`
function nngHandshake(proto) {
  const b = Buffer.alloc(8);
  b[1] = 0x53; b[2] = 0x50; b.writeUInt16BE(proto, 4);
  return b;
}
function nngFrame(payload) {
  const h = Buffer.alloc(9);
  h[0] = 1; h.writeBigUInt64BE(BigInt(payload.length), 1);
  return Buffer.concat([h, payload]);
}
class NngConn {
  constructor(socket, myProto, peerProto, onMessage, onClose) {
    this.socket = socket; this.peerProto = peerProto; this.onMessage = onMessage;
    this.buf = Buffer.alloc(0); this.shaken = false; this.closed = false;
    socket.on('data', (d) => { this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d; this.drain(); });
    socket.on('close', () => { this.closed = true; if (onClose) onClose(this); });
    socket.on('error', () => {});
    socket.write(nngHandshake(myProto));
  }
  drain() {
    if (!this.shaken) {
      if (this.buf.length < 8) return;
      if (this.buf[0] !== 0 || this.buf[1] !== 0x53 || this.buf[2] !== 0x50 || this.buf.readUInt16BE(4) !== this.peerProto) { this.socket.destroy(); return; }
      this.buf = this.buf.subarray(8); this.shaken = true;
    }
    while (this.buf.length >= 9) {
      if (this.buf[0] !== 1) { this.socket.destroy(); return; }
      const len = Number(this.buf.readBigUInt64BE(1));
      if (this.buf.length < 9 + len) return;
      const msg = Buffer.from(this.buf.subarray(9, 9 + len));
      this.buf = this.buf.subarray(9 + len);
      this.onMessage(this, msg);
    }
  }
  send(payload) { if (!this.closed) this.socket.write(nngFrame(Buffer.from(payload))); }
  close() { this.closed = true; this.socket.destroy(); }
}
`;

/** One connection after (or during) the handshake; complete messages go to `onMessage`. */
class Conn {
  private readonly reader: NngReader;
  closed = false;

  constructor(
    readonly socket: Socket,
    myProto: number,
    peerProto: number,
    onMessage: (msg: Buffer) => void,
  ) {
    this.reader = new NngReader(peerProto, true);
    socket.on('data', (d: Buffer) => {
      if (this.reader.feed(d, onMessage)) socket.destroy();
    });
    socket.on('close', () => {
      this.closed = true;
    });
    socket.on('error', () => undefined);
    socket.write(nngHeader(myProto));
  }

  send(payload: Uint8Array): boolean {
    if (this.closed) return false;
    return this.socket.write(nngFrame(payload, true));
  }
}

function removeStale(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // nothing to remove
  }
}

/** A listening PULL socket: every message from any PUSH peer goes to `onMessage`. */
export class PullListener {
  private constructor(
    private readonly server: Server,
    private readonly conns: Set<Conn>,
    readonly path: string,
  ) {}

  static async listen(path: string, onMessage: (msg: Buffer) => void): Promise<PullListener> {
    removeStale(path);
    const conns = new Set<Conn>();
    const server = createServer((socket) => {
      const c = new Conn(socket, PROTO.PULL, PROTO.PUSH, onMessage);
      conns.add(c);
      socket.on('close', () => conns.delete(c));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => resolve());
    });
    return new PullListener(server, conns, path);
  }

  async close(): Promise<void> {
    for (const c of this.conns) c.socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    removeStale(this.path);
  }
}

/** A PUSH socket dialled to a listening PULL peer. */
export class PushDialer {
  private constructor(private readonly conn: Conn) {}

  /** Dials `path`, retrying until `timeoutMs` (the peer may still be starting to listen). */
  static async dial(path: string, timeoutMs: number): Promise<PushDialer> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      try {
        const socket = await new Promise<Socket>((resolve, reject) => {
          const s = createConnection(path);
          s.once('connect', () => resolve(s));
          s.once('error', reject);
        });
        return new PushDialer(new Conn(socket, PROTO.PUSH, PROTO.PULL, () => undefined));
      } catch (e) {
        if (Date.now() > end) throw new Error(`cannot dial ${path}: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  get closed(): boolean {
    return this.conn.closed;
  }

  send(payload: Uint8Array): void {
    if (!this.conn.send(payload) && this.conn.closed) throw new Error('the plugin closed the connection');
  }

  close(): void {
    this.conn.socket.destroy();
  }
}
