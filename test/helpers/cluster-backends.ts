/**
 * The two cluster backends as test subjects (docs/cluster.md §2): NATS JetStream on a nats-server of the test file's
 * own, Redis on the shared server at 6379 — each test under a cluster name of its own, so buckets and keys never
 * collide. Suites that must hold for both backends loop over {@link BACKEND_SUBJECTS}.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Redis } from 'ioredis';
import type { ClusterBackend } from '../../src/cluster/backend.js';
import { openNatsBackend } from '../../src/cluster/nats-backend.js';
import { openRedisBackend } from '../../src/cluster/redis-backend.js';
import { startNatsServer, type TestNatsServer } from './nats-server.js';
import type { TcpProxy } from './tcpproxy.js';

export const silentLogger = pino({ level: 'silent' });

export interface BackendSubject {
  kind: 'nats' | 'redis';
  open(name: string): Promise<ClusterBackend>;
  /** opens a backend whose connection goes through `proxy` (started on {@link port}) */
  openVia(name: string, proxy: TcpProxy): Promise<ClusterBackend>;
  /** the backend server's port */
  port(): number;
  /** drops what a cluster name left in the backend */
  cleanup(name: string): Promise<void>;
}

let nats: TestNatsServer | undefined;

function natsUrl(): string {
  if (!nats) throw new Error('startBackendServers() was not called');
  return nats.url;
}

/** Starts the NATS server of this test file (call from `before`). */
export async function startBackendServers(): Promise<void> {
  nats = await startNatsServer();
}

/** Stops it (call from `after`). */
export async function stopBackendServers(): Promise<void> {
  await nats?.stop();
  nats = undefined;
}

export const BACKEND_SUBJECTS: readonly BackendSubject[] = [
  {
    kind: 'nats',
    open: (name) =>
      openNatsBackend({ name, servers: [natsUrl()], replicas: 1, logger: silentLogger, journalStaleMs: 300 }),
    openVia: (name, proxy) =>
      openNatsBackend({
        name,
        servers: [`nats://127.0.0.1:${proxy.port}`],
        replicas: 1,
        logger: silentLogger,
        journalStaleMs: 300,
      }),
    port: () => nats?.port ?? 0,
    cleanup: async () => undefined,
  },
  {
    kind: 'redis',
    open: (name) => openRedisBackend({ name, host: '127.0.0.1', port: 6379, logger: silentLogger }),
    openVia: (name, proxy) => openRedisBackend({ name, host: '127.0.0.1', port: proxy.port, logger: silentLogger }),
    port: () => 6379,
    cleanup: async (name) => {
      const r = new Redis({ host: '127.0.0.1', port: 6379 });
      const keys = await r.keys(`${name}:*`);
      if (keys.length > 0) await r.del(...keys);
      await r.quit();
    },
  },
];

/** A cluster name of its own for each test. */
export function uniqueClusterName(): string {
  return `t${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

/** Runs `fn` with a backend on a fresh cluster name, then closes it and drops what it left. */
export async function withBackend(
  s: BackendSubject,
  fn: (b: ClusterBackend, name: string) => Promise<void>,
): Promise<void> {
  const name = uniqueClusterName();
  const b = await s.open(name);
  try {
    await fn(b, name);
  } finally {
    await b.close();
    await s.cleanup(name);
  }
}
