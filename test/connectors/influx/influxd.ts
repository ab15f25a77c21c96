/**
 * A real InfluxDB 1.x for the influx sink tests: the server at INFLUX_URL (default http://127.0.0.1:8086) when it
 * answers /ping, else an `influxd` started on a temporary folder and ephemeral ports, stopped by `close`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../e2-helpers.js';

export interface Influx {
  url: string;
  /** runs InfluxQL through /query; returns the parsed answer */
  query(q: string, db?: string): Promise<InfluxAnswer>;
  close(): Promise<void>;
}

export interface InfluxAnswer {
  results: Array<{
    series?: Array<{ name: string; columns: string[]; values: unknown[][]; tags?: Record<string, string> }>;
    error?: string;
  }>;
}

async function pings(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/ping`, { signal: AbortSignal.timeout(2000) });
    return res.status === 204;
  } catch {
    return false;
  }
}

function client(url: string, close: () => Promise<void>): Influx {
  return {
    url,
    async query(q, db) {
      const params = new URLSearchParams({ q, epoch: 'ms' });
      if (db) params.set('db', db);
      const res = await fetch(`${url}/query`, { method: 'POST', body: params });
      return (await res.json()) as InfluxAnswer;
    },
    close,
  };
}

export async function influx(): Promise<Influx> {
  const shared = process.env.INFLUX_URL ?? 'http://127.0.0.1:8086';
  if (await pings(shared)) return client(shared, async () => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'eddy-influxd-'));
  const httpPort = await freePort();
  const rpcPort = await freePort();
  const conf = [
    'reporting-disabled = true',
    `bind-address = "127.0.0.1:${rpcPort}"`,
    '[meta]',
    `  dir = "${dir}/meta"`,
    '[data]',
    `  dir = "${dir}/data"`,
    `  wal-dir = "${dir}/wal"`,
    '  query-log-enabled = false',
    '[http]',
    `  bind-address = "127.0.0.1:${httpPort}"`,
    '  log-enabled = false',
    '[monitor]',
    '  store-enabled = false',
  ].join('\n');
  writeFileSync(join(dir, 'influxdb.conf'), conf);
  const proc: ChildProcess = spawn('influxd', ['-config', join(dir, 'influxdb.conf')], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${httpPort}`;
  const end = Date.now() + 30_000;
  while (!(await pings(url))) {
    if (Date.now() > end || proc.exitCode !== null) {
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error('influxd did not start');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return client(url, async () => {
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
    });
    rmSync(dir, { recursive: true, force: true });
  });
}
