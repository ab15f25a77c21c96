/**
 * Shared pieces of the connector tests: a quiet context, a real connectors service on a temporary home, an
 * HTTP server on an ephemeral port that records what it receives, and polling helpers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { ConnectorContext, RuleOptions, SinkContext, SinkNode } from '../../src/contracts/index.js';
import { Connectors } from '../../src/connectors/index.js';
import { loadConfig, prepareHome, resolveHome } from '../../src/config/index.js';
import { SqliteStore } from '../../src/store/index.js';
import { renderTemplate } from '../../src/template/index.js';
import { DEFAULT_RULE_OPTIONS } from '../../src/config/index.js';

export const logger = pino({ level: 'silent' });

export function ctx(dataDir = tmpdir()): SinkContext & ConnectorContext {
  return { ruleId: 'test', logger, dataDir, render: (t, d) => renderTemplate(t, d) };
}

export function tempDir(prefix = 'eddy-e2-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A real connectors service (registry, data server on port 0, sink nodes) on a temporary home. */
export async function connectorsService(): Promise<{ conns: Connectors; close: () => Promise<void> }> {
  const t = tempDir('eddy-e2-home-');
  const home = resolveHome(t.dir);
  prepareHome(home);
  const env = { KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1', KUIPER__SOURCE__HTTPSERVERPORT: '0' };
  const config = loadConfig(home, env);
  const store = new SqliteStore(join(home.data, 'test.db'));
  const conns = await Connectors.create({ home, config, env, store, logger });
  return {
    conns,
    close: async () => {
      await conns.close();
      await store.close();
      t.remove();
    },
  };
}

export const ruleOptions: RuleOptions = { ...DEFAULT_RULE_OPTIONS, cronDatetimeRange: [] };

export function sinkNode(
  conns: Connectors,
  type: string,
  props: Record<string, unknown>,
  ruleId = 'r' + Math.random().toString(36).slice(2),
): SinkNode {
  return conns.createSinkNode({ ruleId, index: 0, type, props, ruleOptions, logger });
}

export interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** An HTTP server on 127.0.0.1:<ephemeral> recording requests; `reply` decides each answer. */
export async function recordingServer(
  reply: (r: Received, res: ServerResponse) => void = (_r, res) => res.writeHead(200).end('{"code":200}'),
  port = 0,
): Promise<{ url: string; port: number; received: Received[]; server: Server; close: () => Promise<void> }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      received.push(r);
      reply(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const p = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${p}`,
    port: p,
    received,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls `cond` every 20 ms until true or `timeoutMs` passes (then throws with `what`); the default leaves room for a loaded machine. */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A port nothing listens on (bound then released). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
