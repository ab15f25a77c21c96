/**
 * The cost of Go-exact math (src/functions/gomath/): each ported function against the V8 built-in it replaced, and
 * a whole projection record `SELECT sin(x), cos(x), tan(x), exp(y), log(z), power(z, 1.5), atan2(x, y) FROM s`
 * through the compiled SQL with the shipped functions against the same plan whose registry has V8's `Math.*` put
 * back. Rounds alternate between the two sides; each side's best round counts. Figures: ns per call / per record,
 * and the ratio Go port ÷ V8.
 */
import { planQuery } from '../src/plan/planner.js';
import { createBuiltinRegistry, type FunctionRegistry } from '../src/functions/index.js';
import * as go from '../src/functions/gomath/index.js';
import { parseDdl } from '../src/sql/index.js';
import { Tuple } from '../src/contracts/index.js';
import type { StreamCatalog, StreamDef } from '../src/catalog/types.js';
import { toFloat64, type Value } from '../src/values/index.js';

const N = 100_000;

/** Inputs as sensor data looks: moderate magnitudes, a tenth of them large. */
function inputs(seed: number, scale: number): Float64Array {
  const out = new Float64Array(N);
  let s = seed;
  for (let i = 0; i < N; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const u = s / 2147483648;
    out[i] = i % 10 === 0 ? (u - 0.5) * 1e6 : (u - 0.5) * scale;
  }
  return out;
}

/** CPU milliseconds of one pass of `f` over `xs` (other processes on a busy machine do not count). */
function pass(f: (x: number, y: number) => number, xs: Float64Array, ys: Float64Array): [number, number] {
  let sink = 0;
  const t0 = process.cpuUsage();
  for (let i = 0; i < xs.length; i++) sink += f(xs[i], ys[i]);
  const t = process.cpuUsage(t0);
  return [(t.user + t.system) / 1e3, sink];
}

function pair(
  port: (x: number, y: number) => number,
  v8: (x: number, y: number) => number,
  xs: Float64Array,
  ys: Float64Array,
  rounds = 15,
): [number, number] {
  let bestP = Infinity;
  let bestV = Infinity;
  let sink = 0;
  for (let r = 0; r < rounds + 3; r++) {
    const [p, a] = pass(port, xs, ys);
    const [v, b] = pass(v8, xs, ys);
    sink += a + b;
    if (r >= 3) {
      bestP = Math.min(bestP, p);
      bestV = Math.min(bestV, v);
    }
  }
  if (sink === 42) console.log(sink); // keeps the results alive
  return [(bestP * 1e6) / xs.length, (bestV * 1e6) / xs.length];
}

const DDL = 'CREATE STREAM s () WITH (DATASOURCE="bench", FORMAT="json", TYPE="memory")';

function planWith(functions: FunctionRegistry) {
  const st = parseDdl(DDL);
  if (st.kind !== 'createStream') throw new Error('bad DDL');
  const def: StreamDef = { name: st.name, kind: st.streamKind, fields: st.fields, options: st.options, sql: DDL };
  const catalog: StreamCatalog = { get: (n) => (n === def.name ? def : undefined), list: () => [def] };
  const p = planQuery(
    'SELECT sin(x) AS a, cos(x) AS b, tan(x) AS c, exp(y) AS d, log(z) AS e, power(z, 1.5) AS f, atan2(x, y) AS g FROM s',
    { catalog, functions, options: { isEventTime: false, sendMetaToSink: false } },
  );
  const ctx = p.newContext('bench', 0);
  ctx.bindRow();
  return (row: Tuple) => p.project.project(row, ctx);
}

/** The shipped registry with the replaced functions swapped back to V8's built-ins, same definitions otherwise. */
function v8Registry(): FunctionRegistry {
  const reg = createBuiltinRegistry();
  const nullNaN = (x: number): Value => (x !== x ? null : x);
  const unary = (name: string, op: (x: number) => number) =>
    reg.register({ ...reg.get(name)!, exec: (a) => nullNaN(op(toFloat64(a[0]))) });
  const binary = (name: string, op: (x: number, y: number) => number) =>
    reg.register({ ...reg.get(name)!, exec: (a) => nullNaN(op(toFloat64(a[0]), toFloat64(a[1]))) });
  unary('sin', Math.sin);
  unary('cos', Math.cos);
  unary('tan', Math.tan);
  unary('exp', Math.exp);
  unary('log', Math.log10);
  binary('power', Math.pow);
  binary('atan2', Math.atan2);
  return reg;
}

export async function run(): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = {};
  const trig = inputs(1, 200);
  const small = inputs(2, 40);
  const pos = inputs(3, 2000).map(Math.abs);
  const unit = inputs(4, 2).map((x) => Math.max(-1, Math.min(1, x)));
  const cases: [
    string,
    (x: number, y: number) => number,
    (x: number, y: number) => number,
    Float64Array,
    Float64Array,
  ][] = [
    ['sin', go.goSin, Math.sin, trig, trig],
    ['cos', go.goCos, Math.cos, trig, trig],
    ['tan', go.goTan, Math.tan, trig, trig],
    ['cot', go.goCot, (x) => 1 / Math.tan(x), trig, trig],
    ['asin', go.goAsin, Math.asin, unit, unit],
    ['atan', go.goAtan, Math.atan, trig, trig],
    ['atan2', go.goAtan2, Math.atan2, trig, small],
    ['exp', go.goExp, Math.exp, small, small],
    ['sinh', go.goSinh, Math.sinh, small, small],
    ['tanh', go.goTanh, Math.tanh, small, small],
    ['ln', go.goLog, Math.log, pos, pos],
    ['log', go.goLog10, Math.log10, pos, pos],
    ['power', go.goPow, Math.pow, pos, small],
  ];
  for (const [name, port, v8, xs, ys] of cases) {
    const [p, v] = pair(port, v8, xs, ys);
    out[`${name}: Go port / V8, ns per call`] = `${p.toFixed(1)} / ${v.toFixed(1)} = ${(p / v).toFixed(2)}x`;
  }

  const rows: Tuple[] = [];
  for (let i = 0; i < N; i++) rows.push(new Tuple('s', { x: trig[i], y: small[i], z: pos[i] }, {}, i));
  const shipped = planWith(createBuiltinRegistry());
  const baseline = planWith(v8Registry());
  let bestS = Infinity;
  let bestB = Infinity;
  for (let r = 0; r < 13; r++) {
    for (const [which, f] of [
      ['s', shipped],
      ['b', baseline],
    ] as const) {
      const t0 = process.cpuUsage();
      for (let i = 0; i < rows.length; i++) f(rows[i]);
      const t = process.cpuUsage(t0);
      const ms = (t.user + t.system) / 1e3;
      if (r >= 3) {
        if (which === 's') bestS = Math.min(bestS, ms);
        else bestB = Math.min(bestB, ms);
      }
    }
  }
  const s = (bestS * 1e6) / N;
  const b = (bestB * 1e6) / N;
  out['record with 7 math functions: Go port / V8, ns per record'] =
    `${s.toFixed(0)} / ${b.toFixed(0)} = ${(s / b).toFixed(2)}x`;
  return out;
}
