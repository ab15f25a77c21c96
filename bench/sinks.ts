/**
 * Sink benchmarks, each next to a hand-written program doing the same I/O in the same run:
 *  1. rest sink (sink node: transform, JSON encode, one POST per row) against a loop of plain `fetch` POSTs of the
 *     same bodies, both to one local HTTP server;
 *  2. file sink (`lines`, one row per item) against plain `FileHandle.write` appends of the same lines.
 * Figures are rows per second; the ratio is sink / plain (1 = no overhead).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { loadConfig, prepareHome, resolveHome } from '../src/config/index.js';
import { SqliteStore } from '../src/store/index.js';
import { Connectors } from '../src/connectors/index.js';
import type { RuleOptions, SinkNode } from '../src/contracts/index.js';
import type { ValueObject } from '../src/values/value.js';
import { DEFAULT_RULE_OPTIONS } from '../src/config/index.js';

const REST_ROWS = 3000;
const FILE_ROWS = 200000;

const ruleOptions: RuleOptions = { ...DEFAULT_RULE_OPTIONS, cronDatetimeRange: [] };

function rowsOf(n: number): ValueObject[] {
  const rows: ValueObject[] = new Array(n);
  for (let i = 0; i < n; i++) rows[i] = { deviceId: `d${i % 100}`, temperature: 20 + (i % 50) / 2, seq: i };
  return rows;
}

async function waitUntil(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

/** Feeds rows the way a rule does: small triggers, never far ahead of what the sink has sent. */
async function feed(node: SinkNode, rows: ValueObject[], chunk: number): Promise<void> {
  for (let i = 0; i < rows.length; i += chunk) {
    node.push(rows.slice(i, i + chunk));
    await waitUntil(() => node.metrics.recordsOut + node.metrics.exceptions >= i);
  }
  await waitUntil(() => node.metrics.recordsOut + node.metrics.exceptions >= rows.length);
}

function rate(n: number, ms: number): number {
  return Math.round((n / ms) * 1000);
}

export async function run(): Promise<Record<string, string | number>> {
  const logger = pino({ level: 'silent' });
  const root = mkdtempSync(join(tmpdir(), 'eddy-bench-sinks-'));
  const home = resolveHome(root);
  prepareHome(home);
  const env = { KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1', KUIPER__SOURCE__HTTPSERVERPORT: '0' };
  const store = new SqliteStore(join(home.data, 'bench.db'));
  const conns = await Connectors.create({ home, config: loadConfig(home, env), env, store, logger });
  const node = (type: string, props: Record<string, unknown>): SinkNode =>
    conns.createSinkNode({ ruleId: 'bench', index: 0, type, props, ruleOptions, logger });
  const out: Record<string, string | number> = {};

  // ---------------------------------------------------------------------------------------------- rest
  let received = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ingest`;
  const restRows = rowsOf(REST_ROWS);

  // plain: the same JSON bodies POSTed one after the other (after a warm-up of the client and server)
  const bodies = restRows.map((r) => JSON.stringify(r, Object.keys(r).sort()));
  for (let i = 0; i < 300; i++) await (await fetch(url, { method: 'POST', body: bodies[i] })).arrayBuffer();
  const plainLoop = async (): Promise<number> => {
    const t = performance.now();
    for (const b of bodies) {
      const res = await fetch(url, { method: 'POST', body: b, headers: { 'Content-Type': 'application/json' } });
      await res.arrayBuffer();
    }
    return performance.now() - t;
  };
  // the machine is shared: the plain loop runs before and after the sink, and its faster run is kept
  let plainRestMs = await plainLoop();
  let t0: number;

  const rest = node('rest', { url, method: 'post', sendSingle: true });
  await rest.open();
  received = 0;
  t0 = performance.now();
  await feed(rest, restRows, 100);
  const sinkRestMs = performance.now() - t0;
  await rest.close();
  const sinkReceived = received;
  plainRestMs = Math.min(plainRestMs, await plainLoop());
  await new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  });
  out['rest rows received by the server (sink run)'] = sinkReceived;
  out['rest sink rows/s (one POST per row)'] = rate(REST_ROWS, sinkRestMs);
  out['plain fetch POST loop rows/s'] = rate(REST_ROWS, plainRestMs);
  out['rest sink / plain'] = (plainRestMs / sinkRestMs).toFixed(2);
  out['rest sink exceptions'] = rest.metrics.exceptions;

  // ---------------------------------------------------------------------------------------------- file
  const fileRows = rowsOf(FILE_ROWS);
  const plainPath = join(root, 'plain.txt');
  // the sink writes Go JSON (sorted keys): the plain program writes the same text
  const lines = fileRows.map((r) => JSON.stringify(r, Object.keys(r).sort()));
  t0 = performance.now();
  const fh = await open(plainPath, 'w');
  for (let i = 0; i < lines.length; i++) await fh.write(i ? '\n' + lines[i] : lines[i]);
  await fh.close();
  const plainFileMs = performance.now() - t0;

  const sinkPath = join(root, 'sink.txt');
  const file = node('file', { path: sinkPath, sendSingle: true, rollingCount: FILE_ROWS * 2 });
  await file.open();
  t0 = performance.now();
  await feed(file, fileRows, 500);
  await file.close();
  const sinkFileMs = performance.now() - t0;
  const a = readFileSync(sinkPath);
  const b = readFileSync(plainPath);
  const same = a.equals(b);
  if (!same && process.env.EDDY_BENCH_DEBUG)
    console.log(a.subarray(0, 200).toString(), '\n---\n', b.subarray(0, 200).toString(), a.length, b.length);
  out['file sink rows/s (lines)'] = rate(FILE_ROWS, sinkFileMs);
  out['plain FileHandle append rows/s'] = rate(FILE_ROWS, plainFileMs);
  out['file sink / plain'] = (plainFileMs / sinkFileMs).toFixed(2);
  out['file sink output equals plain output'] = same ? 'yes' : 'no';
  out['file sink exceptions'] = file.metrics.exceptions;

  // ---------------------------------------------------------------------------------------------- burst
  // one collection of FILE_ROWS rows pushed at once into a sendSingle sink (a window closing on a large backlog):
  // it takes one queue slot and is sent row by row; nothing may be dropped
  const burstPath = join(root, 'burst.txt');
  const burst = node('file', { path: burstPath, sendSingle: true, rollingCount: FILE_ROWS * 2 });
  await burst.open();
  t0 = performance.now();
  burst.push(fileRows);
  await waitUntil(() => burst.metrics.recordsOut + burst.metrics.exceptions >= FILE_ROWS);
  const burstMs = performance.now() - t0;
  await burst.close();
  out['file sink rows/s (one burst of all rows)'] = rate(FILE_ROWS, burstMs);
  out['burst rows written'] = burst.metrics.recordsOut;
  out['burst exceptions'] = burst.metrics.exceptions;

  await conns.close();
  await store.close();
  rmSync(root, { recursive: true, force: true });
  return out;
}
