/**
 * Go's `math.Sinh`, `math.Cosh` and `math.Tanh`: Cephes rational approximations near 0, otherwise built from
 * `math.Exp` — which on amd64 is the assembly routine of ./explog.ts, so these inherit its last bits.
 */
import { goExp } from './explog.js';

const SP0 = -630767.3640497717; // sinh(x) = x·P(x²)/Q(x²) for |x| ≤ ½
const SP1 = -89912.72022039509;
const SP2 = -2894.211355989564;
const SP3 = -26.30563213397497;
const SQ0 = -630767.3640497717;
const SQ1 = 15215.17378790019;
const SQ2 = -173.6789535582337;

/** sinh x as Go's math.Sinh. */
export function goSinh(x: number): number {
  let negative = false;
  if (x < 0) {
    x = -x;
    negative = true;
  }
  let t: number;
  if (x > 21) {
    t = goExp(x) * 0.5;
  } else if (x > 0.5) {
    const ex = goExp(x);
    t = (ex - 1 / ex) * 0.5;
  } else {
    const sq = x * x;
    t = (((SP3 * sq + SP2) * sq + SP1) * sq + SP0) * x;
    t = t / (((sq + SQ2) * sq + SQ1) * sq + SQ0);
  }
  return negative ? -t : t;
}

/** cosh x as Go's math.Cosh. */
export function goCosh(x: number): number {
  x = Math.abs(x);
  if (x > 21) return goExp(x) * 0.5;
  const ex = goExp(x);
  return (ex + 1 / ex) * 0.5;
}

const TP0 = -0.9643991794250523; // tanh(x) = x + x³·P(x²)/Q(x²) for |x| < 0.625
const TP1 = -99.28772310019185;
const TP2 = -1614.6876844170845;
const TQ0 = 112.81167849163293;
const TQ1 = 2235.4883906010045;
const TQ2 = 4844.063053251255;
const HALF_MAXLOG = 0.5 * 88.02969193111305; // ½·ln(2^127): tanh is ±1 in double beyond it

/** tanh x as Go's math.Tanh. */
export function goTanh(x: number): number {
  let z = Math.abs(x);
  if (z > HALF_MAXLOG) return x < 0 ? -1 : 1;
  if (z >= 0.625) {
    const s = goExp(2 * z);
    z = 1 - 2 / (s + 1);
    return x < 0 ? -z : z;
  }
  if (x === 0) return x;
  const s = x * x;
  return x + (x * s * ((TP0 * s + TP1) * s + TP2)) / (((s + TQ0) * s + TQ1) * s + TQ2);
}
