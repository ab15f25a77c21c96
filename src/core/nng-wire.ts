/**
 * The wire of NNG's scalability protocols over a stream socket, shared by the neuron connectors (PAIR,
 * docs/connectors.md neuron) and the portable-plugin data channels (PUSH/PULL, docs/runtime.md §5.3): each side
 * first sends the 8-byte header `00 'S' 'P' 00 <protocol id> 00 00`, then messages framed by a 64-bit big-endian
 * length, which over IPC is preceded by a `0x01` message-type byte.
 */

export const NNG_PROTOCOL = { PAIR: 0x10, REQ: 0x30, REP: 0x31, PUSH: 0x50, PULL: 0x51 } as const;

const HEADER_SIZE = 8;
const IPC_MESSAGE = 0x01;

const PROTOCOL_NAMES = new Map<number, string>(
  Object.entries(NNG_PROTOCOL).map(([name, id]) => [id, name.toLowerCase()]),
);

/** The header a socket of protocol `proto` sends when the connection opens. */
export function nngHeader(proto: number): Buffer {
  const b = Buffer.alloc(HEADER_SIZE);
  b[1] = 0x53; // 'S'
  b[2] = 0x50; // 'P'
  b.writeUInt16BE(proto, 4);
  return b;
}

/** One message as wire bytes. */
export function nngFrame(payload: Uint8Array, ipc: boolean): Buffer {
  const head = Buffer.alloc(ipc ? 9 : 8);
  if (ipc) head[0] = IPC_MESSAGE;
  head.writeBigUInt64BE(BigInt(payload.length), ipc ? 1 : 0);
  return Buffer.concat([head, payload]);
}

/**
 * Reads one connection's incoming bytes: the peer's header, checked against the protocol expected of it, then
 * complete messages. `feed` returns the reason when the peer breaks the protocol (the connection is then of no
 * further use); what the callbacks throw passes through untouched.
 */
export class NngReader {
  private buf: Buffer = Buffer.alloc(0);
  private headerSeen = false;

  constructor(
    private readonly peerProto: number,
    private readonly ipc: boolean,
  ) {}

  /** Takes the next bytes read; `onHandshake` runs once when the header is complete, `onMessage` per message. */
  feed(chunk: Buffer, onMessage: (msg: Buffer) => void, onHandshake?: () => void): Error | undefined {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    if (!this.headerSeen) {
      if (this.buf.length < HEADER_SIZE) return undefined;
      const b = this.buf;
      if (b[0] !== 0 || b[1] !== 0x53 || b[2] !== 0x50 || b.readUInt16BE(4) !== this.peerProto) {
        return new Error(`the peer is not an NNG ${PROTOCOL_NAMES.get(this.peerProto) ?? this.peerProto} socket`);
      }
      this.buf = b.subarray(HEADER_SIZE);
      this.headerSeen = true;
      onHandshake?.();
    }
    const head = this.ipc ? 9 : 8;
    while (this.buf.length >= head) {
      if (this.ipc && this.buf[0] !== IPC_MESSAGE) return new Error('unexpected NNG IPC message type');
      const len = Number(this.buf.readBigUInt64BE(head - 8));
      if (this.buf.length < head + len) return undefined;
      const msg = Buffer.from(this.buf.subarray(head, head + len));
      this.buf = this.buf.subarray(head + len);
      onMessage(msg);
    }
    return undefined;
  }
}
