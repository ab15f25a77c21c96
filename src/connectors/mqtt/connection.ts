/**
 * Pooled MQTT connections over MQTT.js (docs/runtime.md §1.8): the mqtt and edgex connectors whose connection settings
 * are equal (server, client id, credentials, protocol version, TLS) share one client, which carries every
 * subscription to that broker and is closed when its last user leaves. Clients reconnect on their own and
 * re-subscribe; a rule is never lost to a broker restart.
 */
import { TurnBatch } from '../../core/turn-batch.js';
import { randomUUID } from 'node:crypto';
import type { IClientOptions, MqttClient } from 'mqtt';
import { lazyModule } from '../../core/lazy.js';
import type { Delivery, Props } from '../../contracts/index.js';
import type { ConfKeys } from '../confkeys.js';
import { propInt, propString } from '../props.js';
import { tlsSettings } from '../tls.js';
import { TopicTrie } from '../topictrie.js';
import { recoverable } from '../../contracts/failures.js';
import { HeldAcks } from './acks.js';
import { qos0Publish, writeCorked } from './publish.js';
import { connectWithPublishTap } from './receive.js';
import { DEFAULT_MAX_INFLIGHT, PublishWindow } from './window.js';
import type { MqttSessionLedger, SessionSettings } from './sessions.js';

export type QoS = 0 | 1 | 2;

/**
 * MQTT.js, imported by the mqtt and edgex families when they load (connectors/declaration.ts `load`): a rule worker
 * that runs no MQTT rule never holds it.
 */
const mqttClientLibrary = lazyModule('the MQTT client library', () => import('mqtt'));
export const loadMqttClient = mqttClientLibrary.load;

/** bytes a connection's socket may hold unsent before QoS 0 publishers wait for it to drain */
const SOCKET_BUDGET_BYTES = 8 * 1024 * 1024;
/** metadata `qos` values (ints are bigint), made once */
export const QOS_INT: readonly bigint[] = [0n, 1n, 2n];
const CONNECT_TIMEOUT_MS = 5000;
/** Longest graceful disconnect before the socket is destroyed. */
const END_GRACE_MS = 3000;
const RECONNECT_PERIOD_MS = 1000;

export interface MqttSettings extends SessionSettings {
  /** a persistent session (`clean: false`) whose QoS 1 and 2 acknowledgements wait for the rule's checkpoint */
  persistent?: boolean;
  /** QoS ≥ 1 publishes kept unacknowledged at most (`maxInflight`, default {@link DEFAULT_MAX_INFLIGHT}) */
  maxInflight?: number;
}

/** Resolves a `connectionSelector` and reads the connection settings; throws with the offending property. */
export function mqttSettings(props: Props, confKeys: ConfKeys): MqttSettings {
  let p = props;
  const selector = propString(props, 'connectionSelector');
  if (selector) {
    const dot = selector.indexOf('.');
    const type = dot < 0 ? selector : selector.slice(0, dot);
    const key = dot < 0 ? '' : selector.slice(dot + 1);
    const conn = type === 'mqtt' ? confKeys.connectionProps('mqtt', key) : undefined;
    if (!conn) throw new Error(`connection selector ${selector} is not found`);
    // the shared connection is defined by the connection config alone: the user's own broker keys do not apply
    p = conn;
  }
  const server = propString(p, 'server', '');
  if (server === '') throw new Error('missing server property');
  const version = propString(p, 'protocolVersion', '3.1.1');
  let protocolVersion: 3 | 4;
  if (version === '3.1') protocolVersion = 3;
  else if (version === '3.1.1' || version === '4') protocolVersion = 4;
  else throw new Error(`unsupported protocol version ${version}`);
  const s: MqttSettings = { server, protocolVersion };
  const clientId = propString(p, 'clientid');
  if (clientId) s.clientId = clientId;
  const username = propString(p, 'username');
  if (username) s.username = username;
  const password = propString(p, 'password');
  if (password) s.password = password.trim();
  const tls = tlsSettings(p);
  if (tls) s.tls = tls;
  const maxInflight = propInt(p, 'maxInflight', DEFAULT_MAX_INFLIGHT);
  if (!Number.isInteger(maxInflight) || maxInflight < 1 || maxInflight > 65535)
    throw new Error(`invalid maxInflight ${maxInflight}: it must be an integer from 1 to 65535`);
  if (maxInflight !== DEFAULT_MAX_INFLIGHT) s.maxInflight = maxInflight;
  return s;
}

function noTrace(): void {}

function clientOptions(s: MqttSettings): IClientOptions {
  const o: IClientOptions = {
    clientId: s.clientId ?? `eddy-${randomUUID()}`,
    protocolVersion: s.protocolVersion,
    protocolId: s.protocolVersion === 3 ? 'MQIsdp' : 'MQTT',
    clean: !s.persistent,
    reconnectPeriod: RECONNECT_PERIOD_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    resubscribe: true,
    // offline QoS 0 publishes would wait for the reconnect; the sink's cache does the waiting instead
    queueQoSZero: false,
    // mqtt-packet otherwise fills a table of 65,536 two-byte buffers on the first packet written: 6 MB of heap in each
    // thread with a client (the main thread and every rule worker), to save one small allocation per packet
    writeCache: false,
  };
  // MQTT.js traces every packet through `debug`, whose enabled check costs a few percent of a busy connection's CPU:
  // skipped unless tracing is asked for
  if (!process.env.DEBUG) o.log = noTrace;
  if (s.username) o.username = s.username;
  // MQTT 3.1.1 forbids a password without a user name (the broker drops such a connection); eKuiper's client leaves it out
  if (s.username && s.password) o.password = s.password;
  if (s.tls) {
    o.rejectUnauthorized = s.tls.rejectUnauthorized;
    if (s.tls.cert) o.cert = s.tls.cert;
    if (s.tls.key) o.key = s.tls.key;
    if (s.tls.ca) o.ca = s.tls.ca;
    // MQTT.js hands its options on to tls.connect, which reads minVersion
    if (s.tls.minVersion) (o as IClientOptions & { minVersion?: string }).minVersion = s.tls.minVersion;
  }
  return o;
}

function poolKey(s: MqttSettings): string {
  const tls = s.tls
    ? [
        s.tls.rejectUnauthorized,
        s.tls.minVersion,
        s.tls.cert?.toString('base64'),
        s.tls.key?.toString('base64'),
        s.tls.ca?.toString('base64'),
      ]
    : null;
  return JSON.stringify([
    s.server,
    s.clientId ?? '',
    s.username ?? '',
    s.password ?? '',
    s.protocolVersion,
    tls,
    s.persistent === true,
    s.maxInflight ?? DEFAULT_MAX_INFLIGHT,
  ]);
}

/** A broker URL MQTT.js understands (`tcp://` and `ssl://` are accepted as they are). */
function brokerUrl(server: string): string {
  return /^[a-z]+:\/\//i.test(server) ? server : `tcp://${server}`;
}

/** `delivery` is set on persistent sessions for QoS 1 and 2 messages: hold it to delay the broker's acknowledgement. */
export type MqttMessageHandler = (
  topic: string,
  payload: Buffer,
  qos: number,
  messageId: number,
  delivery?: Delivery,
) => void;
export type MqttStatusHandler = (connected: boolean, err?: Error) => void;

interface PendingSubscribe {
  wire: string;
  qos: QoS;
  done: (err?: Error) => void;
}

interface Subscription {
  qos: QoS;
  handlers: Set<MqttMessageHandler>;
  /** the broker's SUBACK of the last SUBSCRIBE sent for this filter */
  acked: Promise<void>;
}

/** One shared broker connection, reference-counted by the pool. */
export class MqttConn {
  readonly client: MqttClient;
  refs = 0;
  private readonly subs = new Map<string, Subscription>();
  /** broker subscriptions asked for and not sent yet, sent together by {@link flushSubscribes} */
  private readonly pendingSubs = new TurnBatch<PendingSubscribe>((batch) => this.flushSubscribes(batch));
  /** the same subscriptions by filter levels: dispatch costs O(topic levels), not O(subscriptions) */
  private readonly trie = new TopicTrie<Subscription>();
  /** the message being dispatched, read by {@link deliver} (no closure per message) */
  private inTopic = '';
  private inPayload: Buffer = Buffer.alloc(0);
  private inQos = 0;
  private inMessageId = 0;
  private inDelivery: Delivery | undefined;
  private readonly deliver = (sub: Subscription): void => {
    for (const h of sub.handlers) h(this.inTopic, this.inPayload, this.inQos, this.inMessageId, this.inDelivery);
  };
  /** sources holding back this connection's input (back-pressure): the socket is not read while any does */
  private readonly holders = new Set<object>();
  /** one connect wait shared by every caller, so that a thousand rules starting at once add no listeners */
  private connecting: Promise<void> | undefined;
  private readonly statusHandlers = new Set<MqttStatusHandler>();
  private lastError: Error | undefined;
  /** QoS ≥ 1 publishes, within the broker's receive window */
  private readonly window: PublishWindow;
  private drainWait: Promise<void> | undefined;
  /** QoS 0 PUBLISH packets are read off the socket here rather than by MQTT.js (`mqtt-receive.ts`) */
  tapped = false;

  constructor(
    readonly key: string,
    readonly settings: MqttSettings,
    private readonly onEmpty: (conn: MqttConn) => void,
  ) {
    // a persistent session holds its acknowledgements through MQTT.js's message hook: every packet goes its way
    const tapped = !settings.persistent;
    const options = clientOptions(settings);
    if (tapped) options.manualConnect = true;
    this.client = mqttClientLibrary.get().default.connect(brokerUrl(settings.server), options);
    this.window = new PublishWindow(this.client, settings.maxInflight ?? DEFAULT_MAX_INFLIGHT, settings.server);
    let acks: HeldAcks | undefined;
    try {
      acks = settings.persistent ? new HeldAcks(this.client) : undefined;
    } catch (err) {
      this.client.end(true);
      throw err;
    }
    this.client.on('message', (topic, payload, packet) => {
      const delivery =
        acks !== undefined && packet.qos !== 0 && packet.messageId !== undefined
          ? acks.begin(packet.messageId, packet.qos === 1 ? 1 : 2)
          : undefined;
      this.dispatch(topic, payload, packet.qos, packet.messageId ?? 0, delivery);
      // the dispatcher's own hold: the message is acknowledged at once unless a handler holds it
      delivery?.release();
    });
    if (tapped)
      this.tapped = connectWithPublishTap(this.client, (topic, payload) => this.dispatch(topic, payload, 0, 0));
    this.client.on('connect', () => {
      this.lastError = undefined;
      // publishes kept while offline were just sent again: their time to be acknowledged starts now
      this.window.reconnected();
      // a new socket after a reconnect: still held back
      if (this.holders.size > 0) this.client.stream.pause();
      for (const h of this.statusHandlers) h(true);
    });
    this.client.on('error', (err) => {
      this.lastError = err;
    });
    this.client.on('close', () => {
      const err = new Error(
        `mqtt connection to ${settings.server} lost${this.lastError ? `: ${this.lastError.message}` : ''}`,
      );
      this.window.disconnected();
      for (const h of this.statusHandlers) h(false, err);
    });
  }

  /** Hands one message to the handlers of every subscription its topic matches. */
  private dispatch(topic: string, payload: Buffer, qos: number, messageId: number, delivery?: Delivery): void {
    this.inTopic = topic;
    this.inPayload = payload;
    this.inQos = qos;
    this.inMessageId = messageId;
    this.inDelivery = delivery;
    this.trie.match(topic, this.deliver);
    this.inDelivery = undefined;
  }

  get connected(): boolean {
    return this.client.connected;
  }

  /** QoS ≥ 1 publishes sent and not acknowledged yet (at most the window, `maxInflight`) */
  get unacknowledged(): number {
    return this.window.sent;
  }

  /**
   * Stops reading the socket until every holder has released it: unacknowledged QoS ≥ 1 messages wait at the
   * broker (and so does every other subscription of the connection, as they share its socket).
   */
  holdReading(holder: object): void {
    this.holders.add(holder);
    if (this.holders.size === 1) this.client.stream?.pause();
  }

  releaseReading(holder: object): void {
    if (!this.holders.delete(holder) || this.holders.size > 0) return;
    this.client.stream?.resume();
  }

  /** Resolves once connected; rejects when the first attempt fails or takes more than 5 s. */
  waitConnected(): Promise<void> {
    if (this.client.connected) return Promise.resolve();
    this.connecting ??= new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        this.connecting = undefined;
        clearTimeout(timer);
        this.client.off('connect', onConnect);
        this.client.off('close', onClose);
        this.client.off('error', onError);
        if (err) reject(err);
        else resolve();
      };
      const onConnect = () => done();
      const onError = (err: Error) => done(err);
      const onClose = () => done(this.lastError ?? new Error('connection closed'));
      const timer = setTimeout(() => done(new Error('connection timed out')), CONNECT_TIMEOUT_MS);
      this.client.on('connect', onConnect);
      this.client.on('close', onClose);
      this.client.on('error', onError);
    });
    return this.connecting;
  }

  onStatus(h: MqttStatusHandler): () => void {
    this.statusHandlers.add(h);
    return () => this.statusHandlers.delete(h);
  }

  /**
   * Adds a handler for `filter`; the broker subscription is made once per filter with the highest QoS asked. With
   * `shareGroup` the broker is asked for the shared subscription
   * `$share/<group>/<filter>` (it sends each message to one member of the group), while messages are still matched
   * against `filter` (they carry their own topic).
   */
  subscribe(filter: string, qos: QoS, handler: MqttMessageHandler, shareGroup?: string): Promise<() => void> {
    const wire = shareGroup === undefined ? filter : `$share/${shareGroup}/${filter}`;
    let sub = this.subs.get(filter);
    const fresh = !sub;
    if (!sub) {
      this.subs.set(filter, (sub = { qos, handlers: new Set(), acked: Promise.resolve() }));
      this.trie.add(filter, sub);
    }
    sub.handlers.add(handler);
    const unsubscribe = () => {
      const s = this.subs.get(filter);
      if (!s) return;
      s.handlers.delete(handler);
      if (s.handlers.size === 0) {
        this.subs.delete(filter);
        this.trie.delete(filter, s);
        if (!this.client.disconnecting) this.client.unsubscribe(wire, () => undefined);
      }
    };
    // a second subscriber of a filter whose SUBACK has not come yet waits for it too: the broker routes to the
    // filter only from then on, and the rule's start answers only once it does (docs/runtime.md §1.3)
    if (!fresh && sub.qos >= qos)
      return sub.acked.then(
        () => unsubscribe,
        (err: unknown) => {
          unsubscribe();
          throw err;
        },
      );
    sub.qos = Math.max(sub.qos, qos) as QoS;
    const acked = new Promise<void>((resolve, reject) => {
      // sent at the end of this turn of the event loop: the rules a worker opens in one turn (one message each, or
      // one batch) subscribe in one packet; a rule's start still answers only once its SUBACK came (acked below)
      this.pendingSubs.add({ wire, qos: sub.qos, done: (err) => (err ? reject(err) : resolve()) });
    });
    sub.acked = acked;
    acked.catch(() => undefined);
    return acked.then(
      () => unsubscribe,
      (err: unknown) => {
        unsubscribe();
        throw err;
      },
    );
  }

  /**
   * Sends the subscriptions asked for during one turn of the event loop as one SUBSCRIBE packet: creating or
   * restoring many rules on one connection sent a packet, and waited for an acknowledgement, per rule.
   */
  private flushSubscribes(batch: PendingSubscribe[]): void {
    const alone = (b: PendingSubscribe) =>
      this.client.subscribe(b.wire, { qos: b.qos }, (err) => b.done(err ?? undefined));
    if (batch.length === 1) return void alone(batch[0]);
    const topics: Record<string, { qos: QoS }> = {};
    for (const b of batch) topics[b.wire] = { qos: Math.max(topics[b.wire]?.qos ?? 0, b.qos) as QoS };
    this.client.subscribe(topics, (err) => {
      if (!err) for (const b of batch) b.done();
      // the broker refused one filter of the packet (or the packet failed): each is asked again on its own, so that
      // only the caller of a refused filter sees the refusal
      else for (const b of batch) alone(b);
    });
  }

  /**
   * Publishes; at QoS ≥ 1 resolves once acknowledged, within the broker's receive window ({@link PublishWindow}), and
   * rejects with a recoverable error when not acknowledged within 5 s of being sent. While the broker is away a
   * QoS ≥ 1 publish with `keepOffline` waits until it is back; others are rejected (a sink with a failure cache keeps
   * them there instead). Answers `undefined` when the packet was written at once (QoS 0 while the socket keeps up):
   * no promise per message.
   */
  publish(
    topic: string,
    payload: Uint8Array,
    qos: QoS,
    retain: boolean,
    keepOffline = false,
  ): Promise<void> | undefined {
    if (!this.client.connected && (qos === 0 || !keepOffline)) {
      return Promise.reject(recoverable(new Error(`mqtt client to ${this.settings.server} is not connected`)));
    }
    const buf = Buffer.isBuffer(payload)
      ? payload
      : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
    if (qos === 0) {
      // framed here and written to the socket (or its buffer) at once, in call order: no callback, no promise while the
      // socket keeps up; past the budget every caller waits for the one next 'drain'
      if (this.client.disconnecting) {
        return Promise.reject(recoverable(new Error(`mqtt client to ${this.settings.server} is disconnecting`)));
      }
      writeCorked(this.client.stream, qos0Publish(topic, buf, retain));
      return this.needsDrain() ? this.drained() : undefined;
    }
    return this.window.publish(topic, buf, qos, retain, keepOffline);
  }

  /**
   * Whether publishers should wait for the socket: only past a budget well above the stream's high-water mark, so
   * that a broker pausing for a moment does not turn into waiting sinks, full buffers and drops.
   */
  private needsDrain(): boolean {
    // past the budget the stream needs a drain: one getter per publish
    const stream = this.client.stream as { writableLength?: number } | undefined;
    return (stream?.writableLength ?? 0) > SOCKET_BUDGET_BYTES;
  }

  /** Resolves at the socket's next 'drain' (or close): one listener however many publishes wait. */
  private drained(): Promise<void> {
    if (this.drainWait) return this.drainWait;
    const stream = this.client.stream;
    this.drainWait = new Promise<void>((resolve) => {
      const done = () => {
        stream.off('drain', done);
        stream.off('close', done);
        this.drainWait = undefined;
        resolve();
      };
      stream.on('drain', done);
      stream.on('close', done);
    });
    return this.drainWait;
  }

  release(): void {
    this.refs--;
    if (this.refs <= 0) this.onEmpty(this);
  }

  /**
   * Disconnects gracefully when connected: publishes still in flight complete and bytes still buffered reach the
   * broker before DISCONNECT (a stopped rule loses nothing its sink sent); after {@link END_GRACE_MS} the socket is
   * destroyed. Publishes still unanswered then fail.
   */
  end(): Promise<void> {
    const failPending = () => this.window.failAll();
    // a persistent session's unacknowledged deliveries must stay unacknowledged: the broker resends them at the next
    // connect, so the connection is cut rather than drained
    if (!this.client.connected || this.settings.persistent) {
      failPending();
      return new Promise((resolve) => this.client.end(true, {}, () => resolve()));
    }
    return new Promise((resolve) => {
      let ended = false;
      const done = () => {
        if (ended) return;
        ended = true;
        clearTimeout(grace);
        failPending();
        resolve();
      };
      // MQTT.js waits for every outstanding packet (a SUBACK that never comes, too): give up on it in time
      const grace = setTimeout(() => {
        this.client.stream?.destroy();
        done();
      }, END_GRACE_MS);
      this.client.end(false, {}, done);
    });
  }
}

/** Pooled MQTT connections of one server. */
export class MqttPool {
  private readonly conns = new Map<string, MqttConn>();
  private readonly ending = new Set<Promise<void>>();

  /** `sessions`: where the persistent sessions of rules are remembered (their deletion ends them) */
  constructor(readonly sessions?: MqttSessionLedger) {}

  /** Makes the broker forget the persistent sessions a deleted rule opened (a clean connect under each id). */
  async endSessions(ruleId: string): Promise<void> {
    await this.sessions?.forget(ruleId, async (s) => {
      // a rule created again under the same id may already use the session: it stays
      for (const c of this.conns.values()) if (c.settings.clientId === s.clientId) return;
      const conn = new MqttConn('end-session', { ...s, persistent: false }, () => undefined);
      try {
        await conn.waitConnected();
      } finally {
        await conn.end();
      }
    });
  }

  /** A shared connection for these settings (created on first use). Call `release()` when done. */
  acquire(settings: MqttSettings): MqttConn {
    const key = poolKey(settings);
    let conn = this.conns.get(key);
    if (!conn) {
      conn = new MqttConn(key, settings, (c) => {
        if (this.conns.get(c.key) === c) this.conns.delete(c.key);
        const p = c.end().finally(() => this.ending.delete(p));
        this.ending.add(p);
      });
      this.conns.set(key, conn);
    }
    conn.refs++;
    return conn;
  }

  /** Number of open broker connections (for tests and diagnostics). */
  get size(): number {
    return this.conns.size;
  }

  async close(): Promise<void> {
    const all = [...this.conns.values()];
    this.conns.clear();
    await Promise.all([...all.map((c) => c.end()), ...this.ending]);
  }
}
