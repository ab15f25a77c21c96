/**
 * The mqtt source and sink (docs/runtime.md §2.5, §3.6) on the pooled connections of connection.ts: sources and sinks
 * whose connection settings are equal share one client, which carries every subscription to that broker and is
 * closed when its last user leaves.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import {
  disconnected,
  type ConnectionState,
  type ConnectorContext,
  type Props,
  type SourceConnector,
  type SourceEvent,
} from '../../contracts/index.js';
import type { SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { recoverable, transientError } from '../../contracts/failures.js';
import { checkCompression, compress, decompress, type Compression } from '../../core/compression.js';
import type { ConfKeys } from '../confkeys.js';
import { propBool, propInt, propString } from '../props.js';
import { sessionClientId } from './acks.js';
import {
  mqttSettings,
  MqttConn,
  type MqttMessageHandler,
  type MqttPool,
  type MqttSettings,
  type QoS,
  QOS_INT,
} from './connection.js';

function readQos(props: Props): QoS {
  const qos = propInt(props, 'qos', 0);
  if (qos !== 0 && qos !== 1 && qos !== 2) throw new Error(`invalid qos ${qos}, should be 0, 1 or 2`);
  return qos;
}

export class MqttSource implements SourceConnector {
  private topic = '';
  private qos: QoS = 0;
  private settings!: MqttSettings;
  private decompression: Compression | undefined;
  private conn: MqttConn | undefined;
  private cleanup: Array<() => void> = [];

  constructor(
    private readonly pool: MqttPool,
    private readonly confKeys: ConfKeys,
  ) {}

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    try {
      if (!datasource) throw new Error('topic (DATASOURCE) is required');
      this.topic = datasource;
      this.qos = readQos(props);
      this.settings = mqttSettings(props, this.confKeys);
      const dc = propString(props, 'decompression', '');
      if (dc) this.decompression = checkCompression(dc);
    } catch (err) {
      throw new EddyError(ErrorCode.Executor, (err as Error).message);
    }
  }

  async connect(
    ctx: ConnectorContext,
    emit: (ev: SourceEvent) => void,
    onError: (err: Error) => void,
    _onEnd?: () => void,
    onConnection?: (state: ConnectionState) => void,
  ): Promise<void> {
    // at-least-once (rule qos ≥ 1, subscription qos ≥ 1): a persistent session of its own, named after the rule and
    // the connection settings. A configured client id is one of them, not the id itself: a sink or another rule with
    // the same settings would otherwise share (or fight over) that id with a session that must stay this rule's.
    const persistent = ctx.atLeastOnce === true && this.qos >= 1;
    // one instance of a rule run as several (docs/cluster.md §6) shares the topic with the others through the broker,
    // on a connection of its own (a connection shared by two instances would get one share for both)
    const share = ctx.share;
    const sessionParts = [
      ctx.ruleId,
      ctx.streamName ?? '',
      this.topic,
      String(this.qos),
      this.settings.server,
      this.settings.username ?? '',
      this.settings.clientId ?? '',
      ...(share ? [`instance ${share.instance}`] : []),
    ];
    const settings: MqttSettings =
      persistent || share ? { ...this.settings, persistent, clientId: sessionClientId(sessionParts) } : this.settings;
    if (persistent && ctx.ruleId !== '$shared') this.pool.sessions?.remember(ctx.ruleId, settings);
    const conn = this.pool.acquire(settings);
    this.conn = conn;
    try {
      const dc = this.decompression;
      // a persistent session may deliver what it kept as soon as it connects: the handler is in place before that
      const handler: MqttMessageHandler = (topic, payload, qos, messageId, delivery) => {
        let bytes: Uint8Array = payload;
        if (dc) {
          try {
            bytes = decompress(dc, payload);
          } catch (err) {
            onError(transientError(new Error(`decompress error: ${(err as Error).message}`)));
            return;
          }
        }
        const ev: SourceEvent = {
          payload: bytes,
          meta: { topic, qos: QOS_INT[qos] ?? BigInt(qos), messageId: messageId === 0 ? 0n : BigInt(messageId) },
          timestamp: Date.now(),
        };
        if (delivery !== undefined) ev.delivery = delivery;
        emit(ev);
      };
      const subscribed = conn.subscribe(this.topic, this.qos, handler, share?.group);
      subscribed.catch(() => undefined);
      let wasConnected = true;
      try {
        await conn.waitConnected();
      } catch (err) {
        const why = `found error when connecting for ${this.settings.server}: ${(err as Error).message}`;
        if (!onConnection) throw err;
        // the rule runs degraded while MQTT.js tries again every second; the subscription is sent once connected
        // (docs/runtime.md §1.5)
        wasConnected = false;
        ctx.logger.warn('mqtt source %s: %s; still trying', this.topic, why);
        onConnection(disconnected(why));
      }
      // started while the broker was away: a subscription sent offline fails when the next attempt does, so it is
      // made again at each connect until one holds (the same handler: a subscription still pending is not doubled)
      let holding = wasConnected;
      const hold = (attempt: Promise<() => void>) =>
        attempt.then(
          (unsubscribe) => {
            if (this.conn !== conn) unsubscribe();
            else if (!holding) {
              holding = true;
              this.cleanup.push(unsubscribe);
            }
          },
          (err: unknown) => {
            if (this.conn === conn) ctx.logger.warn('mqtt source %s: subscription failed: %s', this.topic, String(err));
          },
        );
      this.cleanup.push(
        conn.onStatus((connected, err) => {
          if (connected && !holding) void hold(conn.subscribe(this.topic, this.qos, handler, share?.group));
          if (!connected) onConnection?.(disconnected(err ?? 'mqtt connection lost'));
          if (!connected && wasConnected) {
            ctx.logger.warn('mqtt source %s: %s; reconnecting', this.topic, err?.message);
            onError(
              Object.assign(transientError(err ?? new Error('mqtt connection lost')), {
                connectionLost: true as const,
              }),
            );
          } else if (connected && !wasConnected) {
            ctx.logger.info('mqtt source %s connected', this.topic);
          }
          if (connected) onConnection?.('connected');
          wasConnected = connected;
        }),
      );
      if (wasConnected) {
        this.cleanup.push(await subscribed);
        onConnection?.('connected');
      } else void hold(subscribed);
    } catch (err) {
      await this.close();
      throw new Error(`found error when connecting for ${this.settings.server}: ${(err as Error).message}`);
    }
  }

  /** QoS ≥ 1: the broker keeps what is not acknowledged, so the source can wait for a full sink */
  canPause(): boolean {
    return this.qos > 0;
  }

  pause(): void {
    this.conn?.holdReading(this);
  }

  resume(): void {
    this.conn?.releaseReading(this);
  }

  async close(): Promise<void> {
    for (const fn of this.cleanup.splice(0)) fn();
    const conn = this.conn;
    this.conn = undefined;
    conn?.releaseReading(this);
    conn?.release();
  }
}

/** The sink's topic, checked: required, without wildcards. */
function sinkTopic(props: Props): string {
  const topic = propString(props, 'topic', '');
  if (topic === '') throw new Error('mqtt sink is missing property topic');
  if (topic.includes('+') || topic.includes('#')) throw new Error("mqtt sink topic shouldn't contain # or +");
  return topic;
}

/** The sink's qos, with eKuiper's sink message. */
function sinkQos(props: Props): QoS {
  const qos = propInt(props, 'qos', 0);
  if (qos !== 0 && qos !== 1 && qos !== 2)
    throw new Error(`invalid qos value ${qos}, the value could be only int 0 or 1 or 2`);
  return qos;
}

export class MqttSink implements SinkConnector {
  private topic = '';
  private resendTopic = '';
  private qos: QoS = 0;
  private retained = false;
  private settings!: MqttSettings;
  private compression: Compression | undefined;
  private conn: MqttConn | undefined;

  constructor(
    private readonly pool: MqttPool,
    private readonly confKeys: ConfKeys,
  ) {}

  provision(_ctx: SinkContext, props: Props): void {
    try {
      // protocolVersion is validated, but eKuiper 1.14's sink always speaks MQTT 3.1.1
      this.settings = { ...mqttSettings(props, this.confKeys), protocolVersion: 4 };
      this.topic = sinkTopic(props);
      this.resendTopic = propString(props, 'resendDestination', '');
      this.qos = sinkQos(props);
      this.retained = propBool(props, 'retained', false);
      const c = propString(props, 'compression', '');
      if (c) {
        try {
          this.compression = checkCompression(c);
        } catch {
          throw new Error(`invalid compression method ${c}`);
        }
      }
    } catch (err) {
      throw new EddyError(ErrorCode.Executor, (err as Error).message);
    }
  }

  async connect(): Promise<void> {
    this.conn = this.pool.acquire(this.settings);
    try {
      await this.conn.waitConnected();
    } catch (err) {
      this.conn.release();
      this.conn = undefined;
      throw new Error(`found error when connecting for ${this.settings.server}: ${(err as Error).message}`);
    }
  }

  /** publishes are written to the client's socket in call order: the next may start before the last is acknowledged */
  readonly pipelined = true;

  // not `async`: a publish written at once settles synchronously, no promise or microtask per message
  collect(ctx: SinkContext, payload: SinkPayload): Promise<void> | undefined {
    try {
      if (!this.conn) throw recoverable(new Error('mqtt sink is not connected'));
      let topic = payload.resend && this.resendTopic !== '' ? this.resendTopic : this.topic;
      if (topic.includes('{{')) {
        const item = payload.rows.length === 1 ? payload.rows[0] : payload.rows;
        topic = ctx.render(topic, item);
      }
      const bytes = this.compression ? compress(this.compression, payload.bytes) : payload.bytes;
      return this.conn.publish(topic, bytes, this.qos, this.retained, ctx.cacheEnabled !== true);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async close(): Promise<void> {
    const conn = this.conn;
    this.conn = undefined;
    conn?.release();
  }
}

/** Connects a fresh (unpooled) client and disconnects: the mqtt connection check of docs/runtime.md §4. */
export async function checkMqtt(props: Props, confKeys: ConfKeys): Promise<void> {
  const settings = mqttSettings(props, confKeys);
  const conn = new MqttConn('check', settings, () => undefined);
  try {
    await conn.waitConnected();
  } catch (err) {
    throw new Error(`found error when connecting for ${settings.server}: ${(err as Error).message}`);
  } finally {
    await conn.end();
  }
}

/** The sink's checks of its own properties (its connection check makes them first). */
export function checkSinkProps(props: Props): void {
  sinkTopic(props);
  sinkQos(props);
}
