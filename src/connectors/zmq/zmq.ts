/**
 * The zmq source and sink (docs/runtime.md §2.5 and §3.6; docs/connectors.md) on libzmq through the `zeromq`
 * package. The source is a SUB socket connected to `server`, subscribed to DATASOURCE as topic prefix: with a topic
 * the first frame is the topic (metadata `topic`) and the other frames, concatenated, the payload; without one every
 * frame is payload. The payload is decoded with the stream's FORMAT. Connecting is lazy, as in libzmq: the source
 * starts whether or not the publisher is up and libzmq (re)connects in the background. The sink is a PUB socket bound
 * to `server`: each encoded payload goes out as `[topic, payload]`, or as one frame when no topic is set.
 */
import type { Publisher, Subscriber } from 'zeromq';
import { lazy } from '../../core/lazy.js';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { propString } from '../props.js';

const zeromq = lazy(() => import('zeromq'));

/** How long a closing sink keeps trying to deliver what is already queued for its subscribers. */
const SINK_LINGER_MS = 1000;
/** binding a port still held by a socket this process just closed: attempts, and the wait between them */
const BIND_ATTEMPTS = 10;
const BIND_RETRY_MS = 200;

function bad(message: string): EddyError {
  return new EddyError(ErrorCode.Executor, message);
}

function server(props: Props, kind: string): string {
  try {
    const s = propString(props, 'server', '').trim();
    if (s === '') throw new Error(`zmq ${kind} is missing property server`);
    return s;
  } catch (e) {
    throw bad((e as Error).message);
  }
}

/** libzmq's error text with its errno name, e.g. `Address already in use (EADDRINUSE)`. */
function zmqReason(e: unknown): string {
  const err = e as Error & { code?: string };
  return err.code ? `${err.message} (${err.code})` : err.message;
}

export class ZmqSource implements SourceConnector {
  private server = '';
  private topic = '';
  private sub: Subscriber | undefined;

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    this.server = server(props, 'source');
    this.topic = datasource;
  }

  async connect(ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    const { Subscriber: ZmqSubscriber } = await zeromq();
    const sub = new ZmqSubscriber({ linger: 0 });
    try {
      sub.connect(this.server);
    } catch (e) {
      sub.close();
      throw new Error(`zmq source cannot connect to ${this.server}: ${zmqReason(e)}`);
    }
    sub.subscribe(this.topic);
    const endpoint = this.server;
    sub.events.on('disconnect', () => ctx.logger.warn(`zmq source lost its connection to ${endpoint}; reconnecting`));
    this.sub = sub;
    void this.receive(sub, emit, onError);
  }

  private async receive(
    sub: Subscriber,
    emit: (ev: SourceEvent) => void,
    onError: (err: Error) => void,
  ): Promise<void> {
    const withTopic = this.topic !== '';
    try {
      for await (const parts of sub) {
        if (withTopic) {
          const [first, ...rest] = parts;
          emit({
            payload: new Uint8Array(Buffer.concat(rest)),
            meta: { topic: first.toString('utf8') },
            timestamp: Date.now(),
          });
        } else {
          emit({ payload: new Uint8Array(Buffer.concat(parts)), meta: {}, timestamp: Date.now() });
        }
      }
    } catch (e) {
      // a failed receive leaves no way to go on reading: the run ends and the rule's restart strategy takes over
      if (!sub.closed) onError(new Error(`zmq source cannot receive from ${this.server}: ${zmqReason(e)}`));
    }
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.sub?.close();
    this.sub = undefined;
  }
}

export class ZmqSink implements SinkConnector {
  private server = '';
  private topic: Buffer | undefined;
  private pub: Publisher | undefined;
  private closed = false;

  provision(_ctx: SinkContext, props: Props): void {
    this.server = server(props, 'sink');
    try {
      const topic = propString(props, 'topic', '');
      this.topic = topic === '' ? undefined : Buffer.from(topic);
    } catch (e) {
      throw bad((e as Error).message);
    }
  }

  async connect(_ctx: SinkContext): Promise<void> {
    const { Publisher: ZmqPublisher } = await zeromq();
    const pub = new ZmqPublisher({ linger: SINK_LINGER_MS });
    for (let attempt = 1; ; attempt++) {
      try {
        await pub.bind(this.server);
        break;
      } catch (e) {
        // a port this process just let go (a restarted rule, a deleted one) is freed by libzmq's own thread a
        // moment later: try again for a short while before reporting the port as taken
        if (attempt < BIND_ATTEMPTS && !this.closed && /EADDRINUSE|in use/i.test(zmqReason(e))) {
          await new Promise((r) => setTimeout(r, BIND_RETRY_MS));
          continue;
        }
        pub.close();
        throw new Error(`zmq sink cannot bind ${this.server}: ${zmqReason(e)}`);
      }
    }
    // closed while binding (the rule was stopped or deleted meanwhile): a socket kept now would hold the port forever
    if (this.closed) {
      await release(pub);
      throw new Error('zmq sink closed while binding');
    }
    this.pub = pub;
  }

  async collect(_ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const pub = this.pub;
    if (!pub) throw new Error('zmq sink is not bound');
    // a PUB socket never waits: messages for no subscriber, or beyond a slow one's queue, are dropped by libzmq
    await pub.send(this.topic ? [this.topic, payload.bytes] : [payload.bytes]);
  }

  async close(_ctx: SinkContext): Promise<void> {
    this.closed = true;
    const pub = this.pub;
    this.pub = undefined;
    if (pub) await release(pub);
  }
}

/**
 * libzmq releases a closed socket's port later, on its own thread: unbinding first frees it before a restarted rule
 * binds it again (the bound address, since a wildcard such as tcp://*:port cannot be unbound by name).
 */
async function release(pub: Publisher): Promise<void> {
  const bound = pub.lastEndpoint;
  if (bound) await pub.unbind(bound).catch(() => undefined);
  pub.close();
}
