/**
 * Warm start: `node scripts/start.mjs` on a home holding 1,000 stored rules (all started at boot), timed from the
 * spawn to the first 200 of `GET /ping`, and to the moment every rule reports running. The compiled server is
 * current (the build step is a fingerprint check), which is what every start after the first one sees.
 * Wall time on a shared machine: the median of 5 starts, with the spread.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { startServer } from '../src/server.js';

const RULES = Number(process.env.EDDY_BENCH_RULES ?? 1000);
const STARTS = 5;

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'scripts', 'start.mjs'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find scripts/start.mjs');
    dir = up;
  }
  return dir;
}

const env = (home: string, port: number): NodeJS.ProcessEnv => ({
  ...process.env,
  EDDY_HOME: home,
  KUIPER__BASIC__RESTIP: '127.0.0.1',
  KUIPER__BASIC__RESTPORT: String(port),
  KUIPER__BASIC__CONSOLELOG: 'false',
  KUIPER__BASIC__FILELOG: 'false',
  KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
  KUIPER__SOURCE__HTTPSERVERPORT: '0',
});

async function seed(home: string): Promise<void> {
  const server = await startServer({ home, env: env(home, 0) });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(server.url + path, { method: 'POST', body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  };
  await post('/streams', {
    sql: 'CREATE STREAM benchstart (a BIGINT, b FLOAT) WITH (TYPE="memory", DATASOURCE="bench/startup", FORMAT="json", SHARED="true")',
  });
  for (let i = 0; i < RULES; i++) {
    await post('/rules', {
      id: `start${i}`,
      sql: `SELECT a, b * 2 AS c FROM benchstart WHERE a > ${i}`,
      actions: [{ nop: {} }],
    });
  }
  await server.close();
}

async function until(cond: () => Promise<boolean>, deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (await cond().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('condition not met before the deadline');
}

async function oneStart(
  root: string,
  home: string,
  port: number,
  viaNpm = false,
): Promise<{ ping: number; running: number }> {
  const t0 = performance.now();
  const child: ChildProcess = viaNpm
    ? spawn('npm', ['start', '--silent'], {
        cwd: root,
        env: env(home, port),
        stdio: process.env.EDDY_BENCH_VERBOSE ? 'inherit' : 'ignore',
        detached: true,
      })
    : spawn(process.execPath, [join(root, 'scripts', 'start.mjs')], {
        env: env(home, port),
        stdio: process.env.EDDY_BENCH_VERBOSE ? 'inherit' : 'ignore',
      });
  try {
    const base = `http://127.0.0.1:${port}`;
    await until(async () => (await fetch(`${base}/ping`)).status === 200, 60_000);
    const ping = performance.now() - t0;
    await until(async () => {
      const rules = (await (await fetch(`${base}/rules`)).json()) as Array<{ status: string }>;
      return rules.length === RULES && rules.every((r) => r.status === 'Running');
    }, 120_000);
    return { ping, running: performance.now() - t0 };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    // npm runs the server in a child of its own: the whole process group is stopped
    if (child.exitCode === null && child.signalCode === null) {
      if (viaNpm) process.kill(-child.pid!, 'SIGTERM');
      else child.kill('SIGTERM');
      await exited;
    }
    // the next start must not find this server still answering (npm exits before its child has closed)
    await until(
      async () =>
        !(await fetch(`http://127.0.0.1:${port}/ping`).then(
          () => true,
          () => false,
        )),
      60_000,
    );
  }
}

const fmt = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${(s[Math.floor(s.length / 2)] / 1000).toFixed(2)} s (min ${(s[0] / 1000).toFixed(2)}, max ${(s[s.length - 1] / 1000).toFixed(2)})`;
};

export async function run(): Promise<Record<string, string | number>> {
  const root = repoRoot();
  const home = mkdtempSync(join(tmpdir(), 'eddy-bench-start-'));
  try {
    await seed(home);
    const port = 20000 + Math.floor(Math.random() * 20000);
    const pings: number[] = [];
    const running: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      const r = await oneStart(root, home, port + i);
      pings.push(r.ping);
      running.push(r.running);
    }
    const npmPings: number[] = [];
    for (let i = 0; i < 3; i++) npmPings.push((await oneStart(root, home, port + STARTS + i, true)).ping);
    return {
      [`warm start to GET /ping, ${RULES} stored rules (median of ${STARTS})`]: fmt(pings),
      [`same through \`npm start\` (median of 3)`]: fmt(npmPings),
      [`warm start until all ${RULES} rules run`]: fmt(running),
      'target (ping)': '≤ 3 s',
    };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
