/**
 * The QoS 0 PUBLISH path of the mqtt sink (docs/runtime.md §3.6). MQTT.js writes each packet as five chunks through
 * its stream machinery, with a closure, two option spreads and a packet object per message; a QoS 0 publish needs
 * none of its state (no message id, no store, no acknowledgement), so the sink frames the packet itself, in one
 * buffer, and writes it to the client's socket. Writes of one turn of the event loop are corked together and leave
 * in one `writev`. Everything else (connect, subscribe, QoS 1 and 2, keep-alive) stays with MQTT.js, which writes
 * each of its packets whole and synchronously, so the two never interleave within a packet.
 */
import type { Writable } from 'node:stream';

/** PUBLISH, QoS 0, without and with the retain flag (fixed header of the MQTT 3.1.1 specification, section 3.3.1) */
const PUBLISH_QOS0 = 0x30;
const PUBLISH_QOS0_RETAIN = 0x31;
/** the largest remaining length MQTT can express (4 bytes of 7 bits) */
const MAX_REMAINING = 268_435_455;

/** Bytes of the variable-length "remaining length" field for `n`. */
function lengthBytes(n: number): number {
  return n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4;
}

/** One QoS 0 PUBLISH packet (MQTT 3.1 and 3.1.1 share this layout). Throws when the packet cannot be framed. */
export function qos0Publish(topic: string, payload: Uint8Array, retain: boolean): Buffer {
  const topicBytes = Buffer.byteLength(topic, 'utf8');
  if (topicBytes > 0xffff) throw new Error(`mqtt topic of ${topicBytes} bytes is longer than 65535 bytes`);
  const remaining = 2 + topicBytes + payload.byteLength;
  if (remaining > MAX_REMAINING) throw new Error(`mqtt message of ${remaining} bytes is too large`);
  const packet = Buffer.allocUnsafe(1 + lengthBytes(remaining) + remaining);
  packet[0] = retain ? PUBLISH_QOS0_RETAIN : PUBLISH_QOS0;
  let at = 1;
  let rest = remaining;
  do {
    let digit = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest > 0) digit |= 0x80;
    packet[at++] = digit;
  } while (rest > 0);
  packet[at++] = topicBytes >> 8;
  packet[at++] = topicBytes & 0xff;
  at += packet.write(topic, at, 'utf8');
  packet.set(payload, at);
  return packet;
}

/** the stream corked by {@link writeCorked} in this turn, uncorked at the next tick */
let corked: Writable | undefined;

function uncork(): void {
  const stream = corked;
  corked = undefined;
  stream?.uncork();
}

/**
 * Writes `chunk`, corking `stream` until the next tick so that every packet written in this turn of the event loop
 * goes out in one system call. Returns what `write` returns (false: past the stream's high-water mark).
 */
export function writeCorked(stream: Writable, chunk: Buffer): boolean {
  if (corked !== stream) {
    if (corked !== undefined) uncork();
    stream.cork();
    corked = stream;
    process.nextTick(uncork);
  }
  return stream.write(chunk);
}
