/**
 * nats-server instances owned by one test, with JetStream on a store folder of their own and free loopback ports: a
 * single server, or a cluster of three joined by routes (`-cluster`/`-routes`) whose JetStream replicates buckets.
 * Tests never share the system's server on 4222.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitFor } from './process.js';

export interface TestNatsServer {
  readonly port: number;
  readonly url: string;
  /** SIGKILL, as a lost machine */
  kill(): Promise<void>;
  /** starts it again on the same port and store folder */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface TestNatsCluster {
  readonly servers: TestNatsServer[];
  /** every client URL, comma-separated (what `cluster.nats.servers` takes) */
  readonly urls: string;
  stop(): Promise<void>;
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Waits until JetStream answers an account request (in a cluster: once its meta leader is elected). */
async function jetStreamReady(url: string): Promise<void> {
  const { connect: natsConnect } = await import('nats');
  await waitFor(
    async () => {
      try {
        const nc = await natsConnect({ servers: url, timeout: 1000, reconnect: false });
        try {
          await (await nc.jetstreamManager({ timeout: 1000 })).getAccountInfo();
          return true;
        } finally {
          await nc.close();
        }
      } catch {
        return false;
      }
    },
    30_000,
    'JetStream to answer',
    200,
  );
}

async function startOne(args: (port: number, dir: string) => string[], port: number): Promise<TestNatsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-nats-'));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const launch = async () => {
    const c = spawn('nats-server', args(port, dir), { stdio: 'ignore' });
    child = c;
    exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    await waitFor(() => listening(port), 20_000, `nats-server on ${port}`);
  };
  await launch();
  const stopWith = async (signal: NodeJS.Signals) => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    kill: () => stopWith('SIGKILL'),
    restart: launch,
    async stop() {
      await stopWith('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One nats-server with JetStream. */
export async function startNatsServer(): Promise<TestNatsServer> {
  const port = await freePort();
  const s = await startOne((p, dir) => ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(p)], port);
  try {
    await jetStreamReady(s.url);
  } catch (err) {
    await s.stop();
    throw err;
  }
  return s;
}

/** Three nats-servers in one JetStream cluster. */
export async function startNatsCluster(): Promise<TestNatsCluster> {
  const ports = [await freePort(), await freePort(), await freePort()];
  const routes = [await freePort(), await freePort(), await freePort()];
  const name = `eddy-test-${process.pid}-${ports[0]}`;
  const routeList = routes.map((r) => `nats://127.0.0.1:${r}`).join(',');
  const started = await Promise.allSettled(
    ports.map((port, i) =>
      startOne(
        (p, dir) => [
          '-js',
          '-sd',
          dir,
          '-a',
          '127.0.0.1',
          '-p',
          String(p),
          '-n',
          `n${i}-${p}`,
          '--cluster_name',
          name,
          '-cluster',
          `nats://127.0.0.1:${routes[i]}`,
          '-routes',
          routeList,
        ],
        port,
      ),
    ),
  );
  const servers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const urls = servers.map((s) => s.url).join(',');
  try {
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    await jetStreamReady(urls);
  } catch (err) {
    // a cluster that did not come up leaves no server behind
    await Promise.all(servers.map((s) => s.stop()));
    throw err;
  }
  return {
    servers,
    urls,
    async stop() {
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}
