/**
 * Go's `math.Exp` and `math.Log` as compiled for amd64, where both are assembly routines with their own algorithms
 * (not the portable Go versions): Exp is Shibata's method — reduce by ln 2, a Taylor polynomial on a sixteenth of the
 * remainder, then square four times — evaluated with fused multiply-adds on CPUs with AVX and FMA; Log is FreeBSD's
 * (Sun's) polynomial with the exponent taken straight from the bits, subnormals included.
 */
import { fma, fromWords, highWord, lowWord, pow2, roundHalfEven } from './float.js';

const LOG2E = 1.4426950408889634;
const LN2U = 0.693147180559663; // ln 2 in two parts; k·LN2U is exact for |k| < 2^12
const LN2L = 2.8235290563031577e-13;
const EXP_OVERFLOW = 709.782712893384;
// Taylor coefficients 1/n! for n = 2..8
const E2 = 0.5;
const E3 = 0.16666666666666666;
const E4 = 0.041666666666666664;
const E5 = 0.008333333333333333;
const E6 = 0.001388888888888889;
const E7 = 0.0001984126984126984;
const E8 = 2.48015873015873e-5;

/** e^x as Go's math.Exp gives it on amd64 (FMA path). */
export function goExp(x: number): number {
  if (x !== x || x === Infinity) return x;
  if (x === -Infinity) return 0;
  if (x > EXP_OVERFLOW) return Infinity;
  const t = x * LOG2E;
  // the conversion to a 32-bit integer rounds half to even; out of range it gives -2^31, which underflows below
  const k = t > -2147483648.5 ? roundHalfEven(t) : -2147483648;
  let biased = k + 1023;
  if (biased < -52) return 0;
  if (biased >= 0x7ff) return Infinity;
  let r = x - k * LN2U;
  r = fma(-k, LN2L, r);
  r *= 0.0625;
  let p = fma(E8, r, E7);
  p = fma(p, r, E6);
  p = fma(p, r, E5);
  p = fma(p, r, E4);
  p = fma(p, r, E3);
  p = fma(p, r, E2);
  p = fma(p, r, 1);
  // e^(16r) − 1 from e^r − 1 by squaring four times: (1+y)² − 1 = y·(y+2)
  let y = r * p;
  y *= y + 2;
  y *= y + 2;
  y *= y + 2;
  y = fma(y, y + 2, 1);
  if (biased <= 0) {
    // subnormal result: scale in two steps so that only the last one rounds
    y *= pow2(biased + 0x3fe - 1023);
    biased = 1;
  }
  return y * pow2(biased - 1023);
}

const LN2HI = 0.6931471803691238;
const LN2LO = 1.9082149292705877e-10;
const HALF_SQRT2 = 0.7071067811865476;
const L1 = 0.6666666666666735;
const L2 = 0.3999999999940942;
const L3 = 0.2857142874366239;
const L4 = 0.22222198432149784;
const L5 = 0.1818357216161805;
const L6 = 0.15313837699209373;
const L7 = 0.14798198605116586;

/** ln x as Go's math.Log gives it on amd64. */
export function goLog(x: number): number {
  const h = highWord(x);
  if ((h & 0x7fffffff) === 0 && lowWord(x) === 0) return -Infinity;
  if (h >>> 31 === 1) return NaN;
  if (h >= 0x7ff00000) return x; // +Inf or NaN
  // x = f1·2^k with f1 in [½, 1), read from the bits as they are (a subnormal's exponent field is 0)
  let k = ((h >>> 20) & 0x7ff) - 0x3fe;
  // (scaling a normal x by a power of two gives the same fraction without rebuilding it from its bits)
  let f1 = k > -1022 ? x * pow2(-k) : fromWords((h & 0xfffff) | 0x3fe00000, lowWord(x));
  if (f1 <= HALF_SQRT2) {
    k -= 1;
    f1 *= 2;
  }
  const f = f1 - 1;
  const s = f / (2 + f);
  const s2 = s * s;
  const s4 = s2 * s2;
  const t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
  const t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
  const R = t1 + t2;
  const hfsq = 0.5 * f * f;
  return k * LN2HI - (hfsq - (s * (hfsq + R) + k * LN2LO) - f);
}

const INV_LN10 = 0.4342944819032518; // 1/ln 10 rounded once (Math.LOG10E is one unit lower)

/** log10 x as Go's math.Log10: the natural logarithm times 1/ln 10. */
export function goLog10(x: number): number {
  return goLog(x) * INV_LN10;
}
