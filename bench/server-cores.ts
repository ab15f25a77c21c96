/**
 * Every core through the real server (issue 22 item 4): `node scripts/start.mjs` (what `npm start` runs) with
 * `basic.workers` 2 against the same server with `basic.workers` 1 (every rule on one worker thread, the API on the
 * main thread in both), in interleaved rounds.
 * Each round starts a server, runs 8 warm-up rules on a small file (the worker threads start and compile the rule's
 * code: not timed), then creates 8 file-source rules — each reads its own file of JSON lines, filters half the records
 * out, projects two fields and writes what passes to a file sink — and times them from the first create until every
 * rule has stopped by itself ("finished": its file read and every record delivered). The output files are counted: a round
 * that lost or duplicated a record fails the benchmark. Records/s is the records read by all 8 rules over that wall
 * time; CPU is the server's whole process tree, from /proc, and per thread (/proc/<pid>/task): what the worker threads
 * spend beside what the rest of the process spends shows how far 2 workers can go on the cores there are.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { QUICK, median, sleep } from './helpers/procs.js';
import { spawnServer, threadUsage, type ServerProc } from './helpers/server.js';

const RULES = 8;
const LINES = QUICK ? 50_000 : 200_000;
const ROUNDS = Number(process.env.EDDY_BENCH_ROUNDS ?? (QUICK ? 2 : 5));
const load = () => loadavg()[0].toFixed(2);

interface Round {
  readonly recordsPerSec: number;
  readonly cpuMsPerRecord: number;
  /** the main thread's share: the REST API, the metrics the workers report, nothing of the rules' own work */
  readonly mainCpuMsPerRecord: number;
  /**
   * the rule worker threads' share (the busiest threads but the main one, as many as workers): the rest — the main
   * thread, V8's garbage-collection helpers, libuv's file threads — runs beside them, on cores 2 workers then need
   */
  readonly workerCpuMsPerRecord: number;
}

async function ok(p: Promise<{ status: number; text: string }>): Promise<void> {
  const r = await p;
  if (r.status >= 300) throw new Error(r.text);
}

/**
 * Waits until the rules whose ids start with `prefix` (and a number) have all finished. One listing every 20 ms: asking
 * each rule's status cost the server (and this process) 400 requests a second, a third of a core beside the rules.
 */
async function untilFinished(s: ServerProc, prefix: string): Promise<void> {
  const deadline = Date.now() + 600_000;
  const mine = new RegExp(`^${prefix}\\d+$`);
  for (;;) {
    const rows = await s.json<Array<{ id: string; status: string }>>('/rules').catch(() => []);
    const finished = rows.filter((r) => mine.test(r.id) && /^stopped: finished/i.test(r.status)).length;
    if (finished === RULES) return;
    if (Date.now() > deadline) throw new Error(`the rules ${prefix}… did not finish`);
    await sleep(20);
  }
}

async function round(workers: 1 | 2, input: string): Promise<Round> {
  const out = mkdtempSync(join(tmpdir(), 'eddy-bench-cores-out-'));
  const s = await spawnServer({ env: { KUIPER__BASIC__WORKERS: String(workers) } });
  try {
    await ok(s.req('PUT', '/metadata/sources/file/confKeys/cores', { path: input, fileType: 'lines' }));
    for (let i = 0; i < RULES; i++)
      await ok(
        s.req('POST', '/streams', {
          sql: `CREATE STREAM c${i} (n BIGINT, t BIGINT, s STRING) WITH (TYPE="file", CONF_KEY="cores", DATASOURCE="in${i}.jsonl", FORMAT="json")`,
        }),
      );
    await ok(
      s.req('POST', '/streams', {
        sql: `CREATE STREAM warm (n BIGINT, t BIGINT, s STRING) WITH (TYPE="file", CONF_KEY="cores", DATASOURCE="warm.jsonl", FORMAT="json")`,
      }),
    );
    // the workers start, load their modules and compile the rule's code with warm-up rules (one per rule id hash
    // slot, so every worker gets some) on a small file, not inside the timed window: what is compared is how the
    // records flow once the threads run
    for (let i = 0; i < RULES; i++)
      await ok(
        s.req('POST', '/rules', {
          id: `warm${i}`,
          sql: `SELECT n, s FROM warm WHERE t > 49`,
          actions: [{ nop: {} }],
        }),
      );
    await untilFinished(s, 'warm');
    for (let i = 0; i < RULES; i++) await ok(s.req('DELETE', `/rules/warm${i}`));
    await sleep(500);
    const c0 = s.usage().cpuMs;
    const threads0 = threadUsage(s.proc.pid!);
    const t0 = performance.now();
    for (let i = 0; i < RULES; i++)
      await ok(
        s.req('POST', '/rules', {
          id: `r${i}`,
          sql: `SELECT n, s FROM c${i} WHERE t > 49`,
          actions: [
            {
              file: {
                path: join(out, `out${i}.jsonl`),
                fileType: 'lines',
                rollingCount: 0,
                rollingInterval: 3_600_000,
              },
            },
          ],
        }),
      );
    await untilFinished(s, 'r');
    const wall = (performance.now() - t0) / 1000;
    const cpu = s.usage().cpuMs - c0;
    const threads = [...threadUsage(s.proc.pid!)].map(([name, ms]) => [name, ms - (threads0.get(name) ?? 0)] as const);
    const mainCpu = threads.find(([name]) => name === 'main')?.[1] ?? 0;
    const workerCpu = threads
      .filter(([name]) => name !== 'main')
      .map(([, ms]) => ms)
      .sort((a, b) => b - a)
      .slice(0, workers)
      .reduce((a, b) => a + b, 0);
    for (let i = 0; i < RULES; i++) {
      const lines = readFileSync(join(out, `out${i}.jsonl`), 'utf8')
        .split('\n')
        .filter(Boolean);
      if (lines.length !== LINES / 2)
        throw new Error(`workers ${workers}: rule r${i} wrote ${lines.length} records, expected ${LINES / 2}`);
    }
    return {
      recordsPerSec: (RULES * LINES) / wall,
      cpuMsPerRecord: cpu / (RULES * LINES),
      mainCpuMsPerRecord: mainCpu / (RULES * LINES),
      workerCpuMsPerRecord: workerCpu / (RULES * LINES),
    };
  } finally {
    await s.stop();
    rmSync(out, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, string>> {
  const input = mkdtempSync(join(tmpdir(), 'eddy-bench-cores-in-'));
  try {
    const text =
      Array.from({ length: LINES }, (_, n) => JSON.stringify({ n, t: n % 100, s: `record ${n}` })).join('\n') + '\n';
    for (let i = 0; i < RULES; i++) writeFileSync(join(input, `in${i}.jsonl`), text);
    writeFileSync(join(input, 'warm.jsonl'), text.slice(0, text.indexOf('\n', text.length >> 5) + 1));
    const l0 = load();
    const rounds: Record<1 | 2, Round[]> = { 1: [], 2: [] };
    for (let r = 0; r < ROUNDS; r++)
      for (const w of r % 2 === 0 ? ([1, 2] as const) : ([2, 1] as const)) rounds[w].push(await round(w, input));
    const show = (xs: number[], digits: number) =>
      `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}, n=${xs.length})`;
    const perRecord = (f: (x: Round) => number) =>
      `${(median(rounds[1].map(f)) * 1000).toFixed(2)} / ${(median(rounds[2].map(f)) * 1000).toFixed(2)}`;
    const ratios = rounds[2].map((x, i) => x.recordsPerSec / rounds[1][i].recordsPerSec);
    return {
      measured: `the real server (scripts/start.mjs), ${RULES} file → filter + projection → file rules, ${LINES} records each, every output counted`,
      'basic.workers 1: records/s (every rule on one worker thread)': show(
        rounds[1].map((x) => x.recordsPerSec),
        0,
      ),
      'basic.workers 2: records/s': show(
        rounds[2].map((x) => x.recordsPerSec),
        0,
      ),
      '2 workers / 1, same round (target ≥ 1.8)': show(ratios, 2),
      'server CPU µs per record, 1 / 2 workers': perRecord((x) => x.cpuMsPerRecord),
      "of which the worker threads', 1 / 2 workers": perRecord((x) => x.workerCpuMsPerRecord),
      "of which the main thread's, 1 / 2 workers": perRecord((x) => x.mainCpuMsPerRecord),
      'load at start / end': `${l0} / ${load()} (${availableParallelism()} cores)`,
    };
  } finally {
    rmSync(input, { recursive: true, force: true });
  }
}
