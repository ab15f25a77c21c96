/**
 * The `cluster` section of kuiper.yaml (docs/cluster.md §1), `KUIPER__CLUSTER__…` in the environment. Cluster mode is
 * off unless `backend` names one; everything else has a default.
 */
import { hostname } from 'node:os';
import type { EddyConfig } from '../config/index.js';
import { parseGoDuration } from '../rules/schedule.js';

export interface ClusterSettings {
  backend: 'nats' | 'redis';
  /** prefixes every bucket and key: several clusters may share one NATS or Redis */
  name: string;
  /** this node's id; empty until the REST port is known (then `<host name>:<port>`) */
  nodeId: string;
  /** the REST address other nodes forward requests to; empty: derived from `basic.restIp` and the port */
  rest: string;
  /** a node whose heartbeat is older than this is dead, and its rules move */
  leaseTimeoutMs: number;
  nats: { servers: string[]; replicas: number };
  /** the Redis backend uses the settings of `store.redis` */
  redis: { host: string; port: number; password: string; db: number };
}

const DEFAULT_LEASE_TIMEOUT_MS = 10_000;
/** Heartbeats go out every quarter of the lease: below this the machine's own pauses would look like deaths. */
const MIN_LEASE_TIMEOUT_MS = 1000;

function text(v: unknown, fallback: string): string {
  return typeof v === 'string' ? v.trim() : typeof v === 'number' ? String(v) : fallback;
}

/** `leaseTimeout`: milliseconds, or a Go duration such as `10s`. */
function duration(v: unknown): number {
  if (v === undefined || v === null || v === '') return DEFAULT_LEASE_TIMEOUT_MS;
  const ms = typeof v === 'number' ? v : /^\d+$/.test(String(v).trim()) ? Number(v) : parseGoDuration(String(v));
  if (ms === undefined || !Number.isFinite(ms)) throw new Error(`cluster.leaseTimeout ${String(v)} is not a duration`);
  if (ms < MIN_LEASE_TIMEOUT_MS) throw new Error(`cluster.leaseTimeout must be at least ${MIN_LEASE_TIMEOUT_MS} ms`);
  return ms;
}

/** One server list from a YAML list, an environment list `[a,b]`, or a comma-separated text. */
function servers(v: unknown): string[] {
  const list = Array.isArray(v) ? v : typeof v === 'string' ? v.split(',') : [];
  const out = list.map((s) => String(s).trim()).filter((s) => s !== '');
  return out.length > 0 ? out : ['nats://127.0.0.1:4222'];
}

/** The cluster settings, or undefined for a single node; throws with the offending key when they cannot be used. */
export function clusterSettings(config: EddyConfig): ClusterSettings | undefined {
  const raw = (config.raw.cluster ?? {}) as Record<string, unknown>;
  const backend = text(raw.backend, '').toLowerCase();
  if (backend === '') return undefined;
  if (backend !== 'nats' && backend !== 'redis')
    throw new Error(`cluster.backend must be nats or redis, got ${backend}`);
  const name = text(raw.name, 'eddy') || 'eddy';
  // bucket names (NATS) allow only these; Redis keys would take anything, but one rule for both keeps names portable
  if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new Error(`cluster.name ${name} may hold only letters, digits, _ and -`);
  const nats = (raw.nats ?? {}) as Record<string, unknown>;
  const replicas = Number(nats.replicas ?? 1);
  if (!Number.isInteger(replicas) || replicas < 1) throw new Error('cluster.nats.replicas must be a positive integer');
  const r = config.store?.redis ?? { host: '127.0.0.1', port: 6379, password: '', timeout: 1000 };
  return {
    backend,
    name,
    nodeId: text(raw.nodeId, ''),
    rest: text(raw.rest, '').replace(/\/+$/, ''),
    leaseTimeoutMs: duration(raw.leaseTimeout),
    nats: { servers: servers(nats.servers), replicas },
    redis: {
      host: r.host || '127.0.0.1',
      port: Number(r.port) || 6379,
      password: r.password ?? '',
      db: Number(r.db ?? 0) || 0,
    },
  };
}

/** Fills in what depends on the REST port: the node id (`<host name>:<port>`) and the REST address. */
export function settle(settings: ClusterSettings, config: EddyConfig, port: number): ClusterSettings {
  const host = config.basic.restIp && config.basic.restIp !== '0.0.0.0' ? config.basic.restIp : hostname();
  return {
    ...settings,
    nodeId: settings.nodeId || `${hostname()}:${port}`,
    rest: settings.rest || `http://${host}:${port}`,
  };
}
