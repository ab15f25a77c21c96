/**
 * Rule tracing's cost (docs/runtime.md §1.11): memory source → filter + projection → nop sink, records per CPU-second,
 *  1. tracing off here against the same rule on a peer checkout without tracing (`EDDY_BENCH_PEER`, e.g. /work/main):
 *     the price of the one null check per item per node;
 *  2. tracing on (`always`) against off, here.
 * Each round runs every variant in a child process of its own, interleaved; figures are the median ratio and the
 * spread over the rounds, with the load average beside them (the machine is shared).
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const here = fileURLToPath(new URL('.', import.meta.url));
/** this tree (the bench also runs compiled, from dist/bench) */
const root = resolve(here, here.includes('/dist/') ? '../..' : '..');

function round(tree: string, mode: 'off' | 'on', total: number): number {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', resolve(root, 'bench/helpers/fp-round.ts'), tree, mode, String(total)],
    { cwd: tree, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`round in ${tree} failed: ${r.stderr}`);
  return (JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as { recordsPerCpuSecond: number })
    .recordsPerCpuSecond;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs: number[]) => `${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)}`;

export async function run(): Promise<Record<string, string | number>> {
  const quick = process.argv.includes('--quick');
  const rounds = quick ? 3 : 7;
  const total = quick ? 300_000 : 1_000_000;
  const peer = process.env.EDDY_BENCH_PEER;
  const offVsPeer: number[] = [];
  const onVsOff: number[] = [];
  const load: number[] = [loadavg()[0]];
  for (let i = 0; i < rounds; i++) {
    const off = round(root, 'off', total);
    if (peer) offVsPeer.push(off / round(peer, 'off', total));
    // tracing every record is slow by design (a debugging aid): fewer records, the same per-CPU-second figure
    onVsOff.push(round(root, 'on', total / 5) / off);
    load.push(loadavg()[0]);
  }
  const out: Record<string, string | number> = {
    'tracing on / off, records per CPU-second (median)': median(onVsOff).toFixed(3),
    'tracing on / off, spread': spread(onVsOff),
    'load average (1 min) during the rounds': `${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}`,
  };
  if (peer) {
    out[`tracing off / ${peer}, records per CPU-second (median)`] = median(offVsPeer).toFixed(3);
    out[`tracing off / ${peer}, spread`] = spread(offVsPeer);
  }
  return out;
}
