/**
 * Blocking remote calls (HTTP, gRPC, msgpack-rpc) for external-service functions.
 *
 * SQL functions are synchronous (the per-record path has no promises), while HTTP and gRPC are asynchronous in Node.
 * A worker thread does the network I/O; the calling thread posts the request, sleeps on a shared cell with
 * `Atomics.wait` until the worker flags the answer, and takes the answer with `receiveMessageOnPort`. Like eKuiper's
 * Go executor, a call blocks the rule that makes it until the reply or the time limit (5 s by default); in Node the
 * whole main thread waits, so a slow service slows every rule and the REST API for that time.
 *
 * The worker is started on first use, unref'd (it never keeps the process alive) and stopped by `close()`.
 */
import { createRequire } from 'node:module';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

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
const { port, cell, grpcPath, msgpackPath } = workerData;
const flag = new Int32Array(cell);
let grpc;
const grpcClients = new Map();
const identity = (b) => b;

function answer(id, result) {
  port.postMessage({ id, ...result });
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
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

export class SyncTransport {
  private worker: Worker | undefined;
  private port: MessagePort | undefined;
  private flag: Int32Array | undefined;
  private nextId = 1;

  /** Performs one call and blocks until its reply; throws TransportError when no reply came. */
  call(call: RemoteCall): RemoteReply {
    const { port, flag } = this.start();
    const id = this.nextId++;
    Atomics.store(flag, 0, 0);
    port.postMessage({ id, call });
    const deadline = Date.now() + call.timeoutMs + GRACE_MS;
    for (;;) {
      const msg = receiveMessageOnPort(port)?.message as WorkerAnswer | undefined;
      if (msg !== undefined) {
        if (msg.id !== id) continue; // the late answer of a call that already gave up
        if (msg.error !== undefined) throw new TransportError(msg.error);
        return { status: msg.status ?? 0, contentType: msg.contentType ?? '', body: msg.body ?? new Uint8Array(0), value: msg.value };
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new TransportError(`no reply within ${call.timeoutMs}ms`);
      // woken by the worker's flag; the message is then (or very soon) readable
      if (Atomics.wait(flag, 0, 0, Math.min(left, 50)) !== 'timed-out') Atomics.store(flag, 0, 0);
    }
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.port?.close();
    this.port = undefined;
    if (w) await w.terminate();
  }

  private start(): { port: MessagePort; flag: Int32Array } {
    if (this.worker && this.port && this.flag) return { port: this.port, flag: this.flag };
    const cell = new SharedArrayBuffer(4);
    const { port1, port2 } = new MessageChannel();
    const req = createRequire(import.meta.url);
    const grpcPath = req.resolve('@grpc/grpc-js');
    const msgpackPath = req.resolve('@msgpack/msgpack');
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { port: port2, cell, grpcPath, msgpackPath },
      transferList: [port2],
      // the worker needs no TypeScript loader: do not pass the parent's --import flags
      execArgv: [],
    });
    worker.unref();
    port1.unref();
    worker.on('error', () => {
      // a crashed worker is replaced at the next call
      if (this.worker === worker) {
        this.worker = undefined;
        this.port?.close();
        this.port = undefined;
      }
    });
    this.worker = worker;
    this.port = port1;
    this.flag = new Int32Array(cell);
    return { port: port1, flag: this.flag };
  }
}
