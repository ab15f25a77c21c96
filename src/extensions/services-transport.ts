/**
 * Remote calls (HTTP, gRPC, msgpack-rpc) for external-service functions, as promises.
 *
 * Service functions are asynchronous SQL functions: the rule's asynchronous node (docs/runtime.md §6.3) awaits them,
 * so a slow service delays only the rows waiting for it, never the thread. A worker thread keeps the clients
 * (gRPC channels, msgpack-rpc connections) and does the network I/O; the calling thread posts the request and the
 * worker posts the answer back.
 *
 * The worker is started on first use, unref'd (it never keeps the process alive) and stopped by `close()`.
 */
import { createRequire } from 'node:module';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';

export interface HttpCall {
  kind: 'http';
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  timeoutMs: number;
  insecureSkipVerify: boolean;
}

export interface GrpcCall {
  kind: 'grpc';
  /** host:port */
  target: string;
  /** `/package.Service/Method` */
  path: string;
  body: Uint8Array;
  timeoutMs: number;
}

export interface MsgpackCall {
  kind: 'msgpack';
  /** host:port */
  target: string;
  method: string;
  params: unknown[];
  timeoutMs: number;
}

export type RemoteCall = HttpCall | GrpcCall | MsgpackCall;

export interface RemoteReply {
  /** HTTP status; for gRPC 0 on success, otherwise the gRPC status code; for msgpack-rpc 0 or 1 (error reply) */
  status: number;
  contentType: string;
  body: Uint8Array;
  /** msgpack-rpc: the decoded result */
  value?: unknown;
}

/** A transport failure (connection refused, time-out…): the call may be retried. */
export class TransportError extends Error {}

// The worker's code: plain JavaScript so that it runs the same under tsx and compiled builds.
const WORKER_SOURCE = String.raw`
const { workerData } = require('node:worker_threads');
const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const { port, grpcPath, msgpackPath } = workerData;
let grpc;
const grpcClients = new Map();
const identity = (b) => b;

function answer(id, result) {
  port.postMessage({ id, ...result });
}

function doHttp(id, c) {
  const url = new URL(c.url);
  const mod = url.protocol === 'https:' ? https : http;
  const headers = { ...c.headers };
  if (c.body) headers['content-length'] = String(c.body.byteLength);
  let done = false;
  const finish = (r) => { if (!done) { done = true; answer(id, r); } };
  const req = mod.request(url, { method: c.method, headers, rejectUnauthorized: !c.insecureSkipVerify }, (res) => {
    const chunks = [];
    res.on('data', (d) => chunks.push(d));
    res.on('end', () => finish({ status: res.statusCode || 0, contentType: String(res.headers['content-type'] || ''), body: Buffer.concat(chunks) }));
    res.on('error', (e) => finish({ error: e.message }));
  });
  req.setTimeout(c.timeoutMs, () => req.destroy(new Error('timeout after ' + c.timeoutMs + 'ms')));
  req.on('error', (e) => finish({ error: e.message }));
  if (c.body) req.write(Buffer.from(c.body));
  req.end();
}

function doGrpc(id, c) {
  try {
    grpc ??= require(grpcPath);
    let client = grpcClients.get(c.target);
    if (!client) {
      client = new grpc.Client(c.target, grpc.credentials.createInsecure());
      grpcClients.set(c.target, client);
    }
    client.makeUnaryRequest(c.path, identity, identity, Buffer.from(c.body), new grpc.Metadata(),
      { deadline: Date.now() + c.timeoutMs }, (err, res) => {
        if (err) {
          const transport = err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED;
          answer(id, transport ? { error: err.message } : { status: err.code, contentType: '', body: Buffer.from(err.details || err.message) });
        } else answer(id, { status: 0, contentType: 'application/grpc', body: res });
      });
  } catch (e) {
    answer(id, { error: e && e.message ? e.message : String(e) });
  }
}

// msgpack-rpc: one connection per target, replies matched by msgid; a closed connection fails its pending calls
// and the next call dials again
let msgpack;
const mpConns = new Map();
let nextMsgId = 1;
function mpConn(target) {
  const old = mpConns.get(target);
  if (old && !old.closed) return old;
  msgpack ??= require(msgpackPath);
  const i = target.lastIndexOf(':');
  const socket = net.connect({ host: target.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(target.slice(i + 1)) });
  const c = { socket, pending: new Map(), closed: false };
  const fail = (msg) => {
    if (c.closed) return;
    c.closed = true;
    if (mpConns.get(target) === c) mpConns.delete(target);
    for (const p of c.pending.values()) p({ error: msg });
    c.pending.clear();
    socket.destroy();
  };
  socket.on('error', (e) => fail(e.message));
  socket.on('close', () => fail('connection closed'));
  (async () => {
    try {
      for await (const m of msgpack.decodeMultiStream(socket, { useBigInt64: true })) {
        if (!Array.isArray(m) || m[0] !== 1) continue;
        const p = c.pending.get(m[1]);
        if (!p) continue;
        c.pending.delete(m[1]);
        if (m[2] !== null && m[2] !== undefined) p({ status: 1, contentType: '', body: Buffer.from(typeof m[2] === 'string' ? m[2] : String(m[2])) });
        else p({ status: 0, contentType: '', body: Buffer.alloc(0), value: m[3] });
      }
    } catch (e) {
      fail('invalid msgpack-rpc reply: ' + (e && e.message ? e.message : String(e)));
    }
  })();
  mpConns.set(target, c);
  return c;
}
function doMsgpack(id, c) {
  const conn = mpConn(c.target);
  const msgid = nextMsgId++ & 0x7fffffff;
  const timer = setTimeout(() => {
    if (conn.pending.delete(msgid)) answer(id, { error: 'timeout after ' + c.timeoutMs + 'ms' });
  }, c.timeoutMs);
  conn.pending.set(msgid, (r) => { clearTimeout(timer); answer(id, r); });
  conn.socket.write(msgpack.encode([0, msgid, c.method, c.params], { useBigInt64: true }));
}

port.on('message', ({ id, call }) => {
  try {
    if (call.kind === 'grpc') doGrpc(id, call); else if (call.kind === 'msgpack') doMsgpack(id, call); else doHttp(id, call);
  } catch (e) {
    answer(id, { error: e && e.message ? e.message : String(e) });
  }
});
`;

interface WorkerAnswer {
  id: number;
  error?: string;
  status?: number;
  contentType?: string;
  body?: Uint8Array;
  value?: unknown;
}

/** Extra wait beyond a call's own time limit before the caller gives up on the worker. */
const GRACE_MS = 1000;

interface Waiting {
  resolve: (r: RemoteReply) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class ServiceTransport {
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();

  /** Performs one call; rejects with TransportError when no reply came. */
  call(call: RemoteCall): Promise<RemoteReply> {
    const port = this.start();
    const id = this.nextId++;
    return new Promise<RemoteReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new TransportError(`no reply within ${call.timeoutMs}ms`));
      }, call.timeoutMs + GRACE_MS);
      this.waiting.set(id, { resolve, reject, timer });
      port.postMessage({ id, call });
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.port?.close();
    this.port = undefined;
    this.failAll('the service transport is closed');
    if (w) await w.terminate();
  }

  private failAll(reason: string): void {
    for (const w of this.waiting.values()) {
      clearTimeout(w.timer);
      w.reject(new TransportError(reason));
    }
    this.waiting.clear();
  }

  private answer(msg: WorkerAnswer): void {
    const w = this.waiting.get(msg.id);
    if (!w) return; // the late answer of a call that already gave up
    this.waiting.delete(msg.id);
    clearTimeout(w.timer);
    if (msg.error !== undefined) w.reject(new TransportError(msg.error));
    else
      w.resolve({
        status: msg.status ?? 0,
        contentType: msg.contentType ?? '',
        body: msg.body ?? new Uint8Array(0),
        value: msg.value,
      });
  }

  private start(): MessagePort {
    if (this.worker && this.port) return this.port;
    const { port1, port2 } = new MessageChannel();
    const req = createRequire(import.meta.url);
    const grpcPath = req.resolve('@grpc/grpc-js');
    const msgpackPath = req.resolve('@msgpack/msgpack');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { port: port2, grpcPath, msgpackPath },
      transferList: [port2],
      // the worker needs no TypeScript loader: do not pass the parent's --import flags
      execArgv: [],
    });
    worker.unref();
    port1.on('message', (m: WorkerAnswer) => this.answer(m));
    // pending calls keep the process alive through their timers, not through the port
    port1.unref();
    worker.on('error', () => {
      // a crashed worker is replaced at the next call; its pending calls fail now
      if (this.worker === worker) {
        this.worker = undefined;
        this.port?.close();
        this.port = undefined;
        this.failAll('the service transport worker failed');
      }
    });
    this.worker = worker;
    this.port = port1;
    return port1;
  }
}
