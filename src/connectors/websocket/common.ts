/**
 * A websocket client that keeps one connection to `ws://<addr><path>` (`wss://` when TLS properties are set) and
 * reconnects after a loss (up to `maxRetry` consecutive failed attempts). Shared by the websocket source and sink in
 * client mode.
 */
import type { ClientOptions, RawData, WebSocket } from 'ws';
import type { Props } from '../../contracts/index.js';
import { tlsSettings, type TlsSettings } from '../tls.js';
import { WS_OPEN, wsModule } from '../dataserver.js';

/** The URL of a websocket server and the TLS settings to reach it, from the connector properties. */
export function wsTarget(addr: string, path: string, props: Props): { url: string; tls: TlsSettings | undefined } {
  const tls = tlsSettings(props);
  return { url: `${tls ? 'wss' : 'ws'}://${addr}${path}`, tls };
}

function tlsOptions(tls: TlsSettings | undefined): ClientOptions {
  if (!tls) return {};
  const o: ClientOptions = { rejectUnauthorized: tls.rejectUnauthorized };
  if (tls.cert) o.cert = tls.cert;
  if (tls.key) o.key = tls.key;
  if (tls.ca) o.ca = tls.ca;
  if (tls.minVersion) o.minVersion = tls.minVersion;
  return o;
}

export interface WsClientEvents {
  message?: (data: Buffer, isBinary: boolean) => void;
  /** every attempt failed: the connection is given up */
  fatal?: (err: Error) => void;
}

export class WsClient {
  private ws: WebSocket | undefined;
  private closed = false;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly url: string,
    private readonly maxRetry: number,
    private readonly events: WsClientEvents,
    private readonly tls?: TlsSettings,
  ) {}

  get connected(): boolean {
    return this.ws?.readyState === WS_OPEN;
  }

  /** Opens the first connection; rejects with the reason when it cannot be opened. */
  async open(timeoutMs = 5000): Promise<void> {
    const { WebSocket: WsSocket } = await wsModule();
    return new Promise((resolve, reject) => {
      const ws = new WsSocket(this.url, { handshakeTimeout: timeoutMs, ...tlsOptions(this.tls) });
      const fail = (err: Error): void => {
        ws.removeAllListeners();
        ws.on('error', () => undefined);
        ws.terminate();
        reject(new Error(`websocket ${this.url}: ${err.message}`));
      };
      ws.once('error', fail);
      ws.once('unexpected-response', (_req, res) => fail(new Error(`unexpected server response: ${res.statusCode}`)));
      ws.once('open', () => {
        ws.off('error', fail);
        this.attach(ws);
        resolve();
      });
    });
  }

  private attach(ws: WebSocket): void {
    this.ws = ws;
    this.failures = 0;
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      this.events.message?.(buf, isBinary);
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (this.ws === ws) this.ws = undefined;
      if (!this.closed) this.scheduleReconnect();
    });
  }

  private scheduleReconnect(): void {
    if (this.closed || this.timer) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.open().catch((err: Error) => {
          this.failures++;
          if (this.failures >= this.maxRetry) this.events.fatal?.(err);
          else this.scheduleReconnect();
        });
      },
      500 * Math.max(1, this.failures),
    );
  }

  /** Sends a text frame; rejects when not connected (and starts reconnecting). */
  send(data: string): Promise<void> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WS_OPEN) {
      this.failures = 0;
      this.scheduleReconnect();
      return Promise.reject(new Error(`websocket ${this.url} is not connected`));
    }
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (err?: Error): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        ws.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      // a frame written to a socket that is going away never gets its callback: the close settles it
      const onClose = (): void => finish(new Error(`websocket ${this.url} closed while sending`));
      const timer = setTimeout(() => finish(new Error(`websocket ${this.url}: send timed out`)), 5000);
      ws.once('close', onClose);
      ws.send(data, (err) => finish(err ?? undefined));
    });
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const ws = this.ws;
    this.ws = undefined;
    if (ws) {
      ws.removeAllListeners('close');
      ws.close();
      setTimeout(() => ws.terminate(), 1000).unref();
    }
  }
}

/** Connection check in client mode: open, send a ping frame, close. */
export async function pingWebsocket(addr: string, path: string, props: Props = {}): Promise<void> {
  if (!addr) throw new Error("websocket server mode can't ping connection");
  const target = wsTarget(addr, path, props);
  const c = new WsClient(target.url, 0, {}, target.tls);
  await c.open(3000);
  c.close();
}
