/**
 * REST fuzzing under load: 100,000 random requests (the generator of test/helpers/rest-fuzz.ts: every route, odd ids,
 * garbage, huge and deeply nested bodies) sent by 16 concurrent clients to an Eddy server process on a temporary home.
 * Prints the answers ≥ 500, the unanticipated errors the server logged, whether it stayed up, and its RSS before the
 * requests and after them (once the resources they created are deleted and the server idled 30 s); target: 0 ≥ 500,
 * RSS within 10 % of start. To tell a leak from garbage an idle V8 has no reason to collect, the server process is
 * started with `--expose-gc` (the bench's own child only) and, last, made to run one full collection: the heap's
 * spaces before it and the memory after it are printed. `EDDY_FUZZ_REQUESTS` sets another count.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { startServer } from '../src/server.js';
import { requestArbitrary, routesOf, type FuzzRequest, type RouteSpec } from '../test/helpers/rest-fuzz.js';

const REQUESTS = Number(process.env.EDDY_FUZZ_REQUESTS ?? 100_000);
const CONCURRENCY = 16;
const IDS = ['fz', 'fzt', 'fzr', 'fzf', 'fzk', 'mqtt', 'memory', 'protobuf', 'file', 'json'];

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

/** The routes of the server, read from a short-lived in-process instance. */
async function routes(): Promise<RouteSpec[]> {
  const home = mkdtempSync(join(tmpdir(), 'eddy-fuzz-routes-'));
  const s = await startServer({
    home,
    env: {
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__CONSOLELOG: 'false',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
    },
  });
  try {
    return routesOf(s.app.http);
  } finally {
    await s.close();
    rmSync(home, { recursive: true, force: true });
  }
}

async function startChild(home: string): Promise<{ child: ChildProcess; url: string }> {
  const main = fileURLToPath(new URL('../src/main.js', import.meta.url));
  // a full collection on SIGUSR2: the heap's live size and what a collection gives back are measured, not guessed
  const gcOnSignal =
    "import v8 from 'node:v8'; import fs from 'node:fs'; process.on('SIGUSR2', () => { fs.writeFileSync(process.env.EDDY_HOME + '/spaces.json', JSON.stringify(v8.getHeapSpaceStatistics())); globalThis.gc(); })";
  const child = spawn(process.execPath, ['--expose-gc', '--import', `data:text/javascript,${gcOnSignal}`, main], {
    env: {
      ...process.env,
      EDDY_HOME: home,
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__CONSOLELOG: 'false',
      KUIPER__BASIC__FILELOG: 'true',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.resume();
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /REST API on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', () => reject(new Error(`the server exited before serving: ${out}`)));
  });
  child.stdout!.resume();
  return { child, url };
}

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/** One request over node:http (fetch refuses a body on GET, which eKuiper's routes read); -1 when nothing answered. */
function send(url: string, r: FuzzRequest): Promise<number> {
  return new Promise((resolve) => {
    const target = new URL(url);
    // an explicit length: node's client sends the body of a GET or DELETE unframed otherwise
    const headers =
      r.body === undefined ? r.headers : { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) };
    const req = request(
      { host: target.hostname, port: target.port, method: r.method, path: r.url, headers, agent, timeout: 120_000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? -1));
        res.on('error', () => resolve(res.statusCode ?? -1));
      },
    );
    req.on('error', () => resolve(-1));
    req.on('timeout', () => req.destroy());
    req.end(r.body);
  });
}

/** Deletes every rule, stream, table and JavaScript function, so that what remains is the server's own memory. */
async function cleanup(url: string): Promise<void> {
  const json = async (path: string): Promise<unknown> => (await fetch(url + path)).json();
  for (const r of (await json('/rules')) as Array<{ id: string }>)
    await send(url, { method: 'DELETE', url: `/rules/${encodeURIComponent(r.id)}`, headers: {} });
  for (const kind of ['streams', 'tables']) {
    for (const n of (await json(`/${kind}`)) as string[])
      await send(url, { method: 'DELETE', url: `/${kind}/${encodeURIComponent(n)}`, headers: {} });
  }
  for (const id of (await json('/udf/javascript')) as string[])
    await send(url, { method: 'DELETE', url: `/udf/javascript/${encodeURIComponent(id)}`, headers: {} });
}

/** The server's own memory figures (GET /eddy/server), in MB: rss, heap total, heap used, external, array buffers. */
async function memory(url: string): Promise<string> {
  const doc = (await (await fetch(`${url}/eddy/server`)).json()) as { memory: Record<string, number> };
  const m = doc.memory;
  return [m.rss, m.heapTotal, m.heapUsed, m.external, m.arrayBuffers].map((b) => (b / 2 ** 20).toFixed(1)).join(' / ');
}

/** Resident anonymous memory by mapping: the main heap (brk), other anonymous mappings, file-backed. */
function smaps(pid: number): string {
  let brk = 0;
  let anon = 0;
  let file = 0;
  let big = 0;
  let name = '';
  let size = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      name = head[3];
      size = (parseInt(head[2], 16) - parseInt(head[1], 16)) / 1024;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const kb = Number(rss[1]);
    if (name === '[heap]') brk += kb;
    else if (name === '') {
      anon += kb;
      if (size >= 32 * 1024) big += kb;
    } else file += kb;
  }
  const mb = (kb: number) => (kb / 1024).toFixed(1);
  return `brk ${mb(brk)}, anon ${mb(anon)} (in mappings ≥ 32 MB: ${mb(big)}), file ${mb(file)}`;
}

function unexpectedLogged(home: string): number {
  const dir = join(home, 'log');
  if (!existsSync(dir)) return 0;
  let n = 0;
  for (const f of readdirSync(dir))
    n += (readFileSync(join(dir, f), 'utf8').match(/unexpected error in/g) ?? []).length;
  return n;
}

export async function run(): Promise<Record<string, string | number>> {
  const routeList = await routes();
  const home = mkdtempSync(join(tmpdir(), 'eddy-bench-fuzz-'));
  const { child, url } = await startChild(home);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    await send(url, {
      method: 'POST',
      url: '/streams',
      headers: {},
      body: JSON.stringify({ sql: 'CREATE STREAM fz () WITH (DATASOURCE="fz", TYPE="memory")' }),
    });
    await send(url, {
      method: 'POST',
      url: '/rules',
      headers: {},
      body: JSON.stringify({ id: 'fzr', sql: 'SELECT * FROM fz', actions: [{ nop: {} }] }),
    });
    await new Promise((r) => setTimeout(r, 1000));
    const rssCold = rssKb(child.pid!);
    const statuses = new Map<number, number>();
    const arb = requestArbitrary(routeList, IDS, 200_000);
    let seed = 1;
    const samples: number[] = [];
    const blast = async (count: number, counted: boolean): Promise<void> => {
      let next = 0;
      let batch: FuzzRequest[] = [];
      const take = (): FuzzRequest | undefined => {
        if (next >= count) return undefined;
        if (batch.length === 0) batch = fc.sample(arb, { numRuns: 1000, seed: seed++ });
        next++;
        return batch.pop();
      };
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let r = take(); r !== undefined; r = take()) {
            const status = await send(url, r);
            if (counted) {
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
              if (next % Math.ceil(count / 10) === 0) samples.push(Math.round(rssKb(child.pid!) / 1024));
            }
          }
        }),
      );
    };
    // the start figure is taken once the server has met every kind of request (heap grown to its working size, code
    // compiled), after the same clean-up as at the end: what remains after the 100,000 requests beyond it is a leak
    await blast(Math.min(2000, REQUESTS), false);
    await cleanup(url);
    await new Promise((r) => setTimeout(r, 3000));
    const rssStart = rssKb(child.pid!);
    const memStart = await memory(url);
    const mapsStart = smaps(child.pid!);
    const started = Date.now();
    await blast(REQUESTS, true);
    const seconds = (Date.now() - started) / 1000;
    const alive = child.exitCode === null && (await send(url, { method: 'GET', url: '/ping', headers: {} })) === 200;
    await cleanup(url);
    const idle: number[] = [];
    for (let i = 0; i < 6; i++) {
      await new Promise((r) => setTimeout(r, 5000));
      idle.push(Math.round(rssKb(child.pid!) / 1024));
    }
    const rssEnd = rssKb(child.pid!);
    const memEnd = await memory(url);
    const mapsEnd = smaps(child.pid!);
    child.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 3000));
    const rssGc = rssKb(child.pid!);
    const spaces = (
      JSON.parse(readFileSync(join(home, 'spaces.json'), 'utf8')) as Array<Record<string, number | string>>
    )
      .map(
        (sp) =>
          `${sp.space_name} ${(Number(sp.space_size) / 2 ** 20).toFixed(1)}/${(Number(sp.space_used_size) / 2 ** 20).toFixed(1)}`,
      )
      .join(', ');
    const memGc = await memory(url);
    const over500 = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
    return {
      'requests sent': REQUESTS,
      'answers ≥ 500 (target 0)': over500,
      'requests without an answer': statuses.get(-1) ?? 0,
      'unanticipated errors logged (target 0)': unexpectedLogged(home),
      'server still serving': alive ? 'yes' : 'NO',
      'requests per second': Math.round(REQUESTS / seconds),
      'RSS after start (MB)': (rssCold / 1024).toFixed(1),
      'RSS after 2,000 warm-up requests, resources deleted (MB)': (rssStart / 1024).toFixed(1),
      'RSS after, resources deleted (MB)': (rssEnd / 1024).toFixed(1),
      'RSS after / after warm-up (target ≤ 1.10)': (rssEnd / rssStart).toFixed(2),
      'memory after warm-up: rss / heap total / heap used / external / array buffers (MB)': memStart,
      'memory after: rss / heap total / heap used / external / array buffers (MB)': memEnd,
      'memory after a forced full GC (MB)': memGc,
      'heap spaces before it, size/used (MB)': spaces,
      'RSS after a forced full GC / after warm-up': (rssGc / rssStart).toFixed(2),
      'resident memory after warm-up by mapping': mapsStart,
      'resident memory after by mapping': mapsEnd,
      'RSS every tenth of the requests (MB)': samples.slice(0, 10).join(' '),
      'RSS every 5 s of idleness afterwards (MB)': idle.join(' '),
      'status counts': [...statuses]
        .sort((a, b) => a[0] - b[0])
        .map(([s, c]) => `${s}:${c}`)
        .join(' '),
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(home, { recursive: true, force: true });
  }
}
