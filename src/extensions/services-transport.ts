/**
 * Remote calls (HTTP, gRPC, msgpack-rpc) for external-service functions, as promises.
 *
 * Service functions are asynchronous SQL functions: the rule's asynchronous node (docs/runtime.md §6.3) awaits them,
 * so a slow service delays only the rows waiting for it, never the thread. A worker thread (services-worker.ts)
 * keeps the clients (gRPC channels, msgpack-rpc connections) and does the network I/O; the calling thread posts the
 * request and the worker posts the answer back.
 *
 * The worker is started on first use, unref'd (it never keeps the process alive) and stopped by `close()`.
 */
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { siblingModule, startWorker } from '../core/threads.js';

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

/** The transport thread's answer to call `id` (services-worker.ts). */
export interface TransportAnswer {
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

  private answer(msg: TransportAnswer): void {
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
    const worker = startWorker(siblingModule(import.meta.url, 'services-worker'), {
      workerData: { port: port2 },
      transferList: [port2],
      // nothing of the parent's command line (test runner, inspector) is the worker's business
      execArgv: [],
    });
    worker.unref();
    port1.on('message', (m: TransportAnswer) => this.answer(m));
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
