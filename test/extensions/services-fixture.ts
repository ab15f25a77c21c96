/**
 * Test fixture for external services: a REST, a gRPC and a msgpack-rpc service, all run in a worker thread (kept off
 * the engine's thread so that their own work never competes with it), and service archives built with adm-zip.
 */
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import AdmZip from 'adm-zip';

export const HELLO_PROTO = `syntax = "proto3";
package demo;
import "google/api/annotations.proto";
import "google/protobuf/wrappers.proto";
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {
    option (google.api.http) = { post: "/v1/greet/{name}" body: "*" };
  }
  rpc Echo (EchoRequest) returns (EchoReply) {}
  rpc Upper (google.protobuf.StringValue) returns (google.protobuf.StringValue) {}
  rpc Fail (HelloRequest) returns (HelloReply) {}
}
message HelloRequest { string name = 1; int32 times = 2; }
message HelloReply { string message = 1; }
message EchoRequest { string user_name = 1; int64 big = 2; double ratio = 3; repeated string tags = 4; }
message EchoReply { string user_name = 1; int64 big = 2; double ratio = 3; repeated string tags = 4; int32 count = 5; }
`;

// Runs in the worker: the REST service answers every path with what it received (and a few fixed routes); the gRPC
// service implements Greeter with protobufjs messages.
const SERVICES_SOURCE = String.raw`
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const grpc = require(workerData.grpcPath);
const protobuf = require(workerData.protobufPath);
const msgpack = require(workerData.msgpackPath);
const net = require('node:net');
const root = new protobuf.Root();
protobuf.parse(workerData.proto, root, { keepCase: true });
root.addJSON(protobuf.common.get('google/protobuf/wrappers.proto').nested);
root.resolveAll();
const T = (n) => root.lookupType(n);
const rest = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    const send = (status, type, text) => { res.writeHead(status, { 'content-type': type }); res.end(text); };
    if (req.url.startsWith('/v1/greet/')) {
      const b = JSON.parse(body || '{}');
      return send(200, 'application/json', JSON.stringify({ message: req.method + ' ' + decodeURIComponent(req.url.slice(10)) + ' x' + b.times + ' keys=' + Object.keys(b).join(',') }));
    }
    if (req.url === '/Echo') {
      const b = JSON.parse(body);
      return send(200, 'application/json', JSON.stringify({ ...b, count: 7 }));
    }
    if (req.url === '/Upper') return send(200, 'text/plain', body.toUpperCase());
    if (req.url === '/Fail') return send(500, 'text/plain', 'backend exploded');
    if (req.url.endsWith('/text')) return send(200, 'text/plain', 'plain ' + req.method);
    send(200, 'application/json', JSON.stringify({ method: req.method, url: req.url, body: body === '' ? null : JSON.parse(body), key: req.headers['x-key'] || null }));
  });
});
const server = new grpc.Server();
const unary = (name, reqT, resT, fn) => ({
  path: '/demo.Greeter/' + name, requestStream: false, responseStream: false,
  requestSerialize: (m) => Buffer.from(reqT.encode(m).finish()), requestDeserialize: (b) => reqT.toObject(reqT.decode(b), { longs: String, defaults: true }),
  responseSerialize: (m) => Buffer.from(resT.encode(resT.fromObject(m)).finish()), responseDeserialize: (b) => resT.decode(b),
  fn,
});
const defs = {
  SayHello: unary('SayHello', T('demo.HelloRequest'), T('demo.HelloReply'), (r) => ({ message: 'grpc hello ' + r.name + ' x' + r.times })),
  Echo: unary('Echo', T('demo.EchoRequest'), T('demo.EchoReply'), (r) => ({ ...r, count: r.tags.length })),
  Upper: unary('Upper', T('google.protobuf.StringValue'), T('google.protobuf.StringValue'), (r) => ({ value: r.value.toUpperCase() })),
  Fail: unary('Fail', T('demo.HelloRequest'), T('demo.HelloReply'), () => { const e = new Error('no luck'); e.code = grpc.status.FAILED_PRECONDITION; throw e; }),
};
const impl = {};
for (const [k, d] of Object.entries(defs)) impl[k] = (call, cb) => { try { cb(null, d.fn(call.request)); } catch (e) { cb({ code: e.code, details: e.message }); } };
server.addService(Object.fromEntries(Object.entries(defs).map(([k, d]) => [k, d])), impl);
// msgpack-rpc: [0, msgid, method, params] → [1, msgid, error, result]
const mpSockets = new Set();
const mp = net.createServer((socket) => {
  mpSockets.add(socket);
  socket.on('close', () => mpSockets.delete(socket));
  socket.on('error', () => {});
  (async () => {
    for await (const m of msgpack.decodeMultiStream(socket, { useBigInt64: true })) {
      const [, msgid, method, params] = m;
      let error = null, result = null;
      if (method === 'SayHello') result = { message: 'msgpack hello ' + params[0] + ' x' + params[1] };
      else if (method === 'Echo') result = { ...params[0], count: params[0].tags.length };
      else if (method === 'Upper') result = String(params[0]).toUpperCase();
      else error = 'no luck with ' + method + ' ' + JSON.stringify(params);
      socket.write(msgpack.encode([1, msgid, error, result], { useBigInt64: true }));
    }
  })().catch(() => {});
});
rest.listen(0, '127.0.0.1', () => {
  mp.listen(0, '127.0.0.1', () => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, grpcPort) => {
      if (err) throw err;
      parentPort.postMessage({ restPort: rest.address().port, grpcPort, msgpackPort: mp.address().port });
    });
  });
});
parentPort.on('message', (m) => {
  if (m === 'stop') { rest.close(); mp.close(); for (const s of mpSockets) s.destroy(); server.forceShutdown(); parentPort.close(); }
});
`;

export interface Services {
  restUrl: string;
  grpcAddr: string;
  msgpackAddr: string;
  stop(): Promise<void>;
}

export async function startServices(): Promise<Services> {
  const req = createRequire(import.meta.url);
  const worker = new Worker(SERVICES_SOURCE, {
    eval: true,
    execArgv: [],
    workerData: {
      grpcPath: req.resolve('@grpc/grpc-js'),
      protobufPath: req.resolve('protobufjs'),
      msgpackPath: req.resolve('@msgpack/msgpack'),
      proto: HELLO_PROTO,
    },
  });
  const ports = await new Promise<{ restPort: number; grpcPort: number; msgpackPort: number }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    restUrl: `http://127.0.0.1:${ports.restPort}`,
    grpcAddr: `tcp://127.0.0.1:${ports.grpcPort}`,
    msgpackAddr: `tcp://127.0.0.1:${ports.msgpackPort}`,
    async stop() {
      worker.postMessage('stop');
      await new Promise((r) => setTimeout(r, 50));
      await worker.terminate();
    },
  };
}

/** A folder for archives, removed by `dispose`. */
export class ArchiveDir {
  readonly dir = mkdtempSync(join(tmpdir(), 'eddy-svc-zip-'));
  private n = 0;

  /** Writes a zip of `files` (path → text) and returns its file:// URL. */
  zip(files: Record<string, string>): string {
    const zip = new AdmZip();
    for (const [path, text] of Object.entries(files)) zip.addFile(path, Buffer.from(text));
    const file = join(this.dir, `a${this.n++}.zip`);
    writeFileSync(file, zip.toBuffer());
    return pathToFileURL(file).href;
  }

  /** Writes raw bytes (e.g. a crafted zip) and returns its file:// URL. */
  raw(bytes: Buffer): string {
    const file = join(this.dir, `r${this.n++}.zip`);
    writeFileSync(file, bytes);
    return pathToFileURL(file).href;
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
