/** Mathematical functions (docs/sql.md §7.1). */
import { EvalError, textOf, toFloat64, typedText, type Value } from '../values/index.js';
import type { FunctionDef } from './registry.js';
import { scalar } from './define.js';
import { all, exactly, expect, INT, intArg, mustBe, numberArg, type Validator } from './validate.js';
import {
  goAcos,
  goAsin,
  goAtan,
  goAtan2,
  goCos,
  goCosh,
  goCot,
  goExp,
  goLog,
  goLog10,
  goPow,
  goSin,
  goSinh,
  goTan,
  goTanh,
} from './gomath/index.js';

const num1: Validator = all(exactly(1), numberArg(0));
const num2: Validator = all(exactly(2), numberArg(0), numberArg(1));

/** Float results: NaN becomes null (docs/sql.md §7.0). */
function f(x: number): Value {
  return x !== x ? null : x;
}

function unary(name: string, op: (x: number) => number): FunctionDef {
  return scalar(name, 'N', num1, (a) => f(op(toFloat64(a[0]))));
}

// eKuiper multiplies by these constants, each π/180 or 180/π rounded once
const DEG_TO_RAD = Math.PI / 180;
const RAD_TO_DEG = 180 / Math.PI;

/** Go's math.Round: half away from zero. */
export function roundHalfAway(x: number): number {
  if (!Number.isFinite(x)) return x;
  const t = Math.trunc(x);
  return Math.abs(x - t) >= 0.5 ? t + Math.sign(x) : t;
}

/** An int operand of bitand/bitor/bitxor/bitnot: ints, or floats without a fractional part. */
function bitOperand(v: Value, which: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  throw new EvalError(`Expect int type for the ${which} operand but got ${textOf(v)}`);
}

function bitwise(name: string, op: (a: bigint, b: bigint) => bigint): FunctionDef {
  return scalar(name, 'N', all(exactly(2), intArg(0), intArg(1)), (a) =>
    BigInt.asIntN(64, op(bitOperand(a[0], 'first'), bitOperand(a[1], 'second'))),
  );
}

const U64_MAX = 2n ** 64n - 1n;
const I64_MAX = 2n ** 63n - 1n;

/** MySQL-style CONV: see docs/sql.md §7.1. */
export function conv(s: string, from: number, to: number): Value {
  const fb = Math.abs(from);
  const tb = Math.abs(to);
  if (fb < 2 || fb > 36 || tb < 2 || tb > 36) return null;
  const t = s.trim();
  let i = 0;
  let neg = false;
  if (t[i] === '-' || t[i] === '+') {
    neg = t[i] === '-';
    i++;
  }
  let mag = 0n;
  const base = BigInt(fb);
  let any = false;
  for (; i < t.length; i++) {
    const d = parseInt(t[i], 36);
    if (!(d >= 0 && d < fb)) break;
    mag = mag * base + BigInt(d);
    any = true;
    if (mag > U64_MAX * 64n) mag = U64_MAX * 64n; // keep the number bounded; it is clamped below anyway
  }
  if (!any) return '0';
  let u: bigint;
  if (from < 0) {
    let v = neg ? -mag : mag;
    if (v > I64_MAX) v = I64_MAX;
    if (v < -I64_MAX - 1n) v = -I64_MAX - 1n;
    u = BigInt.asUintN(64, v);
  } else {
    if (mag > U64_MAX) mag = U64_MAX;
    u = neg ? BigInt.asUintN(64, -mag) : mag;
  }
  const out = to < 0 ? BigInt.asIntN(64, u) : u;
  return out.toString(tb).toUpperCase();
}

function intValue(v: Value, i: number): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw new EvalError(`${expect(INT, i)}, but got ${typedText(v)}`);
}

export const mathFunctions: FunctionDef[] = [
  scalar('abs', 'N', num1, (a) => {
    const x = a[0];
    if (typeof x === 'bigint') return x < 0n ? BigInt.asIntN(64, -x) : x;
    if (typeof x === 'number') return Math.abs(x);
    throw new EvalError('only float64 & int type are supported');
  }),
  // Go's math package results (./gomath/index.ts) where V8's differ; V8's own where they agree bit for bit
  // (test/functions/gomath.test.ts checks both kinds against Go's reference vectors)
  unary('acos', goAcos),
  unary('asin', goAsin),
  unary('atan', goAtan),
  unary('cos', goCos),
  unary('cosh', goCosh),
  unary('sin', goSin),
  unary('sinh', goSinh),
  unary('tan', goTan),
  unary('tanh', goTanh),
  unary('exp', goExp),
  unary('ln', goLog),
  unary('sqrt', Math.sqrt),
  unary('radians', (x) => x * DEG_TO_RAD),
  unary('degrees', (x) => x * RAD_TO_DEG),
  unary('ceil', Math.ceil),
  unary('ceiling', Math.ceil),
  unary('floor', Math.floor),
  unary('round', roundHalfAway),
  scalar('atan2', 'N', num2, (a) => f(goAtan2(toFloat64(a[0]), toFloat64(a[1])))),
  scalar('cot', 'N', num1, (a) => {
    const r = goCot(toFloat64(a[0]));
    if (!Number.isFinite(r) && r === r) throw new EvalError('out-of-range error');
    return f(r);
  }),
  scalar('sign', 'N', num1, (a) => {
    const x = a[0];
    if (typeof x === 'bigint') return x > 0n ? 1n : x < 0n ? -1n : 0n;
    const v = toFloat64(x);
    return v > 0 ? 1n : v < 0 ? -1n : 0n;
  }),
  scalar(
    'log',
    'N',
    (a) => (a.length === 1 || a.length === 2 ? numberArg(0)(a) : 'Expect 1 or 2 arguments only'),
    (a) => {
      if (a.length === 1) return f(goLog10(toFloat64(a[0])));
      return f(goLog(toFloat64(a[1])) / goLog(toFloat64(a[0])));
    },
  ),
  scalar('mod', 'N', num2, (a) => f(toFloat64(a[0]) % toFloat64(a[1]))),
  scalar('power', 'N', num2, (a) => f(goPow(toFloat64(a[0]), toFloat64(a[1])))),
  scalar('pow', 'N', num2, (a) => f(goPow(toFloat64(a[0]), toFloat64(a[1])))),
  scalar('pi', 'none', exactly(0), () => Math.PI),
  scalar('rand', 'none', exactly(0), () => Math.random()),
  bitwise('bitand', (x, y) => x & y),
  bitwise('bitor', (x, y) => x | y),
  bitwise('bitxor', (x, y) => x ^ y),
  scalar('bitnot', 'N', all(exactly(1), intArg(0)), (a) => {
    const v = a[0];
    if (typeof v === 'bigint') return ~v;
    if (typeof v === 'number' && Number.isInteger(v)) return ~BigInt(v);
    throw new EvalError(`Expect int type for operand but got ${textOf(v)}`);
  }),
  scalar('conv', 'N', all(exactly(3), mustBe(1, INT, ['int']), mustBe(2, INT, ['int'])), (a) =>
    conv(textOf(a[0]), intValue(a[1], 1), intValue(a[2], 2)),
  ),
];
