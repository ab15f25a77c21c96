/**
 * The subset of NNG ("scalability protocols") over IPC that portable plugins speak (docs/runtime.md §5.3 Transport):
 * an 8-byte handshake `00 'S' 'P' 00 <protocol id> 00 00`, then frames of `0x01` + 64-bit big-endian length +
 * payload; REQ/REP payloads start with a 4-byte request id. The IPC address is a Unix socket path.
 *
 * On the wire helpers of core/nng-wire.ts (the one NNG framing of Eddy): the connection every channel uses, and the
 * data channels of sources (PULL, listening) and sinks (PUSH, dialling).
 */
import { unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { NNG_PROTOCOL as PROTO, NngReader, nngFrame, nngHeader } from '../core/nng-wire.js';

/**
 * One connection after (or during) the handshake: complete messages go to `onMessage`; a peer that breaks the
 * protocol is disconnected. Used by the data channels here and by the REP channels of the plugin host thread.
 */
export class NngConn {
  private readonly reader: NngReader;
  closed = false;

  constructor(
    readonly socket: Socket,
    myProto: number,
    peerProto: number,
    onMessage: (msg: Buffer, conn: NngConn) => void,
    onClose?: (conn: NngConn) => void,
  ) {
    this.reader = new NngReader(peerProto, true);
    socket.on('data', (d: Buffer) => {
      if (this.reader.feed(d, (msg) => onMessage(msg, this))) socket.destroy();
    });
    socket.on('close', () => {
      this.closed = true;
      onClose?.(this);
    });
    socket.on('error', () => undefined);
    socket.write(nngHeader(myProto));
  }

  send(payload: Uint8Array): boolean {
    if (this.closed) return false;
    return this.socket.write(nngFrame(payload, true));
  }

  close(): void {
    this.closed = true;
    this.socket.destroy();
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
    private readonly conns: Set<NngConn>,
    readonly path: string,
  ) {}

  static async listen(path: string, onMessage: (msg: Buffer) => void): Promise<PullListener> {
    removeStale(path);
    const conns = new Set<NngConn>();
    const server = createServer((socket) => {
      const c = new NngConn(socket, PROTO.PULL, PROTO.PUSH, onMessage);
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
  private constructor(private readonly conn: NngConn) {}

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
        return new PushDialer(new NngConn(socket, PROTO.PUSH, PROTO.PULL, () => undefined));
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
