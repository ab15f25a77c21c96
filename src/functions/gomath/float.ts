/**
 * Float64 plumbing for the Go math port (./index.ts): bit access, Go's frexp/ldexp, and an exactly rounded fused
 * multiply-add, which Go's amd64 `math.Exp` uses on CPUs with FMA and JavaScript does not offer.
 *
 * Everything works on module-level scratch arrays and variables, so no call allocates.
 */

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
/** Index of the high (sign, exponent, top of mantissa) word in `u32`: the platform's byte order decides. */
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const LO = 1 - HI;

/** High 32 bits of a double (sign, 11 exponent bits, top 20 mantissa bits). */
export function highWord(x: number): number {
  f64[0] = x;
  return u32[HI];
}

/** Low 32 bits of a double's mantissa. */
export function lowWord(x: number): number {
  f64[0] = x;
  return u32[LO];
}

/** The double with the given high and low 32-bit words. */
export function fromWords(hi: number, lo: number): number {
  u32[HI] = hi;
  u32[LO] = lo;
  return f64[0];
}

/** POWERS[i] = 2^(i − 1074): every power of two a double holds, built by exact doubling. */
const POWERS = new Float64Array(2098);
POWERS[0] = 5e-324;
for (let i = 1; i < POWERS.length; i++) POWERS[i] = POWERS[i - 1] * 2;

/**
 * 2^k for integer k in [-1074, 1023]. A table read, not built from bit patterns: writing a double's two halves
 * and reading it back whole stalls the CPU's store forwarding, which costs more than the arithmetic around it.
 */
export function pow2(k: number): number {
  return POWERS[k + 1074];
}

const TWO52 = 4503599627370496;
const SMALLEST_NORMAL = 2.2250738585072014e-308;

/** The exponent Go's `math.Frexp` returns for `frexpExp`, set by {@link frexp}. */
export let frexpExp = 0;

/**
 * Go's `math.Frexp`: returns the fraction in [½, 1) with x's sign and leaves the power of two in
 * {@link frexpExp}; ±0, ±Inf and NaN come back unchanged with exponent 0.
 */
export function frexp(x: number): number {
  if (x === 0 || x !== x || x === Infinity || x === -Infinity) {
    frexpExp = 0;
    return x;
  }
  let e = 0;
  if (Math.abs(x) < SMALLEST_NORMAL) {
    x *= TWO52;
    e = -52;
  }
  const k = ((highWord(x) >>> 20) & 0x7ff) - 1022;
  frexpExp = e + k;
  return x * pow2(-k); // exact: only the exponent changes
}

/** Go's `math.Ldexp`: x·2^e with Go's own underflow and overflow cut-offs and a single rounding. */
export function ldexp(x: number, e: number): number {
  if (x === 0 || x !== x || x === Infinity || x === -Infinity) return x;
  if (Math.abs(x) < SMALLEST_NORMAL) {
    x *= TWO52;
    e -= 52;
  }
  const k = ((highWord(x) >>> 20) & 0x7ff) - 1023;
  e += k;
  if (e < -1075) return x < 0 ? -0 : 0;
  if (e > 1023) return x < 0 ? -Infinity : Infinity;
  const m = x * pow2(-k); // x's mantissa in [1, 2), exactly
  // a subnormal result is built 53 binades up and scaled down once, so that it rounds once
  return e < -1022 ? pow2(-53) * (m * pow2(e + 53)) : m * pow2(e);
}

/** Rounds to the nearest integer, ties to even, as the x86 CVTSD2SI instruction does; |x| < 2^51. */
export function roundHalfEven(x: number): number {
  const MAGIC = 6755399441055744; // 2^52 + 2^51: adding it leaves no fraction bits
  return x + MAGIC - MAGIC;
}

const SPLIT = 134217729; // 2^27 + 1, Veltkamp's splitter for doubles

/**
 * `a·b + c` rounded once, as the FMA instructions compute it. The product is split exactly into p + pe (Dekker) and
 * added to c exactly as s + se (Knuth's two-sum), so the answer is s + (se + pe) rounded once. se + pe is small
 * beside s (both are rounding errors, unless c + p cancelled, and then s is exact and se is 0), so rounding
 * it first and then adding to s can only go wrong where s + v falls exactly halfway between two doubles while the
 * part of se + pe that v dropped is not 0: that part then decides the direction, as it would have unrounded.
 * Exact while the product neither overflows nor loses bits to underflow — always so where Go's Exp uses it.
 */
export function fma(a: number, b: number, c: number): number {
  const p = a * b;
  const s = c + p;
  // Fast path: |a·b − p| ≤ |p|·2^-53, so a·b + c lies between c + (p − slack) and c + (p + slack); when both of
  // those round to s, rounding being monotonic, so does a·b + c. (The check is off the dependency chain of s.)
  const slack = Math.abs(p) * 4.440892098500626e-16 + 1e-322;
  if (c + (p + slack) === s && c + (p - slack) === s) return s;
  return fmaSlow(a, b, c, p);
}

function fmaSlow(a: number, b: number, c: number, p: number): number {
  let t = SPLIT * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = SPLIT * b;
  const bh = t - (t - b);
  const bl = b - bh;
  const pe = ah * bh - p + ah * bl + al * bh + al * bl; // a·b = p + pe exactly
  const s = c + p;
  let d = s - c;
  const se = c - (s - d) + (p - d); // c + p = s + se exactly
  const v = se + pe;
  d = v - se;
  const dropped = se - (v - d) + (pe - d); // se + pe = v + dropped exactly
  if (v === 0) return s; // (keeps the sign of an exact zero)
  const w = s + v;
  if (dropped === 0) return w;
  d = w - s;
  const r = s - (w - d) + (v - d); // s + v = w + r exactly
  // s + v exactly halfway to the neighbour w + 2r, and the dropped part points the same way: the neighbour it is
  if (r !== 0 && w + 2 * r - w === 2 * r && r > 0 === dropped > 0) return w + 2 * r;
  return w;
}
