/**
 * Held acknowledgements of an MQTT persistent session (docs/runtime.md §1.9): a QoS 1 message is acknowledged to the
 * broker (PUBACK) only when every rule that received it has saved the checkpoint covering its effects. Until then
 * the broker keeps it, and delivers it again after a reconnect or a crash (at-least-once; duplicates are possible).
 *
 * MQTT.js reads the next packet only after the previous one's acknowledgement was sent, so the acknowledgement
 * cannot simply be delayed in its `handleMessage` hook: the hook reports the message as handled without the PUBACK,
 * and the PUBACK is written later by this module, on the same connection only (message ids belong to it).
 */
import { createHash } from 'node:crypto';
import type { MqttClient } from 'mqtt';
import type { Delivery } from '../contracts/index.js';

/** The client's packet writer: not part of MQTT.js's typed surface, checked when the hook is installed. */
type PacketWriter = (packet: { cmd: 'puback'; messageId: number }, cb?: () => void) => void;
type HandleMessage = MqttClient['handleMessage'];

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
  /** MQTT.js's callback for the message that reached MAX_HELD: reading resumes when it is called */
  private blocked: ((err: Error) => void) | undefined;

  constructor(private readonly client: MqttClient) {
    const writer = (client as unknown as { _sendPacket?: PacketWriter })._sendPacket;
    if (typeof writer !== 'function') throw new Error('this MQTT.js version cannot hold acknowledgements');
    this.write = writer.bind(client);
    const original: HandleMessage = client.handleMessage.bind(client);
    client.handleMessage = ((packet, callback) => {
      const d = this.current;
      this.current = undefined;
      if (d === undefined || d.settled || packet.qos !== 1 || packet.messageId !== d.messageId) {
        original(packet, callback);
        return;
      }
      d.deferred = true;
      if (++this.held >= MAX_HELD) this.blocked = callback;
      else callback(HELD);
    }) as HandleMessage;
    client.on('connect', () => {
      this.generation++;
      this.held = 0;
      this.unblock();
    });
  }

  /** A delivery for a QoS 1 message about to be dispatched; the dispatcher releases its own hold afterwards. */
  begin(messageId: number): Delivery {
    const d = new HeldDelivery(this, messageId, this.generation);
    this.current = d;
    return d;
  }

  acknowledge(d: HeldDelivery): void {
    if (d.generation !== this.generation) return;
    this.held--;
    if (this.held < MAX_HELD / 2) this.unblock();
    if (this.client.connected) this.write({ cmd: 'puback', messageId: d.messageId });
  }

  private unblock(): void {
    const cb = this.blocked;
    this.blocked = undefined;
    cb?.(HELD);
  }
}
