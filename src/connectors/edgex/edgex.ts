/**
 * The edgex source and sink (docs/runtime.md §2.5 and §3.6; docs/connectors.md) over the EdgeX message
 * bus (edgex-bus.ts). The source subscribes to `topic`; every envelope's event becomes one row (resourceName →
 * typed value, edgex-event.ts) with the event and reading metadata; events without readings are dropped and an
 * undecodable envelope reaches the rule as an error. The sink publishes one event per send, holding a reading for
 * every non-null field of its rows, to `topic`, or `<topicPrefix>/<profile>/<device>/<source>`, or `application`.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import type { ConfKeys } from '../confkeys.js';
import { busSettings, openBus, type BusSettings, type EdgexBus } from './bus.js';
import { envelope, envelopeEvent, eventRow, rowsEvent, type MessageType } from './event.js';
import type { MqttPool } from '../mqtt/connection.js';
import { transientError } from '../../contracts/failures.js';
import { propString } from '../props.js';
import { recoverable } from '../../contracts/failures.js';

function bad(message: string): EddyError {
  return new EddyError(ErrorCode.Executor, message);
}

function messageType(props: Props): MessageType {
  const t = propString(props, 'messageType', 'event');
  if (t !== 'event' && t !== 'request') throw new Error(`specified wrong messageType value ${t}`);
  return t;
}

export class EdgexSource implements SourceConnector {
  private bus: BusSettings | undefined;
  private topic = '';
  private type: MessageType = 'event';
  private client: EdgexBus | undefined;

  constructor(
    private readonly pool: MqttPool,
    private readonly confKeys: ConfKeys,
  ) {}

  provision(_ctx: ConnectorContext, _datasource: string, props: Props): void {
    try {
      this.bus = busSettings(props, this.confKeys);
      this.topic = propString(props, 'topic', '');
      if (this.topic === '') throw new Error('edgex source topic is required');
      this.type = messageType(props);
    } catch (e) {
      throw bad((e as Error).message);
    }
  }

  async connect(ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    const client = openBus(this.bus!, this.pool);
    this.client = client;
    try {
      await client.subscribe(this.topic, (_topic, bytes) => {
        let decoded;
        try {
          const event = envelopeEvent(bytes, this.type);
          decoded = eventRow(event, '');
        } catch (e) {
          onError(transientError(new Error(`edgex message decode error: ${(e as Error).message}`)));
          return;
        }
        if (decoded === null) {
          ctx.logger.debug('edgex source %s: event without readings dropped', this.topic);
          return;
        }
        emit({ payload: decoded.row, meta: decoded.meta, timestamp: Date.now() });
      });
    } catch (e) {
      this.client = undefined;
      await client.close().catch(() => undefined);
      throw new Error(`edgex source cannot subscribe to ${this.topic}: ${(e as Error).message}`);
    }
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    const c = this.client;
    this.client = undefined;
    await c?.close();
  }
}

interface SinkSettings {
  bus: BusSettings;
  topic: string;
  topicPrefix: string;
  messageType: MessageType;
  contentType: string;
  deviceName: string;
  profileName: string;
  sourceName: string;
  metadata: string;
}

function sinkSettings(props: Props, confKeys: ConfKeys, ruleId: string): SinkSettings {
  const topic = propString(props, 'topic', '');
  const topicPrefix = propString(props, 'topicPrefix', '');
  if (topic !== '' && topicPrefix !== '')
    throw new Error('not allow to specify both topic and topicPrefix, please set one only');
  const contentType = propString(props, 'contentType', 'application/json');
  const mt = messageType(props);
  if (!contentType.startsWith('application/json'))
    throw new Error(`specified wrong contentType value ${contentType}: only application/json is supported`);
  return {
    bus: busSettings(props, confKeys),
    topic,
    topicPrefix,
    messageType: mt,
    contentType,
    deviceName: propString(props, 'deviceName', 'ekuiper'),
    profileName: propString(props, 'profileName', 'ekuiperProfile'),
    sourceName: propString(props, 'sourceName', ruleId),
    metadata: propString(props, 'metadata', ''),
  };
}

export class EdgexSink implements SinkConnector {
  private s!: SinkSettings;
  private client: EdgexBus | undefined;

  constructor(
    private readonly pool: MqttPool,
    private readonly confKeys: ConfKeys,
  ) {}

  provision(ctx: SinkContext, props: Props): void {
    try {
      this.s = sinkSettings(props, this.confKeys, ctx.ruleId);
    } catch (e) {
      throw bad((e as Error).message);
    }
  }

  async connect(_ctx: SinkContext): Promise<void> {
    this.client = openBus(this.s.bus, this.pool);
  }

  async collect(_ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const client = this.client;
    if (!client) throw recoverable(new Error('edgex sink is not connected'));
    const data: Value = payload.data;
    const list = (Array.isArray(data) ? data : [data]).filter((r): r is ValueObject => isObject(r));
    if (list.length === 0) return;
    const event = rowsEvent(list, {
      deviceName: this.s.deviceName,
      profileName: this.s.profileName,
      sourceName: this.s.sourceName,
      metadataField: this.s.metadata,
    });
    let topic = this.s.topic;
    if (topic === '')
      topic =
        this.s.topicPrefix !== ''
          ? `${this.s.topicPrefix}/${event.profileName}/${event.deviceName}/${event.sourceName}`
          : 'application';
    try {
      await client.publish(topic, envelope(event, this.s.messageType, this.s.contentType));
    } catch (e) {
      throw recoverable(e);
    }
  }

  async close(_ctx: SinkContext): Promise<void> {
    const c = this.client;
    this.client = undefined;
    await c?.close();
  }
}
