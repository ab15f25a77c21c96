/**
 * The QoS 0 PUBLISH receive path of the mqtt source (docs/runtime.md §2.5). MQTT.js hands each incoming packet through
 * a userland Writable, a buffer list, a packet object, a tick of its own and two events; measured through the broker
 * this cost about a fifth of a rule's CPU per message. A QoS 0 PUBLISH carries no state to keep (no id, no
 * acknowledgement), so the bytes the socket reads are looked at first: complete QoS 0 PUBLISH packets go straight to
 * the connection's dispatcher, every other packet (CONNACK, SUBACK, QoS 1 and 2 PUBLISH, PINGRESP …) and everything
 * after it in the same read goes to MQTT.js as it came, so the order of messages is kept. MQTT.js keeps the session:
 * connect, subscriptions, acknowledgements, keep-alive, reconnects (each new socket gets the same tap).
 *
 * The tap is used only while MQTT.js has handled every packet it was given, and only while the socket is flowing with
 * nothing buffered: a connection held back by a full rule (`pause()`) buffers its reads as before.
 */
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { MqttClient } from 'mqtt';

/** a QoS 0 PUBLISH (type 3, QoS bits 0), whatever its DUP and RETAIN flags */
const PUBLISH_QOS0_MASK = 0xf6;
const PUBLISH_QOS0 = 0x30;
/** the place value of the fourth and last byte of a remaining length */
const MAX_FACTOR = 128 ** 3;

export type PublishHandler = (topic: string, payload: Buffer) => void;

type StreamBuilder = (client: MqttClient) => Duplex;

/**
 * Connects `client` (created with `manualConnect: true`) with the tap on every socket it opens. Returns false, and
 * connects without it, when this MQTT.js does not build its streams the way the tap expects.
 */
export function connectWithPublishTap(client: MqttClient, onPublish: PublishHandler): boolean {
  const internals = client as unknown as { streamBuilder?: StreamBuilder };
  const build = internals.streamBuilder;
  if (typeof build !== 'function') {
    client.connect();
    return false;
  }
  let current: Tap | undefined;
  // every packet MQTT.js handles passes here first, in order: the tap knows when MQTT.js has caught up
  client.on('packetreceive', () => {
    if (current !== undefined) current.handled++;
  });
  internals.streamBuilder = (c) => {
    const stream = build(c);
    current = stream instanceof Socket ? new Tap(stream, c, onPublish) : undefined;
    return stream;
  };
  client.connect();
  return true;
}

/** Reads of one socket: complete QoS 0 PUBLISH packets to the handler, the rest to MQTT.js through `push`. */
class Tap {
  /** packets given to MQTT.js, and packets it has handled so far */
  handedOver = 0;
  handled = 0;
  /** bytes of a packet not yet complete, and their total */
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** the length of the packet `partial` starts, once its header has arrived (-1 before) */
  private partialNeed = -1;
  /** a malformed length was seen: everything goes to MQTT.js, whose parser reports it */
  private passThrough = false;
  private readonly push: (chunk: unknown, encoding?: BufferEncoding) => boolean;

  constructor(
    private readonly socket: Socket,
    private readonly client: MqttClient,
    private readonly onPublish: PublishHandler,
  ) {
    this.push = socket.push.bind(socket);
    socket.push = (chunk: unknown, encoding?: BufferEncoding) => this.read(chunk, encoding);
  }

  private read(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (!Buffer.isBuffer(chunk) || this.passThrough) return this.handOver(chunk, encoding);
    let buf: Buffer = chunk;
    if (this.partial.length > 0) {
      this.partial.push(chunk);
      this.partialBytes += chunk.length;
      if (this.partialNeed >= 0 && this.partialBytes < this.partialNeed) return true;
      buf = Buffer.concat(this.partial, this.partialBytes);
      this.partial = [];
      this.partialBytes = 0;
      this.partialNeed = -1;
    }
    // MQTT.js still has packets to handle, or the socket is held back: it all goes the usual way, in order
    const direct =
      this.handled >= this.handedOver &&
      this.client.connected &&
      !this.socket.isPaused() &&
      this.socket.readableLength === 0;
    let i = 0;
    let slowFrom = -1;
    const n = buf.length;
    while (i < n) {
      // remaining length: 1 to 4 bytes of 7 bits, least significant first
      let at = i + 1;
      let length = 0;
      let factor = 1;
      let digit = 0x80;
      while ((digit & 0x80) !== 0 && factor <= MAX_FACTOR && at < n) {
        digit = buf[at++];
        length += (digit & 0x7f) * factor;
        factor *= 128;
      }
      if ((digit & 0x80) !== 0) {
        if (at < n) {
          // a fifth length byte: not MQTT. MQTT.js's parser fails the connection with its own error
          this.passThrough = true;
          return this.handOver(buf.subarray(slowFrom < 0 ? i : slowFrom), encoding);
        }
        break; // the length field itself is cut: wait for the next read
      }
      const end = at + length;
      if (end > n) {
        this.partialNeed = end - i;
        break;
      }
      if (direct && slowFrom < 0 && (buf[i] & PUBLISH_QOS0_MASK) === PUBLISH_QOS0 && length >= 2) {
        const topicEnd = at + 2 + ((buf[at] << 8) | buf[at + 1]);
        if (topicEnd <= end) {
          this.onPublish(buf.toString('utf8', at + 2, topicEnd), buf.subarray(topicEnd, end));
          i = end;
          continue;
        }
      }
      if (slowFrom < 0) slowFrom = i;
      this.handedOver++;
      i = end;
    }
    if (i < n) {
      // every read gets a buffer of its own (the payloads handed on keep theirs too): the rest is kept as it is
      this.partial.push(buf.subarray(i));
      this.partialBytes = n - i;
    }
    return slowFrom < 0 ? true : this.handOver(buf.subarray(slowFrom, i), encoding);
  }

  private handOver(chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk === null && this.partial.length > 0) {
      // the connection ends with a packet cut short: MQTT.js sees what arrived, as it would have
      const rest = Buffer.concat(this.partial, this.partialBytes);
      this.partial = [];
      this.partialBytes = 0;
      this.push(rest);
    }
    return this.push(chunk, encoding);
  }
}
