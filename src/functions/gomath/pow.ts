/**
 * Go's `math.Pow`: special cases first, then the integer part of the exponent by repeated squaring of the
 * mantissa (with the binary exponent kept apart, so intermediate results never overflow) and the fractional part
 * through `Exp(yf·Log(x))` — Go's amd64 assembly Exp and Log (./explog.ts).
 */
import { goExp, goLog } from './explog.js';
import { frexp, frexpExp, ldexp } from './float.js';

const TWO53 = 9007199254740992;
const TWO63 = 9223372036854775808;

/** y is an odd integer as Go tests it (through int64, so only below 2^53 can it be odd). */
function isOddInt(y: number): boolean {
  const a = Math.abs(y);
  return a < TWO53 && Number.isInteger(a) && a % 2 === 1;
}

/** x^y as Go's math.Pow. */
export function goPow(x: number, y: number): number {
  if (y === 0 || x === 1) return 1;
  if (y === 1) return x;
  if (x !== x || y !== y) return NaN;
  if (x === 0) {
    if (y < 0) return isOddInt(y) ? (Object.is(x, -0) ? -Infinity : Infinity) : Infinity;
    return isOddInt(y) ? x : 0;
  }
  if (y === Infinity || y === -Infinity) {
    if (x === -1) return 1;
    return Math.abs(x) < 1 === (y === Infinity) ? 0 : Infinity;
  }
  if (x === Infinity || x === -Infinity) {
    if (x === -Infinity) return goPow(1 / x, -y); // (−0)^−y
    return y < 0 ? 0 : Infinity;
  }
  if (y === 0.5) return Math.sqrt(x);
  if (y === -0.5) return 1 / Math.sqrt(x);

  let yi = Math.trunc(Math.abs(y));
  let yf = Math.abs(y) - yi;
  if (yf !== 0 && x < 0) return NaN;
  if (yi >= TWO63) {
    if (x === -1) return 1;
    return Math.abs(x) < 1 === y > 0 ? 0 : Infinity;
  }
  // ans = a1 · 2^ae
  let a1 = 1.0;
  let ae = 0;
  if (yf !== 0) {
    if (yf > 0.5) {
      yf--;
      yi++;
    }
    a1 = goExp(yf * goLog(x));
  }
  let x1 = frexp(x);
  let xe = frexpExp;
  for (let i = yi; i !== 0; i = Math.floor(i / 2)) {
    if (xe < -4096 || 4096 < xe) {
      // the exponent alone over- or underflows; Ldexp below saturates
      ae += xe;
      break;
    }
    if (i % 2 === 1) {
      a1 *= x1;
      ae += xe;
    }
    x1 *= x1;
    xe *= 2;
    if (x1 < 0.5) {
      x1 += x1;
      xe--;
    }
  }
  if (y < 0) {
    a1 = 1 / a1;
    ae = -ae;
  }
  return ldexp(a1, ae);
}
