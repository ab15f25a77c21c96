/**
 * Eddy cluster nodes as child processes (docs/cluster.md §1), each on a home of its own, joined through a backend of
 * the test's own (a nats-server, a NATS cluster, or Redis at 6379 under a unique cluster name), with a short lease
 * timeout so that failovers take seconds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEddyProcess, type EddyProcess } from './eddy-process.js';
import { waitFor } from './process.js';

export interface ClusterSpec {
  backend: 'nats' | 'redis';
  /** cluster name: unique per test */
  name: string;
  /** comma-separated NATS client URLs (nats backend) */
  natsUrls?: string;
  /** nats.replicas */
  replicas?: number;
  /** Redis port (redis backend; default 6379, or a proxy's) */
  redisPort?: number;
  leaseTimeoutMs?: number;
  /** environment every node gets (MQTT defaults, workers…) */
  env?: Record<string, string>;
}

export interface ClusterNode extends EddyProcess {
  readonly id: string;
  readonly home: string;
}

interface ClusterListEntry {
  id: string;
  status: string;
  node?: string;
}

/** The environment of node `id` of a cluster (`overrides` win, e.g. a proxied backend address for one node). */
export function clusterEnv(
  spec: ClusterSpec,
  id: string,
  overrides: Record<string, string> = {},
): Record<string, string> {
  return {
    KUIPER__CLUSTER__BACKEND: spec.backend,
    KUIPER__CLUSTER__NAME: spec.name,
    KUIPER__CLUSTER__NODEID: id,
    KUIPER__CLUSTER__LEASETIMEOUT: String(spec.leaseTimeoutMs ?? 3000),
    ...(spec.natsUrls ? { KUIPER__CLUSTER__NATS__SERVERS: spec.natsUrls } : {}),
    ...(spec.replicas ? { KUIPER__CLUSTER__NATS__REPLICAS: String(spec.replicas) } : {}),
    ...(spec.redisPort ? { KUIPER__STORE__REDIS__PORT: String(spec.redisPort) } : {}),
    // rules on each node's main thread: three processes with worker threads weigh on the suite's machine (a test that
    // wants workers sets them in `spec.env`, as the NATS failover does)
    KUIPER__BASIC__WORKERS: 'none',
    ...spec.env,
    ...overrides,
  };
}

/** Starts node `id` on `home` (a new one when not given). */
export async function startClusterNode(
  spec: ClusterSpec,
  id: string,
  home = mkdtempSync(join(tmpdir(), `eddy-${id}-`)),
  overrides: Record<string, string> = {},
): Promise<ClusterNode> {
  const p = await startEddyProcess(home, clusterEnv(spec, id, overrides));
  return Object.assign(p, { id, home });
}

/** Starts nodes `ids` together and waits until each sees all of them alive. */
export async function startCluster(spec: ClusterSpec, ids: readonly string[]): Promise<ClusterNode[]> {
  const started = await Promise.allSettled(ids.map((id) => startClusterNode(spec, id)));
  const nodes = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  try {
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    await waitFor(
      async () => {
        for (const n of nodes) if ((await aliveNodes(n)).join() !== [...ids].sort().join()) return false;
        return true;
      },
      30_000,
      'every node to see every node alive',
    );
    return nodes;
  } catch (err) {
    // a cluster that did not come up leaves no process behind
    await stopCluster(nodes);
    throw err;
  }
}

/** The ids of the nodes `n` sees alive, sorted. */
export async function aliveNodes(n: EddyProcess): Promise<string[]> {
  const view = (await n.req('GET', '/cluster')).json() as { nodes: Array<{ id: string; alive: boolean }> };
  return view.nodes
    .filter((x) => x.alive)
    .map((x) => x.id)
    .sort();
}

/** `GET /rules` of a node. */
export async function listRules(n: EddyProcess): Promise<ClusterListEntry[]> {
  return (await n.req('GET', '/rules')).json() as ClusterListEntry[];
}

/** Rule id → the node running it and its status, as node `n` lists them. */
export async function placement(n: EddyProcess): Promise<Map<string, { node: string; status: string }>> {
  return new Map((await listRules(n)).map((r) => [r.id, { node: r.node ?? '', status: r.status }]));
}

/** Waits until node `n` lists every rule of `ids` as running on a node (other than `not`, when given). */
export async function waitAllRunning(
  n: EddyProcess,
  ids: readonly string[],
  deadlineMs: number,
  not?: string,
): Promise<Map<string, { node: string; status: string }>> {
  let last = new Map<string, { node: string; status: string }>();
  await waitFor(
    async () => {
      last = await placement(n);
      return ids.every((id) => {
        const p = last.get(id);
        return p !== undefined && p.status === 'Running' && p.node !== '' && p.node !== not;
      });
    },
    deadlineMs,
    `rules ${ids.join(',')} running${not ? ` away from ${not}` : ''}`,
    100,
  );
  return last;
}

/** Stops the nodes still running (SIGTERM) and removes their homes. */
export async function stopCluster(nodes: readonly ClusterNode[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)));
  for (const n of nodes) rmSync(n.home, { recursive: true, force: true });
}
