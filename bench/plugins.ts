/**
 * Native plugin figures (docs/plugins.md), in one run:
 *  1. call cost: a projection calling a function plugin (`pabs`, an ES module loaded the way the server loads it, whose
 *     `exec` is `Math.abs` of its argument) against the same projection calling the built-in `abs`, the same work per record; CPU time per round, rounds interleaved,
 *     the ratio plugin / built-in as median and spread (target ≤ 1.2);
 *  2. install: `POST /plugins/functions` of a 1 MB archive served over HTTP, wall time of the whole request (download,
 *     checks, unpacking, import, declaration), median and spread (target ≤ 1 s on an idle machine).
 * The load average is printed beside them.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planQuery } from '../src/plan/planner.js';
import { createBuiltinRegistry } from '../src/functions/index.js';
import { parseDdl } from '../src/sql/index.js';
import { Tuple } from '../src/contracts/index.js';
import type { StreamCatalog, StreamDef } from '../src/catalog/types.js';
import type { FunctionRegistry } from '../src/functions/registry.js';
import { NativeRuntime } from '../src/extensions/plugins-native-runtime.js';
import { startTestServer } from '../test/helpers/server.js';
import { serveArchives, zipOf } from '../test/extensions/native-fixture.js';
import { QUICK, machineLoad, spread } from './helpers/procs.js';

const DDL = 'CREATE STREAM s () WITH (DATASOURCE="bench", FORMAT="json", TYPE="memory")';

function catalog(): StreamCatalog {
  const st = parseDdl(DDL);
  if (st.kind !== 'createStream') throw new Error('bad DDL');
  const def: StreamDef = { name: st.name, kind: st.streamKind, fields: st.fields, options: st.options, sql: DDL };
  return { get: (n) => (n === def.name ? def : undefined), list: () => [def] };
}

const PLUGIN = `export const Pbench = { version: '1.0.0', functions: { pabs: (a) => Math.abs(a[0]) } };\n`;

async function registryWithPlugin(dir: string): Promise<FunctionRegistry> {
  const functions = createBuiltinRegistry();
  const module = join(dir, 'Pbench.mjs');
  writeFileSync(module, PLUGIN);
  const runtime = new NativeRuntime({ declare: () => undefined }, functions);
  await runtime.apply({ type: 'functions', name: 'pbench', module, functions: ['pabs'] });
  return functions;
}

function projection(functions: FunctionRegistry, fn: string): (row: Tuple) => unknown {
  const plan = planQuery(`SELECT ${fn}(temperature) AS t FROM s`, {
    catalog: catalog(),
    functions,
    options: { isEventTime: false, sendMetaToSink: false },
  });
  const project = plan.project.project;
  const ctx = plan.newContext('bench', 0);
  ctx.bindRow();
  return (r) => project(r, ctx);
}

function cpuMs(data: readonly Tuple[], f: (row: Tuple) => unknown): number {
  let sink = 0;
  const t0 = process.cpuUsage();
  for (let i = 0; i < data.length; i++) if (f(data[i])) sink++;
  const t = process.cpuUsage(t0);
  if (sink < 0) console.log(sink);
  return (t.user + t.system) / 1e3;
}

async function callCost(): Promise<{ ratios: number[]; plugin: number; builtin: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-bench-plugin-'));
  try {
    const functions = await registryWithPlugin(dir);
    const builtin = projection(functions, 'abs');
    const plugin = projection(functions, 'pabs');
    const data: Tuple[] = [];
    for (let i = 0; i < 200_000; i++) data.push(new Tuple('s', { temperature: (i % 200) - 100.5 }, {}, i));
    for (let w = 0; w < 5; w++) {
      cpuMs(data, builtin);
      cpuMs(data, plugin);
    }
    const ratios: number[] = [];
    let bestP = Infinity;
    let bestB = Infinity;
    for (let round = 0; round < (QUICK ? 9 : 25); round++) {
      // alternate which goes first, so that neither always runs right after a collection
      const [b, p] =
        round % 2 === 0
          ? [cpuMs(data, builtin), cpuMs(data, plugin)]
          : ((): [number, number] => {
              const pp = cpuMs(data, plugin);
              return [cpuMs(data, builtin), pp];
            })();
      ratios.push(p / b);
      bestP = Math.min(bestP, p);
      bestB = Math.min(bestB, b);
    }
    return { ratios, plugin: (bestP * 1e6) / data.length, builtin: (bestB * 1e6) / data.length };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function installTimes(): Promise<number[]> {
  const web = await serveArchives();
  const s = await startTestServer();
  try {
    const times: number[] = [];
    for (let i = 0; i < (QUICK ? 3 : 7); i++) {
      const name = `big${i}`;
      const module = `export const Big${i} = { functions: { bigf${i}: ([x]) => x } };\n`;
      // incompressible: the archive is about 1 MB on the wire and on disk
      const zip = zipOf({ [`Big${i}.mjs`]: module, 'data.bin': randomBytes(1024 * 1024 - 2048) });
      const url = web.put(`${name}.zip`, zip);
      const t0 = performance.now();
      const r = await s.req('POST', '/plugins/functions', { name, file: url });
      times.push(performance.now() - t0);
      if (r.status !== 201) throw new Error(`install ${name}: ${r.status} ${r.text}`);
    }
    return times;
  } finally {
    await s.dispose();
    await web.close();
  }
}

export async function run(): Promise<Record<string, string | number>> {
  const load = await machineLoad();
  const cost = await callCost();
  const installs = await installTimes();
  return {
    'load average (1 min) at start': load,
    'plugin pabs / built-in abs, CPU per record (median, min–max)': spread(cost.ratios),
    'ns per record, built-in abs (best round)': cost.builtin.toFixed(1),
    'ns per record, plugin pabs (best round)': cost.plugin.toFixed(1),
    'install of a 1 MB archive over HTTP, ms (median, min–max)': spread(installs, 0),
    'load average (1 min) at end': await machineLoad(),
  };
}
