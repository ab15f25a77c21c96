/**
 * Held acknowledgements of an MQTT persistent session (docs/runtime.md §1.9): a QoS 1 message is acknowledged to the
 * broker (PUBACK), and a QoS 2 message is received (PUBREC), only when every rule that received it has saved the
 * checkpoint covering its effects. Until then the broker keeps it, and delivers it again after a reconnect or a crash
 * (at-least-once; duplicates are possible).
 *
 * MQTT.js reads the next packet only after the previous one's acknowledgement was sent, so the acknowledgement
 * cannot simply be delayed in its hooks: the QoS 1 `handleMessage` hook reports the message as handled without the
 * PUBACK, and the PUBACK is written later by this module, on the same connection only (message ids belong to it).
 *
 * QoS 2: MQTT.js answers a PUBLISH with PUBREC at once and emits the message only on the broker's PUBREL; once the
 * PUBREC is sent the broker never sends that PUBLISH again, so a crash before the checkpoint would lose it. Here the
 * message is dispatched when its PUBLISH arrives (from the `customHandleAcks` hook), the PUBREC MQTT.js then writes is
 * held back until the checkpoint (the packet reader goes on at once), and nothing is kept for the PUBREL, which MQTT.js
 * then answers with PUBCOMP alone.
 */
import { createHash } from 'node:crypto';
import type { IPublishPacket, MqttClient } from 'mqtt';
import type { Delivery } from '../../contracts/index.js';

/** The client's packet writer: not part of MQTT.js's typed surface, checked when the hook is installed. */
type PacketWriter = (packet: { cmd: string; messageId?: number }, cb?: () => void) => void;
type HandleMessage = MqttClient['handleMessage'];
type CustomHandleAcks = NonNullable<MqttClient['options']['customHandleAcks']>;

/** The private members of MQTT.js's client used here, checked when the hooks are installed. */
interface ClientInternals {
  _sendPacket?: PacketWriter;
  _releaseIncomingQoS2Publish?: (messageId: number) => void;
  incomingStore: unknown;
}

/**
 * The store MQTT.js keeps received QoS 2 messages in until their PUBREL: empty, since they were dispatched at their
 * PUBLISH already; a PUBREL finding nothing is answered with PUBCOMP and emits nothing.
 */
const NO_INCOMING_STORE = {
  put(_packet: unknown, cb?: () => void): unknown {
    cb?.();
    return this;
  },
  get(_packet: unknown, cb: (err: Error) => void): unknown {
    cb(new Error('QoS 2 messages are dispatched at their PUBLISH'));
    return this;
  },
  del(_packet: unknown, cb?: () => void): unknown {
    cb?.();
    return this;
  },
  createStream(): never {
    throw new Error('no stored messages');
  },
  close(cb?: () => void): void {
    cb?.();
  },
};

/**
 * Messages held at once per connection. Beyond it MQTT.js is asked to wait before reading on (its `handleMessage`
 * backpressure), so a broker that floods a reconnecting session with its backlog cannot overrun the rule's
 * queues; brokers also limit unacknowledged messages per session (Mosquitto: `max_inflight_messages`, 20).
 */
const MAX_HELD = 256;

/** The error MQTT.js receives from the hook when the PUBACK is left to this module (it only skips the PUBACK). */
const HELD = new Error('acknowledgement held until the checkpoint');

/** A stable client id for a persistent session: the same rule, stream and broker give the same id after a restart. */
export function sessionClientId(parts: readonly string[]): string {
  // MQTT 3.1.1 brokers must accept ids of up to 23 characters
  return `eddy_${createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 18)}`;
}

class HeldDelivery implements Delivery {
  private holders = 1;
  /** the PUBACK is ours to send (the hook ran while holders remained) */
  deferred = false;
  constructor(
    private readonly acks: HeldAcks,
    readonly messageId: number,
    readonly qos: 1 | 2,
    readonly generation: number,
  ) {}

  get settled(): boolean {
    return this.holders === 0;
  }

  hold(): void {
    this.holders++;
  }

  release(): void {
    if (this.holders === 0) return;
    if (--this.holders === 0 && this.deferred) this.acks.acknowledge(this);
  }
}

export class HeldAcks {
  /** incremented on every new connection: acknowledgements of an earlier one are dropped (the broker resends) */
  private generation = 0;
  /** the delivery of the message being dispatched (MQTT.js calls the hook right after the message event) */
  private current: HeldDelivery | undefined;
  private readonly write: PacketWriter;
  /** held messages of the current connection not yet acknowledged */
  private held = 0;
  /** resumes MQTT.js's packet reader, stopped on the message that reached MAX_HELD */
  private blocked: (() => void) | undefined;

  constructor(private readonly client: MqttClient) {
    const internals = client as unknown as ClientInternals;
    const writer = internals._sendPacket;
    if (typeof writer !== 'function') throw new Error('this MQTT.js version cannot hold acknowledgements');
    this.write = writer.bind(client);
    const original: HandleMessage = client.handleMessage.bind(client);
    client.handleMessage = ((packet, callback) => {
      if (packet.qos !== 1) {
        original(packet, callback);
        return;
      }
      const d = this.take(packet.messageId);
      if (d === undefined) original(packet, callback);
      else this.hold(() => callback(HELD));
    }) as HandleMessage;

    // QoS 2: the message is dispatched when its PUBLISH arrives, and the PUBREC MQTT.js writes next may be held
    const handleAcks: CustomHandleAcks = (topic, message, packet: IPublishPacket, callback) => {
      if (packet.qos === 2) client.emit('message', topic, message, packet);
      callback(0);
    };
    client.options.customHandleAcks = handleAcks;
    client.options.incomingStore = NO_INCOMING_STORE as unknown as MqttClient['options']['incomingStore'];
    internals.incomingStore = NO_INCOMING_STORE;
    const release = internals._releaseIncomingQoS2Publish?.bind(client);
    internals._sendPacket = (packet, cb) => {
      if (packet.cmd === 'pubrec' && packet.messageId !== undefined) {
        const d = this.take(packet.messageId);
        if (d !== undefined) {
          // MQTT.js's reader goes on (or waits, beyond MAX_HELD); the PUBREC is written on release
          this.hold(() => cb?.());
          return;
        }
      } else if (packet.cmd === 'pubcomp' && packet.messageId !== undefined) {
        // the store keeps nothing, so MQTT.js's own release on PUBREL never runs: its in-flight id count would grow
        release?.(packet.messageId);
      }
      this.write(packet, cb);
    };

    client.on('connect', () => {
      this.generation++;
      this.held = 0;
      this.unblock();
    });
  }

  /** A delivery for a QoS 1 or 2 message about to be dispatched; the dispatcher releases its own hold afterwards. */
  begin(messageId: number, qos: 1 | 2): Delivery {
    const d = new HeldDelivery(this, messageId, qos, this.generation);
    this.current = d;
    return d;
  }

  /** The delivery of the message just dispatched, when its acknowledgement is still to be held. */
  private take(messageId: number | undefined): HeldDelivery | undefined {
    const d = this.current;
    this.current = undefined;
    if (d === undefined || d.settled || messageId !== d.messageId) return undefined;
    d.deferred = true;
    return d;
  }

  /** Counts a held acknowledgement; `resume` lets MQTT.js read on, now or once enough are released. */
  private hold(resume: () => void): void {
    if (++this.held >= MAX_HELD) this.blocked = resume;
    else resume();
  }

  acknowledge(d: HeldDelivery): void {
    if (d.generation !== this.generation) return;
    this.held--;
    if (this.held < MAX_HELD / 2) this.unblock();
    if (this.client.connected) this.write({ cmd: d.qos === 1 ? 'puback' : 'pubrec', messageId: d.messageId });
  }

  private unblock(): void {
    const resume = this.blocked;
    this.blocked = undefined;
    resume?.();
  }
}
