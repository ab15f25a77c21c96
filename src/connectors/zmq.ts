/**
 * The zmq source and sink (docs/runtime.md §2.5 and §3.6; docs/connectors.md) over ZMTP (zmtp.ts). The source
 * is a SUB socket connected to `server`, subscribed to DATASOURCE as topic prefix: with a topic the first frame is
 * the topic (metadata `topic`) and the other frames, concatenated, the payload; without one every frame is payload.
 * The payload is decoded with the stream's FORMAT. The sink is a PUB socket bound to `server`: each encoded payload
 * goes out as `[topic, payload]`, or as one frame when no topic is set.
 */
import { EddyError, ErrorCode } from '../core/errors.js';
import type { ConnectorContext, Props, SinkConnector, SinkContext, SinkPayload, SourceConnector, SourceEvent } from '../contracts/index.js';
import { transientError } from './mqtt.js';
import { propString } from './props.js';
import type { Registry } from './registry.js';
import { about, addSinkMeta, addSourceMeta, f, same, sink } from './uimeta.js';
import { ZmtpPublisher, ZmtpSubscriber, tcpEndpoint } from './zmtp.js';

function bad(message: string): EddyError {
  return new EddyError(ErrorCode.Executor, message);
}

function server(props: Props, kind: string): { host: string; port: number } {
  try {
    const s = propString(props, 'server', '');
    if (s === '') throw new Error(`zmq ${kind} is missing property server`);
    return tcpEndpoint(s);
  } catch (e) {
    throw bad((e as Error).message);
  }
}

export class ZmqSource implements SourceConnector {
  private endpoint!: { host: string; port: number };
  private topic = '';
  private sub: ZmtpSubscriber | undefined;

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    this.endpoint = server(props, 'source');
    this.topic = datasource;
  }

  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    const topic = this.topic;
    const sub = new ZmtpSubscriber(
      this.endpoint.host,
      this.endpoint.port,
      Buffer.from(topic),
      (parts) => {
        if (topic !== '') {
          const [first, ...rest] = parts;
          emit({ payload: new Uint8Array(Buffer.concat(rest)), meta: { topic: first.toString('utf8') }, timestamp: Date.now() });
        } else {
          emit({ payload: new Uint8Array(Buffer.concat(parts)), meta: {}, timestamp: Date.now() });
        }
      },
      (err) => onError(transientError(err)),
    );
    this.sub = sub;
    try {
      await sub.start();
    } catch (e) {
      this.sub = undefined;
      await sub.close();
      throw new Error(`zmq source cannot connect to ${this.endpoint.host}:${this.endpoint.port}: ${(e as Error).message}`);
    }
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    await this.sub?.close();
    this.sub = undefined;
  }
}

export class ZmqSink implements SinkConnector {
  private endpoint!: { host: string; port: number };
  private topic = '';
  private pub: ZmtpPublisher | undefined;

  provision(_ctx: SinkContext, props: Props): void {
    this.endpoint = server(props, 'sink');
    try {
      this.topic = propString(props, 'topic', '');
    } catch (e) {
      throw bad((e as Error).message);
    }
  }

  async connect(_ctx: SinkContext): Promise<void> {
    const pub = new ZmtpPublisher();
    await pub.bind(this.endpoint.host, this.endpoint.port);
    this.pub = pub;
  }

  async collect(_ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const pub = this.pub;
    if (!pub) throw new Error('zmq sink is not bound');
    pub.send(this.topic !== '' ? [Buffer.from(this.topic), payload.bytes] : [payload.bytes]);
  }

  async close(_ctx: SinkContext): Promise<void> {
    await this.pub?.close();
    this.pub = undefined;
  }
}

export function registerZmq(registry: Registry): void {
  registry.registerSource('zmq', () => new ZmqSource());
  registry.registerSink('zmq', () => new ZmqSink());
  addSourceMeta('zmq', {
    stream: true,
    lookup: false,
    about: about({ en_US: 'Subscribes to a ZeroMQ publisher.', zh_CN: '订阅 ZeroMQ 发布者。' }, 'sources/plugin/zmq'),
    libs: [],
    node: { category: 'source', icon: 'iconPath', label: same('ZeroMQ') },
    dataSource: { default: '', hint: same('Topic prefix subscribed to; empty receives everything.'), label: same('Topic') },
    properties: { default: [f('server', 'string', 'tcp://127.0.0.1:5563', 'Server', 'tcp://host:port of the publisher.', { optional: false, connection: true })] },
  });
  addSinkMeta(
    'zmq',
    sink({ en_US: 'Publishes results on a ZeroMQ PUB socket.', zh_CN: '通过 ZeroMQ PUB 套接字发布结果。' }, 'sinks/plugin/zmq', 'ZeroMQ', [
      f('server', 'string', 'tcp://127.0.0.1:5563', 'Server', 'tcp://host:port the PUB socket binds.', { optional: false, connection: true }),
      f('topic', 'string', '', 'Topic', 'First frame of every message; none when empty.'),
    ]),
  );
}
