/**
 * The part of ZeroMQ's wire protocol (ZMTP 3.0, NULL security) that PUB and SUB sockets need over TCP: the 64-byte
 * greeting, the READY command carrying the socket type, framed multipart messages, and subscriptions sent as
 * messages whose first byte is 1 (subscribe) or 0 (unsubscribe) followed by the topic prefix. Announcing version 3.0
 * makes newer peers (libzmq 4.x speaks 3.1) fall back to exactly this form.
 *
 * The `zeromq` npm package is not used: with this project's `build-from-source` npm setting its installer builds
 * libzmq with cmake and downloads its dependencies (docs/connectors.md zmq).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

const FLAG_MORE = 0x01;
const FLAG_LONG = 0x02;
const FLAG_COMMAND = 0x04;
const GREETING_SIZE = 64;

export type SocketType = 'PUB' | 'SUB';

function greeting(): Buffer {
  const g = Buffer.alloc(GREETING_SIZE);
  g[0] = 0xff;
  g[9] = 0x7f;
  g[10] = 3; // major
  g[11] = 0; // minor
  g.write('NULL', 12, 'ascii');
  return g;
}

function frame(body: Uint8Array, flags: number): Buffer {
  const long = body.length > 255;
  const head = Buffer.alloc(long ? 9 : 2);
  head[0] = flags | (long ? FLAG_LONG : 0);
  if (long) head.writeBigUInt64BE(BigInt(body.length), 1);
  else head[1] = body.length;
  return Buffer.concat([head, body]);
}

function readyCommand(type: SocketType): Buffer {
  const name = Buffer.from('READY');
  const prop = Buffer.from('Socket-Type');
  const value = Buffer.from(type);
  const body = Buffer.alloc(1 + name.length + 1 + prop.length + 4 + value.length);
  let o = 0;
  body[o++] = name.length;
  o += name.copy(body, o);
  body[o++] = prop.length;
  o += prop.copy(body, o);
  body.writeUInt32BE(value.length, o);
  o += 4;
  value.copy(body, o);
  return frame(body, FLAG_COMMAND);
}

/** One multipart message as wire bytes. */
export function encodeMessage(parts: readonly Uint8Array[]): Buffer {
  return Buffer.concat(parts.map((p, i) => frame(p, i < parts.length - 1 ? FLAG_MORE : 0)));
}

/**
 * One ZMTP connection: handshake, then multipart messages in both directions. `onMessage` gets each complete
 * message; commands after the handshake (PING, SUBSCRIBE of ZMTP 3.1) are handed to `onCommand`.
 */
export class ZmtpConnection {
  private buf: Buffer = Buffer.alloc(0);
  private greeted = false;
  private ready = false;
  private parts: Buffer[] = [];
  peerType = '';

  constructor(
    readonly socket: Socket,
    type: SocketType,
    private readonly onReady: () => void,
    private readonly onMessage: (parts: Buffer[]) => void,
    private readonly onCommand: (name: string, body: Buffer) => void = () => undefined,
  ) {
    socket.setNoDelay(true);
    socket.write(greeting());
    socket.write(readyCommand(type));
    socket.on('data', (d: Buffer) => this.feed(d));
  }

  send(parts: readonly Uint8Array[]): void {
    if (this.ready && !this.socket.destroyed) this.socket.write(encodeMessage(parts));
  }

  private fail(reason: string): void {
    this.socket.destroy(new Error(`zmtp: ${reason}`));
  }

  private feed(d: Buffer): void {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
    if (!this.greeted) {
      if (this.buf.length < GREETING_SIZE) return;
      if (this.buf[0] !== 0xff || this.buf[9] !== 0x7f) return this.fail('not a ZMTP peer');
      if (this.buf[10] < 3) return this.fail(`unsupported ZMTP version ${this.buf[10]}`);
      const mechanism = this.buf.subarray(12, 32).toString('ascii').replace(/\0+$/, '');
      if (mechanism !== 'NULL') return this.fail(`unsupported security mechanism ${mechanism}`);
      this.greeted = true;
      this.buf = this.buf.subarray(GREETING_SIZE);
    }
    for (;;) {
      if (this.buf.length < 2) return;
      const flags = this.buf[0];
      const long = (flags & FLAG_LONG) !== 0;
      const headSize = long ? 9 : 2;
      if (this.buf.length < headSize) return;
      const size = long ? Number(this.buf.readBigUInt64BE(1)) : this.buf[1];
      if (this.buf.length < headSize + size) return;
      const body = Buffer.from(this.buf.subarray(headSize, headSize + size));
      this.buf = this.buf.subarray(headSize + size);
      if (flags & FLAG_COMMAND) this.command(body);
      else if (this.ready) {
        this.parts.push(body);
        if (!(flags & FLAG_MORE)) {
          const parts = this.parts;
          this.parts = [];
          this.onMessage(parts);
        }
      }
      if (this.socket.destroyed) return;
    }
  }

  private command(body: Buffer): void {
    const nameLen = body[0];
    const name = body.subarray(1, 1 + nameLen).toString('ascii');
    const rest = body.subarray(1 + nameLen);
    if (name === 'READY' && !this.ready) {
      let o = 0;
      while (o < rest.length) {
        const pl = rest[o++];
        const prop = rest.subarray(o, o + pl).toString('ascii');
        o += pl;
        const vl = rest.readUInt32BE(o);
        o += 4;
        if (prop.toLowerCase() === 'socket-type') this.peerType = rest.subarray(o, o + vl).toString('ascii');
        o += vl;
      }
      this.ready = true;
      this.onReady();
      return;
    }
    if (name === 'ERROR') return this.fail(`peer error ${rest.subarray(1).toString('utf8')}`);
    this.onCommand(name, rest);
  }
}

/** A PUB socket bound to `host:port`: every message goes to each peer subscribed to a prefix of its first frame. */
export class ZmtpPublisher {
  private server: Server | undefined;
  private readonly peers = new Map<ZmtpConnection, Buffer[]>();

  async bind(host: string, port: number): Promise<void> {
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      const conn: ZmtpConnection = new ZmtpConnection(
        socket,
        'PUB',
        () => this.peers.set(conn, []),
        (parts) => this.subscription(conn, parts[0]),
        (name, body) => {
          if (name === 'SUBSCRIBE') this.subscription(conn, Buffer.concat([Buffer.from([1]), body]));
          else if (name === 'CANCEL') this.subscription(conn, Buffer.concat([Buffer.from([0]), body]));
        },
      );
      socket.on('close', () => this.peers.delete(conn));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  private subscription(conn: ZmtpConnection, msg: Buffer | undefined): void {
    const subs = this.peers.get(conn);
    if (!subs || !msg || msg.length === 0) return;
    const topic = msg.subarray(1);
    if (msg[0] === 1) subs.push(topic);
    else if (msg[0] === 0) {
      const i = subs.findIndex((s) => s.equals(topic));
      if (i >= 0) subs.splice(i, 1);
    }
  }

  /** Number of peers subscribed to something (tests wait for their subscriber). */
  get subscribers(): number {
    let n = 0;
    for (const subs of this.peers.values()) if (subs.length > 0) n++;
    return n;
  }

  send(parts: readonly Uint8Array[]): void {
    const first = Buffer.from(parts[0] ?? new Uint8Array(0));
    let wire: Buffer | undefined;
    for (const [conn, subs] of this.peers) {
      if (!subs.some((s) => first.subarray(0, s.length).equals(s))) continue;
      wire ??= encodeMessage(parts);
      if (!conn.socket.destroyed) conn.socket.write(wire);
    }
  }

  async close(): Promise<void> {
    for (const conn of this.peers.keys()) conn.socket.destroy();
    this.peers.clear();
    const s = this.server;
    this.server = undefined;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

/**
 * A SUB socket connected to `host:port`, subscribed to one prefix; it reconnects every second after a loss, as
 * libzmq does, and reports each loss once.
 */
export class ZmtpSubscriber {
  private socket: Socket | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly topic: Uint8Array,
    private readonly onMessage: (parts: Buffer[]) => void,
    private readonly onLost: (err: Error) => void,
  ) {}

  /** Resolves once the first connection is ready, rejects when it cannot be made. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => this.open(resolve, reject));
  }

  private open(resolve?: () => void, reject?: (e: Error) => void): void {
    if (this.closed) return;
    const socket = connect(this.port, this.host);
    this.socket = socket;
    let up = false;
    socket.on('connect', () => {
      new ZmtpConnection(
        socket,
        'SUB',
        () => {
          up = true;
          socket.write(encodeMessage([Buffer.concat([Buffer.from([1]), this.topic])]));
          resolve?.();
        },
        this.onMessage,
      );
    });
    socket.on('error', (e) => {
      if (!up && reject) reject(e);
    });
    socket.on('close', () => {
      if (this.closed) return;
      if (up) this.onLost(new Error(`zmq connection to ${this.host}:${this.port} lost`));
      if (up || !reject) this.timer = setTimeout(() => this.open(), 1000);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.socket?.destroy();
    this.socket = undefined;
  }
}

/** `tcp://host:port` → host and port. */
export function tcpEndpoint(server: string): { host: string; port: number } {
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:]+):(\d+)$/.exec(server.trim());
  if (!m) throw new Error(`unsupported zmq server ${server}: only tcp://host:port is supported`);
  const host = m[1].replace(/^\[|\]$/g, '');
  return { host: host === '*' ? '0.0.0.0' : host, port: Number(m[2]) };
}
