/**
 * The float plumbing of the Go math port against exact arithmetic: `fma` against a·b + c computed exactly in BigInt
 * and rounded once (BigInt → Number rounds to nearest, ties to even), and Go's frexp/ldexp against their
 * definitions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { fma, frexp, frexpExp, ldexp, pow2 } from '../../../src/functions/gomath/float.js';

const bits = new Float64Array(1);
const bitsU64 = new BigUint64Array(bits.buffer);

/** x = m·2^e exactly, m an integer. */
function decompose(x: number): [bigint, number] {
  bits[0] = x;
  const b = bitsU64[0];
  const biased = Number((b >> 52n) & 0x7ffn);
  let m = b & ((1n << 52n) - 1n);
  if (biased !== 0) m |= 1n << 52n;
  const e = (biased === 0 ? 1 : biased) - 1075;
  return [b >> 63n ? -m : m, e];
}

/** a·b + c rounded once (results in the normal range). */
function exactFma(a: number, b: number, c: number): number {
  const [ma, ea] = decompose(a);
  const [mb, eb] = decompose(b);
  let [mp, ep] = [ma * mb, ea + eb];
  let [mc, ec] = decompose(c);
  if (mp === 0n && mc === 0n) return a * b + c; // the sign of an exact zero follows the usual sum rules
  // A term more than 200 binades below the other only acts as a sticky bit: keep just its sign, 150 binades down.
  const top = (m: bigint, e: number) => (m === 0n ? -Infinity : e + (m < 0n ? -m : m).toString(2).length);
  const tp = top(mp, ep);
  const tc = top(mc, ec);
  if (mp !== 0n && tp < tc - 200) [mp, ep] = [mp < 0n ? -1n : 1n, tc - 150];
  if (mc !== 0n && tc < tp - 200) [mc, ec] = [mc < 0n ? -1n : 1n, tp - 150];
  // a common scale for both terms (a zero term has no scale of its own)
  const e = mp === 0n ? ec : mc === 0n ? ep : Math.min(ep, ec);
  const n = (mp << BigInt(ep - e)) + (mc << BigInt(ec - e));
  if (n === 0n) return a * b + c;
  // Number(n) rounds n to 53 bits, ties to even; scaling a normal result by powers of two is exact (in two steps,
  // as 2^e alone may be below the smallest double)
  return Number(n) * 2 ** (e + 600) * 2 ** -600;
}

const moderate = fc.double({ min: -1e30, max: 1e30, noNaN: true }).filter((x) => x === 0 || Math.abs(x) > 1e-30);

/** Short mantissas at nearby scales: products fit in 54 bits, so sums land exactly halfway between doubles often. */
const tieProne = fc
  .tuple(
    fc.integer({ min: -(2 ** 27), max: 2 ** 27 }),
    fc.integer({ min: -(2 ** 27), max: 2 ** 27 }),
    fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    fc.integer({ min: -60, max: 60 }),
    fc.integer({ min: -60, max: 60 }),
    fc.integer({ min: -30, max: 30 }),
  )
  .map(([ma, mb, mc, ea, eb, shift]) => {
    const a = ma * 2 ** ea;
    const b = mb * 2 ** eb;
    // c near a·b's magnitude, with a few more bits, so that cancellation and carries both happen
    const c = (mc * 2 ** (ea + eb + shift)) / 2 ** 13;
    return [a, b, c] as const;
  });

/**
 * Triples where c + RN(a·b) is exactly halfway between two doubles while a·b itself has bits beyond RN(a·b): the
 * dropped low part of the product alone decides the rounding direction.
 */
const exactTies = fc
  .tuple(
    fc.double({ min: 1, max: 2, noNaN: true }),
    fc.double({ min: 1, max: 2, noNaN: true }),
    fc.integer({ min: 2 ** 31, max: 2 ** 32 - 1 }),
    fc.integer({ min: 0, max: 2 ** 21 - 1 }),
    fc.boolean(),
  )
  .map(([a, b, hi, lo, negative]) => {
    const [m, e] = decompose(a * b);
    let low = 0; // the binary place of the product's lowest set bit
    while (((m >> BigInt(low)) & 1n) === 0n) low++;
    // c (53 bits) has its last place one above that, so c + p ends in exactly half of c's last place
    const c = (hi * 2 ** 21 + lo) * 2 ** (e + low + 1) * (negative ? -1 : 1);
    return [a, b, c] as const;
  });

test('fma rounds a·b + c once, like the FMA instruction', () => {
  fc.assert(
    fc.property(exactTies, ([a, b, c]) => Object.is(fma(a, b, c), exactFma(a, b, c))),
    { numRuns: 20000 },
  );
  fc.assert(
    fc.property(moderate, moderate, moderate, (a, b, c) => Object.is(fma(a, b, c), exactFma(a, b, c))),
    { numRuns: 20000 },
  );
  fc.assert(
    fc.property(tieProne, ([a, b, c]) => Object.is(fma(a, b, c), exactFma(a, b, c))),
    { numRuns: 50000 },
  );
});

test('fma on the operands Go’s Exp gives it: Horner steps and the final squaring step', () => {
  fc.assert(
    fc.property(
      fc.double({ min: -0.0217, max: 0.0217, noNaN: true }),
      fc.double({ min: -2, max: 2, noNaN: true }),
      (r, p) => {
        for (const c of [1, 0.5, 0.16666666666666666, 2.48015873015873e-5]) {
          if (!Object.is(fma(p, r, c), exactFma(p, r, c))) return false;
        }
        return Object.is(fma(r, r + 2, 1), exactFma(r, r + 2, 1));
      },
    ),
    { numRuns: 20000 },
  );
});

test('frexp and ldexp: fraction in [½, 1) with the sign, exponents through the subnormals, Go’s cut-offs', () => {
  for (const x of [1, -3, 0.1, 5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, 1e-310]) {
    const f = frexp(x);
    assert.ok(Math.abs(f) >= 0.5 && Math.abs(f) < 1, `frexp(${x})`);
    assert.equal(Math.sign(f), Math.sign(x));
    assert.equal(ldexp(f, frexpExp), x, `ldexp(frexp(${x}))`);
  }
  assert.equal(frexp(0), 0);
  assert.equal(frexpExp, 0);
  assert.ok(Object.is(frexp(-0), -0));
  assert.equal(ldexp(1, 1024), Infinity);
  assert.equal(ldexp(-1, 1024), -Infinity);
  assert.equal(ldexp(1, -1074), 5e-324);
  assert.equal(ldexp(1.5, -1075), 5e-324); // 1.5·2^-1075 rounds up to the smallest subnormal
  assert.ok(Object.is(ldexp(-1, -1076), -0));
  assert.equal(ldexp(0.75, -1073), 1e-323); // 0.75·2^-1073 = 1.5·2^-1074: a tie, to even (2·2^-1074)
  for (let k = -1074; k <= 1023; k += 7) assert.equal(pow2(k), 2 ** k);
});
