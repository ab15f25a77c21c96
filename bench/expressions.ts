/**
 * Compiled SQL expressions against the same logic hand-written in JS, in the same run:
 * a filter `temperature > 50 AND humidity < 30`, a projection with 5 functions, and a JSON path projection.
 * Figures are operations per second (one op = one record through the compiled closure).
 */
import { planQuery } from '../src/plan/planner.js';
import { createBuiltinRegistry } from '../src/functions/index.js';
import { parseDdl } from '../src/sql/index.js';
import { Tuple } from '../src/contracts/index.js';
import type { StreamCatalog, StreamDef } from '../src/catalog/types.js';
import type { ValueObject } from '../src/values/value.js';
import type { QueryPlan } from '../src/plan/plan.js';

const DDL = 'CREATE STREAM s () WITH (DATASOURCE="bench", FORMAT="json", TYPE="memory")';

function catalog(): StreamCatalog {
  const st = parseDdl(DDL);
  if (st.kind !== 'createStream') throw new Error('bad DDL');
  const def: StreamDef = { name: st.name, kind: st.streamKind, fields: st.fields, options: st.options, sql: DDL };
  return { get: (n) => (n === def.name ? def : undefined), list: () => [def] };
}

function planOf(sql: string): QueryPlan {
  return planQuery(sql, {
    catalog: catalog(),
    functions: createBuiltinRegistry(),
    options: { isEventTime: false, sendMetaToSink: false },
  });
}

/** Schemaless JSON input: every number is a float. */
function rows(n: number): Tuple[] {
  const out: Tuple[] = [];
  for (let i = 0; i < n; i++) {
    const message: ValueObject = {
      temperature: 20 + (i % 60) + 0.5,
      humidity: ((i * 7) % 100) + 0.25,
      pressure: 1000 + (i % 50) + 0.75,
      name: `sensor-${i % 97}`,
      device: { info: { id: `dev-${i % 13}`, rack: i % 5 } },
      readings: [{ value: i % 11 }, { value: 1 }],
    };
    out.push(new Tuple('s', message, {}, i));
  }
  return out;
}

/**
 * ops per CPU-second of `compiled` and `hand` over `data`: rounds alternate between the two (so a busy machine slows both
 * alike), best round of each after a warm-up.
 */
function measurePair(
  data: Tuple[],
  compiled: (row: Tuple) => unknown,
  hand: (row: Tuple) => unknown,
  rounds = 15,
): [number, number] {
  let sink = 0;
  // CPU time of this process (not wall time): other processes on a busy machine do not count against a round
  const once = (f: (row: Tuple) => unknown): number => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < data.length; i++) if (f(data[i])) sink++;
    const t = process.cpuUsage(t0);
    return (t.user + t.system) / 1e3;
  };
  for (let w = 0; w < 3; w++) {
    once(compiled);
    once(hand);
  }
  let bestC = Infinity;
  let bestH = Infinity;
  for (let i = 0; i < rounds; i++) {
    bestC = Math.min(bestC, once(compiled));
    bestH = Math.min(bestH, once(hand));
  }
  if (sink < 0) console.log(sink);
  return [Math.round((data.length / bestC) * 1000), Math.round((data.length / bestH) * 1000)];
}

export async function run(): Promise<Record<string, string | number>> {
  const data = rows(100_000);
  const out: Record<string, string | number> = {};

  // 1. filter
  const filterPlan = planOf('SELECT * FROM s WHERE temperature > 50 AND humidity < 30');
  const where = filterPlan.where!;
  const fctx = filterPlan.newContext('bench', 0);
  fctx.bindRow();
  const [compiledFilter, handFilter] = measurePair(
    data,
    (r) => where(r, fctx),
    (r) => {
      const m = r.message;
      const t = m.temperature;
      const h = m.humidity;
      return typeof t === 'number' && typeof h === 'number' && t > 50 && h < 30;
    },
  );

  // 2. projection with five functions
  const projPlan = planOf(
    'SELECT abs(temperature) AS t, round(humidity) AS h, upper(name) AS n, concat(name, "-x") AS c, floor(pressure) AS p FROM s',
  );
  const project = projPlan.project.project;
  const pctx = projPlan.newContext('bench', 0);
  pctx.bindRow();
  const [compiledProject, handProject] = measurePair(
    data,
    (r) => project(r, pctx),
    (r) => {
      const m = r.message;
      const o: ValueObject = {};
      const t = m.temperature;
      if (typeof t === 'number') o.t = Math.abs(t);
      const h = m.humidity;
      if (typeof h === 'number') {
        // SQL round() rounds half away from zero
        const t = Math.trunc(h);
        o.h = Math.abs(h - t) >= 0.5 ? t + Math.sign(h) : t;
      }
      const n = m.name;
      if (typeof n === 'string') {
        o.n = n.toUpperCase();
        o.c = n + '-x';
      }
      const p = m.pressure;
      if (typeof p === 'number') o.p = Math.floor(p);
      return o;
    },
  );

  // 3. JSON path navigation
  const pathPlan = planOf('SELECT device->info->id AS id, readings[0]->value AS v FROM s');
  const path = pathPlan.project.project;
  const jctx = pathPlan.newContext('bench', 0);
  jctx.bindRow();
  const [compiledPath, handPath] = measurePair(
    data,
    (r) => path(r, jctx),
    (r) => {
      const m = r.message as { device?: { info?: { id?: unknown } }; readings?: Array<{ value?: unknown }> };
      const o: Record<string, unknown> = {};
      const id = m.device?.info?.id;
      if (id !== undefined && id !== null) o.id = id;
      const v = Array.isArray(m.readings) ? m.readings[0]?.value : undefined;
      if (v !== undefined && v !== null) o.v = v;
      return o;
    },
  );

  const ratio = (a: number, b: number): string => (a / b).toFixed(2);
  out['filter: compiled ops/s'] = compiledFilter;
  out['filter: hand-written ops/s'] = handFilter;
  out['filter: compiled / hand-written'] = ratio(compiledFilter, handFilter);
  out['project 5 functions: compiled ops/s'] = compiledProject;
  out['project 5 functions: hand-written ops/s'] = handProject;
  out['project 5 functions: compiled / hand-written'] = ratio(compiledProject, handProject);
  out['json path: compiled ops/s'] = compiledPath;
  out['json path: hand-written ops/s'] = handPath;
  out['json path: compiled / hand-written'] = ratio(compiledPath, handPath);
  return out;
}

// Running the file directly prints the figures.
if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await run();
  for (const [k, v] of Object.entries(figures)) console.log(`${k.padEnd(50)} ${v}`);
}
