/**
 * QoS 1 and 2 publishes of one connection, kept within the broker's receive window (docs/runtime.md §3.6). A broker
 * takes only so many unacknowledged QoS ≥ 1 publishes from a client (Mosquitto's `max_inflight_messages`, 20 by
 * default); a 3.1.1 client cannot be told when it sends more, and Mosquitto 2 drops the QoS 2 excess while completing
 * its handshake, so the sender counts them as sent. MQTT.js sets no limit of its own: publishes beyond `limit` wait
 * here, in call order, until an acknowledgement (PUBACK, or PUBCOMP at QoS 2) frees a place. A publish counts as
 * sent only once acknowledged.
 */
import type { MqttClient } from 'mqtt';
import { recoverable } from '../../contracts/failures.js';

/** What Mosquitto accepts by default (`max_inflight_messages`): the sink property `maxInflight` when not set. */
export const DEFAULT_MAX_INFLIGHT = 20;
/** How long a sent publish may wait for its acknowledgement while connected. */
const PUBLISH_TIMEOUT_MS = 5000;

/** One publish sent and not acknowledged yet. */
interface InFlight {
  /** when it fails unless acknowledged (reset at a reconnect, which sends it again) */
  deadline: number;
  /** settled: by its acknowledgement, an error or the timeout, whichever comes first */
  done: boolean;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** One publish waiting for a place in the window. */
interface Waiting {
  topic: string;
  payload: Buffer;
  qos: 1 | 2;
  retain: boolean;
  keepOffline: boolean;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class PublishWindow {
  private readonly inFlight = new Set<InFlight>();
  private readonly waiting: Waiting[] = [];
  private head = 0;
  /** one timer per connection fails the publishes that got no acknowledgement in time */
  private sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: MqttClient,
    /** the most publishes unacknowledged at once */
    readonly limit: number,
    private readonly server: string,
  ) {}

  /** publishes sent and not acknowledged (never more than {@link limit}) */
  get sent(): number {
    return this.inFlight.size;
  }

  /**
   * Publishes at QoS 1 or 2; resolves once acknowledged, rejects with a recoverable error when not acknowledged
   * within 5 s of being sent while connected. While the broker is away a publish with `keepOffline` waits (in
   * MQTT.js's offline queue, or here); one without it is rejected.
   */
  publish(topic: string, payload: Buffer, qos: 1 | 2, retain: boolean, keepOffline: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.inFlight.size < this.limit && this.head === this.waiting.length) {
        this.send(topic, payload, qos, retain, resolve, reject);
      } else this.waiting.push({ topic, payload, qos, retain, keepOffline, resolve, reject });
    });
  }

  /** Connected again: what MQTT.js sends again from its store gets its full time to be acknowledged. */
  reconnected(): void {
    const deadline = Date.now() + PUBLISH_TIMEOUT_MS;
    for (const p of this.inFlight) p.deadline = deadline;
  }

  /** The connection is lost: waiting publishes that must not wait for the broker fail now (a cache keeps them). */
  disconnected(): void {
    if (this.head === this.waiting.length) return;
    const keep: Waiting[] = [];
    for (let i = this.head; i < this.waiting.length; i++) {
      const w = this.waiting[i];
      if (w.keepOffline) keep.push(w);
      else w.reject(recoverable(new Error(`mqtt client to ${this.server} is not connected`)));
    }
    this.waiting.length = 0;
    this.head = 0;
    this.waiting.push(...keep);
  }

  /** The connection is closed for good: everything still waiting or unacknowledged fails. */
  failAll(): void {
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = undefined;
    const err = recoverable(new Error('mqtt connection closed'));
    // the waiting ones first: settling a sent one would send the next
    for (let i = this.head; i < this.waiting.length; i++) this.waiting[i].reject(err);
    this.waiting.length = 0;
    this.head = 0;
    for (const p of [...this.inFlight]) this.settle(p, err);
  }

  private send(
    topic: string,
    payload: Buffer,
    qos: 1 | 2,
    retain: boolean,
    resolve: () => void,
    reject: (err: Error) => void,
  ): void {
    const p: InFlight = { deadline: Date.now() + PUBLISH_TIMEOUT_MS, done: false, resolve, reject };
    this.inFlight.add(p);
    this.armSweep();
    this.client.publish(topic, payload, { qos, retain }, (err) => this.settle(p, err ? recoverable(err) : undefined));
  }

  /** Settles a sent publish once and frees its place for the next waiting one. */
  private settle(p: InFlight, err: Error | undefined): void {
    if (p.done) return;
    p.done = true;
    this.inFlight.delete(p);
    if (err) p.reject(err);
    else p.resolve();
    this.sendWaiting();
  }

  private sendWaiting(): void {
    while (this.inFlight.size < this.limit && this.head < this.waiting.length) {
      const w = this.waiting[this.head++];
      if (!this.client.connected && !w.keepOffline) {
        w.reject(recoverable(new Error(`mqtt client to ${this.server} is not connected`)));
        continue;
      }
      this.send(w.topic, w.payload, w.qos, w.retain, w.resolve, w.reject);
    }
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
  }

  /**
   * One timer per connection, not one per publish (a measurable cost at tens of thousands of messages per second).
   * A publish that timed out leaves the window: a broker that lost it will not acknowledge it.
   */
  private armSweep(): void {
    if (this.sweep) return;
    this.sweep = setInterval(() => {
      // a publish waiting for the broker to come back has no deadline yet
      if (!this.client.connected) return;
      const now = Date.now();
      for (const p of this.inFlight) if (p.deadline <= now) this.settle(p, recoverable(new Error('publish timed out')));
      if (this.inFlight.size === 0 && this.sweep) {
        clearInterval(this.sweep);
        this.sweep = undefined;
      }
    }, 1000);
    this.sweep.unref();
  }
}
