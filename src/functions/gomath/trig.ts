/**
 * Go's circular functions: `math.Sin/Cos/Tan` (the Cephes polynomials after reduction modulo π/4 — a three-part
 * π/4 below 2^29, Payne–Hanek above), `math.Atan/Asin/Acos/Atan2` (Cephes' arctangent with its own range split),
 * and the real part of `cmplx.Cot` for a real argument, which is how eKuiper computes `cot`.
 */
import { reducedOctant, reducePi, reduceQuarterPi } from './reduce.js';

const FOUR_OVER_PI = 4 / Math.PI;
const PI4A = 0.7853981256484985; // π/4 in three parts, for exact multiples by integers below 2^29
const PI4B = 3.774894707930798e-8;
const PI4C = 2.6951514290790595e-15;
const REDUCE_THRESHOLD = 536870912; // 2^29: from here on the three-part π/4 loses too many bits

const S0 = 1.5896230157654656e-10; // sin(z) = z + z³·S(z²) on [-π/4, π/4]
const S1 = -2.5050747762857807e-8;
const S2 = 2.7557313621385722e-6;
const S3 = -0.0001984126982958954;
const S4 = 0.008333333333322118;
const S5 = -0.1666666666666663;
const C0 = -1.1358536521387682e-11; // cos(z) = 1 − z²/2 + z⁴·C(z²)
const C1 = 2.087570084197473e-9;
const C2 = -2.755731417929674e-7;
const C3 = 2.4801587288851704e-5;
const C4 = -0.0013888888888873056;
const C5 = 0.041666666666666595;

let octant = 0;

/** |x| < ∞ reduced modulo π/4 the way Go does; the even octant 0..7 is left in `octant`. */
function reduce(x: number): number {
  if (x >= REDUCE_THRESHOLD) {
    const z = reduceQuarterPi(x);
    octant = reducedOctant;
    return z;
  }
  let j = (x * FOUR_OVER_PI) >>> 0;
  let y = j;
  if ((j & 1) === 1) {
    j++;
    y++;
  }
  octant = j & 7;
  return x - y * PI4A - y * PI4B - y * PI4C;
}

function sinPoly(z: number, zz: number): number {
  return z + z * zz * (((((S0 * zz + S1) * zz + S2) * zz + S3) * zz + S4) * zz + S5);
}

function cosPoly(zz: number): number {
  return 1.0 - 0.5 * zz + zz * zz * (((((C0 * zz + C1) * zz + C2) * zz + C3) * zz + C4) * zz + C5);
}

/** sin x as Go's math.Sin (an odd function: Go reduces |x| and restores the sign at the end). */
export function goSin(x: number): number {
  return x < 0 ? -sinOfPositive(-x) : sinOfPositive(x);
}

function sinOfPositive(x: number): number {
  if (x === 0 || x !== x) return x;
  if (x === Infinity) return NaN;
  const z = reduce(x);
  let j = octant;
  let negative = false;
  if (j > 3) {
    negative = true;
    j -= 4;
  }
  const zz = z * z;
  const y = j === 1 || j === 2 ? cosPoly(zz) : sinPoly(z, zz);
  return negative ? -y : y;
}

/** cos x as Go's math.Cos. */
export function goCos(x: number): number {
  if (x !== x || x === Infinity || x === -Infinity) return NaN;
  const z = reduce(Math.abs(x));
  let j = octant;
  let negative = false;
  if (j > 3) {
    j -= 4;
    negative = true;
  }
  if (j > 1) negative = !negative;
  const zz = z * z;
  const y = j === 1 || j === 2 ? sinPoly(z, zz) : cosPoly(zz);
  return negative ? -y : y;
}

const TP0 = -13093.693918138379; // tan(z) = z + z³·P(z²)/Q(z²)
const TP1 = 1153516.6483858742;
const TP2 = -17956525.197648488;
const TQ1 = 13681.296347069296;
const TQ2 = -1320892.3444021097;
const TQ3 = 25008380.18233579;
const TQ4 = -53869575.592945464;

/** tan x as Go's math.Tan (odd, like sin). */
export function goTan(x: number): number {
  return x < 0 ? -tanOfPositive(-x) : tanOfPositive(x);
}

function tanOfPositive(x: number): number {
  if (x === 0 || x !== x) return x;
  if (x === Infinity) return NaN;
  const z = reduce(x);
  const zz = z * z;
  let y =
    zz > 1e-14 ? z + z * ((zz * ((TP0 * zz + TP1) * zz + TP2)) / ((((zz + TQ1) * zz + TQ2) * zz + TQ3) * zz + TQ4)) : z;
  if ((octant & 2) === 2) y = -1 / y;
  return y;
}

const AP0 = -0.8750608600031904; // atan(x) = x + x³·P(x²)/Q(x²) on [0, 0.66]
const AP1 = -16.157537187333652;
const AP2 = -75.00855792314705;
const AP3 = -122.88666844901361;
const AP4 = -64.85021904942025;
const AQ0 = 24.858464901423062;
const AQ1 = 165.02700983169885;
const AQ2 = 432.88106049129027;
const AQ3 = 485.3903996359137;
const AQ4 = 194.5506571482614;
const MOREBITS = 6.123233995736766e-17; // π/2 − Math.PI/2
const TAN_3PI_8 = 2.414213562373095;

function xatan(x: number): number {
  let z = x * x;
  z =
    (z * ((((AP0 * z + AP1) * z + AP2) * z + AP3) * z + AP4)) /
    (((((z + AQ0) * z + AQ1) * z + AQ2) * z + AQ3) * z + AQ4);
  return x * z + x;
}

/** atan of x ≥ 0 (or NaN): Cephes' three ranges. */
function satan(x: number): number {
  if (x <= 0.66) return xatan(x);
  if (x > TAN_3PI_8) return Math.PI / 2 - xatan(1 / x) + MOREBITS;
  return Math.PI / 4 + xatan((x - 1) / (x + 1)) + 0.5 * MOREBITS;
}

/** atan x as Go's math.Atan. */
export function goAtan(x: number): number {
  if (x === 0) return x;
  return x > 0 ? satan(x) : -satan(-x);
}

/** asin x as Go's math.Asin: through atan, with √(1−x²). */
export function goAsin(x: number): number {
  if (x === 0) return x;
  let negative = false;
  if (x < 0) {
    x = -x;
    negative = true;
  }
  if (x > 1) return NaN;
  let t = Math.sqrt(1 - x * x);
  t = x > 0.7 ? Math.PI / 2 - satan(t / x) : satan(x / t);
  return negative ? -t : t;
}

/** acos x as Go's math.Acos: π/2 − asin x. */
export function goAcos(x: number): number {
  return Math.PI / 2 - goAsin(x);
}

/** atan2(y, x) as Go's math.Atan2. */
export function goAtan2(y: number, x: number): number {
  if (y !== y || x !== x) return NaN;
  if (y === 0) return x >= 0 && !Object.is(x, -0) ? copysign(0, y) : copysign(Math.PI, y);
  if (x === 0) return copysign(Math.PI / 2, y);
  if (x === Infinity) return y === Infinity || y === -Infinity ? copysign(Math.PI / 4, y) : copysign(0, y);
  if (x === -Infinity) return y === Infinity || y === -Infinity ? copysign((3 * Math.PI) / 4, y) : copysign(Math.PI, y);
  if (y === Infinity || y === -Infinity) return copysign(Math.PI / 2, y);
  const q = goAtan(y / x);
  if (x < 0) return q <= 0 ? q + Math.PI : q - Math.PI;
  return q;
}

/** |m| with the sign of s (s is never NaN here). */
function copysign(m: number, s: number): number {
  return s < 0 || Object.is(s, -0) ? -m : m;
}

/**
 * cot x as eKuiper computes it: the real part of Go's `cmplx.Cot(complex(x, 0))`, i.e. sin 2x / (1 − cos 2x), with
 * the denominator summed as a power series (after reducing 2x modulo π) when it is below ¼. An infinite result
 * (x a multiple of π as far as the series can tell) is the caller's out-of-range error.
 */
export function goCot(x: number): number {
  let d = 1 - goCos(2 * x); // cosh(2·0) − cos 2x; Go's Cosh(0) is exactly 1
  if (Math.abs(d) < 0.25) d = cosSeriesRemainder(x);
  if (d === 0) return Infinity;
  return goSin(2 * x) / d;
}

const MACHEP = 1.1102230246251565e-16; // 2^-53

/** Go's cmplx tanSeries for a real argument: 1 − cos 2x as the alternating series of (2x)^2n/(2n)!. */
function cosSeriesRemainder(re: number): number {
  let x = reducePi(Math.abs(2 * re));
  x = x * x;
  let x2 = 1.0;
  let y2 = 1.0;
  let f = 1.0;
  let rn = 0.0;
  let d = 0.0;
  for (;;) {
    rn++;
    f *= rn;
    rn++;
    f *= rn;
    x2 *= x;
    y2 *= 0; // the imaginary part is 0
    let t = y2 + x2;
    t /= f;
    d += t;
    rn++;
    f *= rn;
    rn++;
    f *= rn;
    x2 *= x;
    y2 *= 0;
    t = y2 - x2;
    t /= f;
    d += t;
    if (!(Math.abs(t / d) > MACHEP)) break;
  }
  return d;
}
