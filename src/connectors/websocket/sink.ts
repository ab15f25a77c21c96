/**
 * The websocket sink (docs/runtime.md §3.6 websocket): sends the encoded payload as a text frame. With `addr` it is a
 * client of `ws://<addr><path>` (a send while disconnected is a recoverable failure); without `addr` it serves
 * `path` on the HTTP data server and sends to every connected peer.
 */
import { randomUUID } from 'node:crypto';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import type { WsEndpointsPort } from '../data-relay.js';
import { propBool, propString } from '../props.js';
import { recoverable, type TransformFailureListener } from '../../contracts/failures.js';
import { WsClient, wsTarget } from './common.js';

const decoder = new TextDecoder();

export class WebsocketSink implements SinkConnector, TransformFailureListener {
  private addr = '';
  private path = '';
  /** also send `{"error":"<message>"}` to the peers when an item cannot be transformed or sent */
  private sendError = false;
  private props: Props = {};
  private client: WsClient | undefined;
  private holding = false;
  private readonly holder = 'sink-' + randomUUID();

  constructor(private readonly endpoints: WsEndpointsPort) {}

  provision(_ctx: SinkContext, props: Props): void {
    try {
      this.addr = propString(props, 'addr', '');
      this.path = propString(props, 'path', '');
      this.sendError = propBool(props, 'sendError', false);
      wsTarget('', '', props);
      this.props = props;
    } catch (e) {
      throw new EddyError(ErrorCode.Executor, (e as Error).message);
    }
    if (!this.path) throw new EddyError(ErrorCode.Executor, 'websocket sink: path is required');
    if (!this.path.startsWith('/')) this.path = '/' + this.path;
  }

  async connect(_ctx: SinkContext): Promise<void> {
    if (this.addr) {
      const target = wsTarget(this.addr, this.path, this.props);
      this.client = new WsClient(target.url, 3, {}, target.tls);
      await this.client.open();
      return;
    }
    await this.endpoints.acquire(this.path, this.holder);
    this.holding = true;
  }

  async collect(_ctx: SinkContext, payload: SinkPayload): Promise<void> {
    let text: string;
    try {
      text = decoder.decode(payload.bytes);
    } catch (e) {
      await this.transformFailed(_ctx, e as Error);
      throw e;
    }
    try {
      await this.deliver(text);
    } catch (e) {
      await this.transformFailed(_ctx, e as Error);
      throw recoverable(e);
    }
  }

  private async deliver(text: string): Promise<void> {
    if (this.client) await this.client.send(text);
    else this.endpoints.broadcast(this.path, text);
  }

  /** eKuiper formats the message into the JSON text as is, without escaping it. */
  async transformFailed(_ctx: SinkContext, err: Error): Promise<void> {
    if (!this.sendError) return;
    await this.deliver(`{"error":"${err.message}"}`).catch(() => undefined);
  }

  async close(_ctx: SinkContext): Promise<void> {
    this.client?.close();
    this.client = undefined;
    if (this.holding) {
      this.holding = false;
      await this.endpoints.release(this.path, this.holder);
    }
  }
}
