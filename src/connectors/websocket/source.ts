/**
 * The websocket source (docs/runtime.md §2.5 websocket). With `addr` it is a client of `ws://<addr><DATASOURCE>`
 * (reconnecting up to `maxConnRetry` times) and decodes each message with FORMAT; without `addr` it serves
 * DATASOURCE as an endpoint on the HTTP data server, where each text frame must be a JSON object.
 */
import { randomUUID } from 'node:crypto';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { WsEndpointsPort } from '../data-relay.js';
import { propInt, propString } from '../props.js';
import { WsClient, wsTarget } from './common.js';
import { transientError } from '../../contracts/failures.js';

export class WebsocketSource implements SourceConnector {
  private addr = '';
  private path = '';
  private maxRetry = 3;
  private client: WsClient | undefined;
  private unlisten: (() => void) | undefined;
  private readonly holder = 'source-' + randomUUID();

  private props: Props = {};

  constructor(private readonly endpoints: WsEndpointsPort) {}

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    try {
      this.addr = propString(props, 'addr', '');
      this.maxRetry = propInt(props, 'maxConnRetry', 3);
      wsTarget('', '', props);
      this.props = props;
    } catch (e) {
      throw new EddyError(ErrorCode.Executor, (e as Error).message);
    }
    if (!datasource) throw new EddyError(ErrorCode.Executor, 'websocket source: datasource (the path) is required');
    this.path = datasource.startsWith('/') ? datasource : '/' + datasource;
  }

  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    if (this.addr) {
      const target = wsTarget(this.addr, this.path, this.props);
      this.client = new WsClient(
        target.url,
        this.maxRetry,
        {
          message: (buf) => emit({ payload: new Uint8Array(buf), meta: {}, timestamp: Date.now() }),
          fatal: (err) => onError(err),
        },
        target.tls,
      );
      await this.client.open();
      return;
    }
    await this.endpoints.acquire(this.path, this.holder);
    this.unlisten = this.endpoints.listen(this.path, (buf) => {
      let v: unknown;
      try {
        v = JSON.parse(buf.toString('utf8'));
      } catch (e) {
        onError(transientError(new Error(`websocket ${this.path}: invalid JSON message: ${(e as Error).message}`)));
        return;
      }
      if (!v || typeof v !== 'object' || Array.isArray(v)) {
        onError(transientError(new Error(`websocket ${this.path}: message is not a JSON object`)));
        return;
      }
      emit({ payload: new Uint8Array(buf), meta: {}, timestamp: Date.now() });
    });
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.client?.close();
    this.client = undefined;
    if (this.unlisten) {
      this.unlisten();
      this.unlisten = undefined;
      await this.endpoints.release(this.path, this.holder);
    }
  }
}
