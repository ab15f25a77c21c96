/**
 * The entry of the external-service transport thread (services-transport.ts starts it): it keeps the clients
 * (gRPC channels, msgpack-rpc connections), does the network I/O of every call and posts each answer back. The client
 * libraries are loaded on their first call.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { workerData, type MessagePort } from 'node:worker_threads';
import type { Client, ServiceError } from '@grpc/grpc-js';
import { lazy } from '../core/lazy.js';
import type { GrpcCall, HttpCall, MsgpackCall, RemoteCall, TransportAnswer } from './services-transport.js';

const { port } = workerData as { port: MessagePort };
const grpcModule = lazy(() => import('@grpc/grpc-js'));
const msgpackModule = lazy(() => import('@msgpack/msgpack'));

type Outcome = Omit<TransportAnswer, 'id'>;

const answer = (id: number, result: Outcome): void => port.postMessage({ id, ...result } satisfies TransportAnswer);
const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

function doHttp(id: number, c: HttpCall): void {
  const url = new URL(c.url);
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers: Record<string, string> = { ...c.headers };
  if (c.body) headers['content-length'] = String(c.body.byteLength);
  let done = false;
  const finish = (r: Outcome): void => {
    if (done) return;
    done = true;
    answer(id, r);
  };
  const req = request(
    url,
    { method: c.method, headers, rejectUnauthorized: !c.insecureSkipVerify },
    (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () =>
        finish({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type'] ?? ''),
          body: Buffer.concat(chunks),
        }),
      );
      res.on('error', (e) => finish({ error: e.message }));
    },
  );
  req.setTimeout(c.timeoutMs, () => req.destroy(new Error(`timeout after ${c.timeoutMs}ms`)));
  req.on('error', (e) => finish({ error: e.message }));
  if (c.body) req.write(Buffer.from(c.body));
  req.end();
}

const grpcClients = new Map<string, Client>();
const identity = (b: Buffer): Buffer => b;

async function doGrpc(id: number, c: GrpcCall): Promise<void> {
  const grpc = await grpcModule();
  let client = grpcClients.get(c.target);
  if (!client) {
    client = new grpc.Client(c.target, grpc.credentials.createInsecure());
    grpcClients.set(c.target, client);
  }
  client.makeUnaryRequest(
    c.path,
    identity,
    identity,
    Buffer.from(c.body),
    new grpc.Metadata(),
    { deadline: Date.now() + c.timeoutMs },
    (err: ServiceError | null, res?: Buffer) => {
      if (err) {
        // an unreachable service or a call out of time may be tried again; any other status is the service's answer
        const transport = err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.DEADLINE_EXCEEDED;
        answer(
          id,
          transport
            ? { error: err.message }
            : { status: err.code, contentType: '', body: Buffer.from(err.details || err.message) },
        );
      } else answer(id, { status: 0, contentType: 'application/grpc', body: res ?? Buffer.alloc(0) });
    },
  );
}

/** One msgpack-rpc connection: replies matched by msgid. */
interface MsgpackConn {
  socket: Socket;
  pending: Map<number, (r: Outcome) => void>;
  closed: boolean;
}

// one connection per target; a closed connection fails its pending calls and the next call dials again
const mpConns = new Map<string, MsgpackConn>();
let nextMsgId = 1;

type Msgpack = Awaited<ReturnType<typeof msgpackModule>>;

/** The connection to `target`; synchronous, so that calls made one after another share one connection. */
function mpConn(target: string, msgpack: Msgpack): MsgpackConn {
  const old = mpConns.get(target);
  if (old && !old.closed) return old;
  const i = target.lastIndexOf(':');
  const socket = connect({ host: target.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(target.slice(i + 1)) });
  const c: MsgpackConn = { socket, pending: new Map(), closed: false };
  const fail = (msg: string): void => {
    if (c.closed) return;
    c.closed = true;
    if (mpConns.get(target) === c) mpConns.delete(target);
    for (const p of c.pending.values()) p({ error: msg });
    c.pending.clear();
    socket.destroy();
  };
  socket.on('error', (e) => fail(e.message));
  socket.on('close', () => fail('connection closed'));
  void (async () => {
    try {
      for await (const m of msgpack.decodeMultiStream<undefined>(socket, { useBigInt64: true })) {
        if (!Array.isArray(m) || m[0] !== 1) continue;
        const p = c.pending.get(m[1] as number);
        if (!p) continue;
        c.pending.delete(m[1] as number);
        const error: unknown = m[2];
        if (error !== null && error !== undefined)
          p({ status: 1, contentType: '', body: Buffer.from(typeof error === 'string' ? error : String(error)) });
        else p({ status: 0, contentType: '', body: Buffer.alloc(0), value: m[3] });
      }
    } catch (e) {
      fail(`invalid msgpack-rpc reply: ${errText(e)}`);
    }
  })();
  mpConns.set(target, c);
  return c;
}

async function doMsgpack(id: number, c: MsgpackCall): Promise<void> {
  const msgpack = await msgpackModule();
  const conn = mpConn(c.target, msgpack);
  const msgid = nextMsgId++ & 0x7fffffff;
  const timer = setTimeout(() => {
    if (conn.pending.delete(msgid)) answer(id, { error: `timeout after ${c.timeoutMs}ms` });
  }, c.timeoutMs);
  conn.pending.set(msgid, (r) => {
    clearTimeout(timer);
    answer(id, r);
  });
  conn.socket.write(msgpack.encode([0, msgid, c.method, c.params], { useBigInt64: true }));
}

port.on('message', ({ id, call }: { id: number; call: RemoteCall }) => {
  const fail = (e: unknown): void => answer(id, { error: errText(e) });
  try {
    if (call.kind === 'grpc') doGrpc(id, call).catch(fail);
    else if (call.kind === 'msgpack') doMsgpack(id, call).catch(fail);
    else doHttp(id, call);
  } catch (e) {
    fail(e);
  }
});
