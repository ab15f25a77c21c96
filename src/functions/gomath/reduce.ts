/**
 * Payne–Hanek argument reduction as Go's math package does it for huge arguments: `math.Sin/Cos/Tan` reduce
 * x ≥ 2^29 modulo π/4 (Go's trigReduce), `cmplx.Cot` reduces x ≥ 2^30 modulo π (Go's reducePi). Both multiply the
 * 53-bit mantissa of x by a 192-bit window of the binary expansion of 4/π (1/π is the same bits two places
 * further right), keep 128 bits of the product and turn the leading fraction bits into a double by truncation —
 * including Go's quirks: trigReduce takes its lowest bits from the wrong end of the product's low word when the
 * fraction has more than eleven leading zeros, and neither rounds.
 *
 * The expansion of 4/π is computed here once, at load, from π by Machin's formula in BigInt arithmetic; the
 * per-call work uses 16-bit limbs in preallocated typed arrays and allocates nothing.
 */
import { fromWords, highWord, lowWord } from './float.js';

/** Bits of the expansion kept: Go's tables hold 20 64-bit words, and no window reaches past them. */
const TABLE_BITS = 1280;

/**
 * 4/π in Go's table layout, as 16-bit limbs, most significant first: a 64-bit integer part (its value, 1, in the
 * last bit) followed by the first 1216 bits of the fraction.
 */
const FOUR_OVER_PI = fourOverPiLimbs();

function fourOverPiLimbs(): Uint16Array {
  const precision = 1400n; // bits of π computed: well beyond the 1217 significant bits needed
  const one = 1n << precision;
  // arctan(1/n) as a fixed-point number with `precision` fraction bits
  const arctanInv = (n: bigint): bigint => {
    const n2 = n * n;
    let term = one / n;
    let sum = term;
    for (let k = 1n; term !== 0n; k++) {
      term /= n2;
      sum += (k & 1n ? -term : term) / (2n * k + 1n);
    }
    return sum;
  };
  const pi = 16n * arctanInv(5n) - 4n * arctanInv(239n); // Machin: π = 16·atan(1/5) − 4·atan(1/239)
  const bits = (4n << (BigInt(TABLE_BITS - 64) + precision)) / pi; // floor(4/π · 2^1216)
  const limbs = new Uint16Array(TABLE_BITS / 16 + 2); // two zero limbs after the end for the window shifts
  for (let i = 0; i < TABLE_BITS / 16; i++) {
    limbs[i] = Number((bits >> BigInt(TABLE_BITS - 16 * (i + 1))) & 0xffffn);
  }
  return limbs;
}

const window = new Float64Array(12); // 192 bits of 4/π, least significant limb first
const mant = new Float64Array(4); // the 53-bit mantissa, least significant limb first
const prod = new Float64Array(16); // their product, least significant limb first

// The 128 kept bits of the product, as four 32-bit words (hi = top 64 bits, lo = the next 64).
let hi1 = 0;
let hi0 = 0;
let lo1 = 0;
let lo0 = 0;

/**
 * floor(W·m / 2^64) mod 2^128 into hi1:hi0:lo1:lo0, where m is x's integer mantissa (x = m·2^e) and W is the
 * 192-bit window of the 4/π expansion starting `e + offset` bits after its first bit.
 */
function multiplyWindow(x: number, offset: number): void {
  const h = highWord(x);
  const l = lowWord(x);
  const e = ((h >>> 20) & 0x7ff) - 1023 - 52;
  const start = e + offset;
  const q = start >> 4;
  const s = start & 15;
  for (let k = 0; k < 12; k++) {
    window[11 - k] = ((FOUR_OVER_PI[q + k] << s) | (FOUR_OVER_PI[q + k + 1] >>> (16 - s))) & 0xffff;
  }
  const mh = (h & 0xfffff) | 0x100000;
  mant[0] = l & 0xffff;
  mant[1] = l >>> 16;
  mant[2] = mh & 0xffff;
  mant[3] = mh >>> 16;
  prod.fill(0);
  for (let i = 0; i < 12; i++) {
    const w = window[i];
    for (let j = 0; j < 4; j++) prod[i + j] += w * mant[j];
  }
  let carry = 0;
  for (let i = 0; i < 16; i++) {
    const v = prod[i] + carry;
    carry = Math.floor(v / 65536);
    prod[i] = v - carry * 65536;
  }
  hi1 = (prod[11] * 65536 + prod[10]) >>> 0;
  hi0 = (prod[9] * 65536 + prod[8]) >>> 0;
  lo1 = (prod[7] * 65536 + prod[6]) >>> 0;
  lo0 = (prod[5] * 65536 + prod[4]) >>> 0;
}

/**
 * The double Go builds from a 64-bit fraction f (f1:f0) and a 64-bit word g (g1:g0) that fills in from below:
 * with n leading zeros in f, the mantissa is the 52 bits after the leading one of (f << n+1) | (g >> 63-n), and
 * the value 2^-(n+1)·1.mantissa — truncated, not rounded. Shifts of 64 or more give 0, as in Go.
 */
function fractionToDouble(f1: number, f0: number, g1: number, g0: number): number {
  const n = f1 !== 0 ? Math.clz32(f1) : 32 + Math.clz32(f0);
  const up = n + 1; // 1..65
  let x1: number;
  let x0: number;
  if (up >= 64) {
    x1 = 0;
    x0 = 0;
  } else if (up >= 32) {
    x1 = f0 << (up - 32);
    x0 = 0;
  } else {
    x1 = (f1 << up) | (f0 >>> (32 - up));
    x0 = f0 << up;
  }
  const down = 64 - up; // 63..-1; Go's unsigned shift count makes -1 a shift by 2^64-1, i.e. 0
  if (down >= 0) {
    if (down === 0) {
      x1 |= g1;
      x0 |= g0;
    } else if (down >= 32) {
      x0 |= g1 >>> (down - 32);
    } else {
      x1 |= g1 >>> down;
      x0 |= (g0 >>> down) | (g1 << (32 - down));
    }
  }
  // top 52 bits of x become the mantissa; the exponent is -(n+1)
  return fromWords(((1023 - up) << 20) | ((x1 >>> 12) & 0xfffff), ((x1 << 20) | (x0 >>> 12)) >>> 0);
}

/** The octant Go's trigReduce returns beside the reduced argument. */
export let reducedOctant = 0;

/**
 * Go's trigReduce, for x ≥ 2^29: returns z with x ≡ (j + z/(π/4))·π/4 modulo 2π, j even, and leaves j (0..7) in
 * {@link reducedOctant}.
 */
export function reduceQuarterPi(x: number): number {
  multiplyWindow(x, 61);
  let j = hi1 >>> 29;
  // the fraction: the 64 bits after the three octant bits; Go fills it from the top of the low word again
  const f1 = ((hi1 << 3) | (hi0 >>> 29)) >>> 0;
  const f0 = ((hi0 << 3) | (lo1 >>> 29)) >>> 0;
  let z = fractionToDouble(f1, f0, lo1, lo0);
  if ((j & 1) === 1) {
    j = (j + 1) & 7;
    z -= 1;
  }
  reducedOctant = j;
  return z * (Math.PI / 4);
}

const PI1 = 3.141592502593994; // π split into three parts whose multiples by an integer < 2^30 are exact
const PI2 = 1.5099578831723193e-7;
const PI3 = 1.0780605716316238e-14;

/** Go's cmplx reducePi: x ≥ 0 reduced modulo π into [-π/2, π/2]. */
export function reducePi(x: number): number {
  if (x < 1073741824) {
    const t = Math.trunc(x / Math.PI + 0.5);
    return x - t * PI1 - t * PI2 - t * PI3;
  }
  multiplyWindow(x, 62);
  let z = fractionToDouble(hi1, hi0, lo1, lo0);
  if (z > 0.5) z -= 1;
  return Math.PI * z;
}

/** For tests: the expansion of 4/π as Go's 64-bit table words, in hex. */
export function fourOverPiWords(): string[] {
  const out: string[] = [];
  for (let i = 0; i < TABLE_BITS / 16; i += 4) {
    let w = '';
    for (let k = 0; k < 4; k++) w += FOUR_OVER_PI[i + k].toString(16).padStart(4, '0');
    out.push(w);
  }
  return out;
}
