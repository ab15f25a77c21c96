/**
 * The HTTP data server (docs/runtime.md §2.5 httppush, docs/rest-api.md §6.2): one server on
 * `source.httpServerIp:source.httpServerPort` (default 10081) that httppush sources and websocket endpoints attach
 * routes to. It starts with the first route and stops when the last one is removed; CORS is open. With
 * `source.httpServerTls: {certfile, keyfile}` it serves https (and wss).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import type { Logger } from 'pino';
import { DEFAULT_MAX_BODY_SIZE } from '../core/limits.js';
import { lazy } from '../core/lazy.js';
import { dropHolder, subscribe, type EndpointUse, type WsListener } from './data-uses.js';

/** the ws library, loaded by the first websocket endpoint or websocket client connector */
export const wsModule = lazy(() => import('ws'));
/** `readyState` of an open connection (the WebSocket standard's OPEN) */
export const WS_OPEN = 1;

/** Handles one request whose whole body has been read. */
export type DataHandler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;

export interface DataServerOptions {
  host: string;
  port: number;
  logger: Logger;
  /** PEM certificate and key: serve https instead of http */
  tls?: { cert: Buffer; key: Buffer };
  /** largest request body or websocket message in bytes (`basic.maxBodySize`); larger ones are refused */
  maxBodySize?: number;
  /**
   * Checks a request (or websocket upgrade) before it is read: undefined lets it through, a text refuses it with 401
   * (`basic.authentication` puts the REST API's token check here).
   */
  authorize?: (req: IncomingMessage) => string | undefined;
}

interface WsRoute {
  wss: WebSocketServer;
  onConnection: (ws: WebSocket, req: IncomingMessage) => void;
}

export class DataServer {
  private server: Server | undefined;
  private starting: Promise<void> | undefined;
  private readonly routes = new Map<string, DataHandler>();
  private readonly wsRoutes = new Map<string, WsRoute>();
  private boundPort: number | undefined;

  private readonly maxBody: number;

  constructor(private readonly opts: DataServerOptions) {
    this.maxBody = opts.maxBodySize && opts.maxBodySize > 0 ? opts.maxBodySize : DEFAULT_MAX_BODY_SIZE;
  }

  /** The port the server listens on (useful when configured with port 0), undefined while stopped. */
  get port(): number | undefined {
    return this.boundPort;
  }

  get listening(): boolean {
    return this.server !== undefined && this.boundPort !== undefined;
  }

  /**
   * Adds an HTTP route (method upper-case, path starting with `/`), starting the server if needed. Resolves to a
   * function that removes the route. Rejects with the listen error when the server cannot start.
   */
  async addRoute(method: string, path: string, handler: DataHandler): Promise<() => Promise<void>> {
    const key = `${method.toUpperCase()} ${path}`;
    if (this.routes.has(key))
      throw new Error(`${method.toUpperCase()} ${path} is already registered on the data server`);
    this.routes.set(key, handler);
    try {
      await this.ensureStarted();
    } catch (err) {
      this.routes.delete(key);
      throw err;
    }
    return async () => {
      if (this.routes.get(key) === handler) this.routes.delete(key);
      await this.stopIfUnused();
    };
  }

  /** Adds a websocket route; `onConnection` gets every client that connects to `path`. */
  async addWebsocket(
    path: string,
    onConnection: (ws: WebSocket, req: IncomingMessage) => void,
  ): Promise<() => Promise<void>> {
    const { WebSocketServer: WsServer } = await wsModule();
    if (this.wsRoutes.has(path)) throw new Error(`websocket ${path} is already registered on the data server`);
    const route: WsRoute = { wss: new WsServer({ noServer: true, maxPayload: this.maxBody }), onConnection };
    this.wsRoutes.set(path, route);
    try {
      await this.ensureStarted();
    } catch (err) {
      this.wsRoutes.delete(path);
      route.wss.close();
      throw err;
    }
    return async () => {
      if (this.wsRoutes.get(path) === route) this.wsRoutes.delete(path);
      for (const c of route.wss.clients) c.terminate();
      route.wss.close();
      await this.stopIfUnused();
    };
  }

  hasRoute(method: string, path: string): boolean {
    return this.routes.has(`${method.toUpperCase()} ${path}`);
  }

  private ensureStarted(): Promise<void> {
    if (this.server && this.boundPort !== undefined) return Promise.resolve();
    if (this.starting) return this.starting;
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.handle(req, res);
    const tls = this.opts.tls;
    const server: Server = tls ? createTlsServer({ cert: tls.cert, key: tls.key }, handler) : createServer(handler);
    server.on('upgrade', (req, socket, head) => this.upgrade(req, socket, head));
    this.starting = new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => {
        server.off('listening', onListening);
        this.server = undefined;
        this.starting = undefined;
        reject(err);
      };
      const onListening = () => {
        server.off('error', onError);
        this.boundPort = (server.address() as AddressInfo).port;
        this.starting = undefined;
        this.opts.logger.info('data server listening on %s:%d', this.opts.host, this.boundPort);
        resolve();
      };
      server.once('error', onError);
      server.once('listening', onListening);
      this.server = server;
      server.listen(this.opts.port, this.opts.host);
    });
    return this.starting;
  }

  private async stopIfUnused(): Promise<void> {
    if (this.routes.size > 0 || this.wsRoutes.size > 0) return;
    await this.close();
  }

  /** Stops the server and every websocket route (shutdown). */
  async close(): Promise<void> {
    if (this.starting) await this.starting.catch(() => undefined);
    const server = this.server;
    this.server = undefined;
    this.boundPort = undefined;
    if (!server) return;
    for (const r of this.wsRoutes.values()) for (const c of r.wss.clients) c.terminate();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    res.setHeader('Access-Control-Allow-Origin', '*');
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST, PUT, GET, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', String(req.headers['access-control-request-headers'] ?? '*'));
      res.writeHead(200).end();
      return;
    }
    const handler = this.routes.get(`${req.method} ${path}`);
    if (!handler) {
      const known = [...this.routes.keys()].some((k) => k.slice(k.indexOf(' ') + 1) === path);
      res.writeHead(known ? 405 : 404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(known ? 'Method Not Allowed\n' : '404 page not found\n');
      return;
    }
    const refused = this.opts.authorize?.(req);
    if (refused !== undefined) {
      res.writeHead(401, { 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' });
      res.end(`${refused}\n`);
      req.resume();
      return;
    }
    const tooLarge = () => {
      res.writeHead(413, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end(
        `${JSON.stringify({ error: 1000, message: `request body is too large: the limit is ${this.maxBody} bytes (basic.maxBodySize)` })}\n`,
      );
      req.resume();
    };
    if (Number(req.headers['content-length'] ?? 0) > this.maxBody) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > this.maxBody) {
        over = true;
        chunks.length = 0;
        tooLarge();
        return;
      }
      chunks.push(c);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      if (over) return;
      try {
        handler(req, Buffer.concat(chunks), res);
      } catch (err) {
        this.opts.logger.warn({ err }, 'data server handler failed');
        if (!res.headersSent) res.writeHead(500);
        res.end();
      }
    });
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? '/').split('?')[0];
    const route = this.wsRoutes.get(path);
    if (!route) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const refused = this.opts.authorize?.(req);
    if (refused !== undefined) {
      const text = `${refused}\n`;
      socket.end(
        `HTTP/1.1 401 Unauthorized\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
      );
      return;
    }
    route.wss.handleUpgrade(req, socket, head, (ws) => route.onConnection(ws, req));
  }
}

interface Endpoint extends EndpointUse {
  clients: Set<WebSocket>;
  remove: () => Promise<void>;
}

/**
 * Websocket endpoints on the data server (`/connection/websocket`, websocket sources and sinks in server mode).
 * An endpoint stays while any holder keeps it (the REST API holds it as `api`); inbound frames go to every listener,
 * `broadcast` sends to every connected client.
 */
export class WsEndpoints {
  private readonly endpoints = new Map<string, Endpoint>();
  private readonly pending = new Map<string, Promise<Endpoint>>();

  constructor(private readonly server: DataServer) {}

  has(path: string): boolean {
    return this.endpoints.has(path);
  }

  /** Registers `path` for `holder` (idempotent per holder), starting the data server if needed. */
  async acquire(path: string, holder: string): Promise<void> {
    const ep = await this.ensure(path);
    ep.holders.add(holder);
  }

  private ensure(path: string): Promise<Endpoint> {
    const existing = this.endpoints.get(path);
    if (existing) return Promise.resolve(existing);
    const inflight = this.pending.get(path);
    if (inflight) return inflight;
    const p = (async () => {
      const ep: Endpoint = {
        holders: new Set(),
        clients: new Set(),
        listeners: new Set(),
        watchers: new Set(),
        remove: async () => {},
      };
      const tell = () => {
        for (const w of ep.watchers) w(ep.clients.size);
      };
      ep.remove = await this.server.addWebsocket(path, (ws) => {
        ep.clients.add(ws);
        ws.on('message', (data: RawData, isBinary: boolean) => {
          const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
          for (const l of ep.listeners) l(buf, isBinary);
        });
        const gone = () => {
          if (ep.clients.delete(ws)) tell();
        };
        ws.on('close', gone);
        ws.on('error', gone);
        tell();
      });
      this.endpoints.set(path, ep);
      return ep;
    })();
    this.pending.set(path, p);
    return p.finally(() => this.pending.delete(path));
  }

  /** Drops `holder`'s claim; the endpoint closes its connections and goes away when nobody holds it. */
  async release(path: string, holder: string): Promise<void> {
    await dropHolder(this.endpoints, path, holder)?.remove();
  }

  /** Subscribes to inbound frames of an endpoint (which must be acquired). */
  listen(path: string, listener: WsListener): () => void {
    return subscribe(this.endpoints.get(path), path, (ep) => ep.listeners, listener);
  }

  /** Calls `watcher` with the number of connected clients whenever one connects or leaves (endpoint acquired). */
  watch(path: string, watcher: (clients: number) => void): () => void {
    return subscribe(this.endpoints.get(path), path, (ep) => ep.watchers, watcher);
  }

  /** Sends a text (string) or binary frame to every client of the endpoint; resolves to the number of clients. */
  broadcast(path: string, data: string | Uint8Array): number {
    const ep = this.endpoints.get(path);
    if (!ep) return 0;
    let n = 0;
    for (const c of ep.clients) {
      if (c.readyState === WS_OPEN) {
        c.send(data);
        n++;
      }
    }
    return n;
  }

  async close(): Promise<void> {
    for (const [path, ep] of [...this.endpoints]) {
      this.endpoints.delete(path);
      await ep.remove();
    }
  }
}
