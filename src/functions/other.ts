/** Other functions (docs/sql.md §7.14): null tests, ids, clocks, metadata, window bounds, hit counters, state. */
import { randomBytes } from 'node:crypto';
import { cast, CAST_TYPES, defaultZone, EvalError, textOf, typedText, type Value } from '../values/index.js';
import type { ArgInfo, FunctionDef } from './registry.js';
import { scalar } from './define.js';
import { all, exactly, rejects, NUMBER, type Validator } from './validate.js';

// Version-1 (time-based) UUIDs like the reference: 100-ns ticks since 1582-10-15, a random clock sequence and a
// random node id with the multicast bit set (RFC 4122 §4.5).
const GREGORIAN_OFFSET = 122192928000000000n;
const node = randomBytes(6);
node[0] |= 0x01;
const clockSeq = randomBytes(2).readUInt16BE(0) & 0x3fff;
let lastTicks = 0n;

export function uuidV1(): string {
  let ticks = BigInt(Date.now()) * 10000n + GREGORIAN_OFFSET;
  if (ticks <= lastTicks) {
    ticks = lastTicks + 1n; // more than one id per 100 ns tick: keep ids unique and increasing
  }
  lastTicks = ticks;
  const low = Number(ticks & 0xffffffffn);
  const mid = Number((ticks >> 32n) & 0xffffn);
  const hi = Number((ticks >> 48n) & 0x0fffn) | 0x1000;
  const seq = (clockSeq & 0x3fff) | 0x8000;
  const hex = (n: number, w: number) => n.toString(16).padStart(w, '0');
  return `${hex(low, 8)}-${hex(mid, 4)}-${hex(hi, 4)}-${hex(seq, 4)}-${node.toString('hex')}`;
}

const metaValidate: Validator = (a: readonly ArgInfo[]) => {
  if (a.length !== 1) return `Expect 1 arguments but found ${a.length}.`;
  const k = a[0].kind;
  return k === 'field' || k === 'wildcard' || k === 'other' ? undefined : 'Expect meta reference type for parameter 1';
};

const mqttValidate: Validator = (a: readonly ArgInfo[]) => {
  if (a.length !== 1) return `Expect 1 arguments but found ${a.length}.`;
  const k = a[0].kind;
  if (k === 'int' || k === 'float' || k === 'string' || k === 'bool' || k === 'boolExpr' || k === 'unit') {
    return 'Expect meta reference type for parameter 1';
  }
  const n = k === 'field' ? a[0].name?.toLowerCase() : undefined;
  return n === 'topic' || n === 'messageid' ? undefined : 'Parameter of mqtt function can be only topic or messageid.';
};

const keyedStateValidate: Validator = all(exactly(3), (a) => {
  const t = a[1];
  // ⚠ the reference names parameter 1 when the *type* argument is a number or boolean literal
  if (['int', 'float', 'bool', 'boolExpr', 'unit'].includes(t.kind)) return 'Expect string type for parameter 1';
  if (
    (t.kind === 'string' && !(CAST_TYPES as readonly string[]).includes(t.literal as string)) ||
    t.literal === 'bytea'
  ) {
    return 'expect one of following value for the 2nd parameter: bigint, float, string, boolean, datetime';
  }
  return undefined;
});

/** The longest `delay` waits. */
const MAX_DELAY_MS = 60_000;

/**
 * `delay(ms, v)`: the reference sleeps inside the rule, holding back its later events. Here it is an asynchronous
 * function awaited by the rule's asynchronous node with one call in flight, so the rule's events still wait one
 * after the other while the thread serves everything else.
 */
const delayDef: FunctionDef = {
  name: 'delay',
  kind: 'scalar',
  nullCheck: 'N',
  validate: all(exactly(2), rejects(0, NUMBER, ['string', 'bool', 'boolExpr', 'unit'])),
  async: { timeoutMs: MAX_DELAY_MS + 5_000, maxInFlight: 1 },
  execAsync(a) {
    const ms = a[0];
    let n: number;
    if (typeof ms === 'bigint') n = Number(ms);
    else if (typeof ms === 'number' && Number.isInteger(ms)) n = ms;
    else return Promise.reject(new EvalError(`cannot convert ${typedText(ms)} to int`));
    const v = a[1];
    if (n <= 0) return Promise.resolve(v);
    return new Promise((resolve) => setTimeout(() => resolve(v), Math.min(n, MAX_DELAY_MS)));
  },
};

function optionalInt(v: number | undefined): Value {
  return v === undefined ? null : BigInt(v);
}

export const otherFunctions: FunctionDef[] = [
  scalar('isnull', 'none', exactly(1), (a) => a[0] === null || a[0] === undefined),
  scalar(
    'coalesce',
    'none',
    (a) => (a.length === 0 ? 'The arguments should be at least one.' : undefined),
    (a) => {
      for (const v of a) if (v !== null && v !== undefined) return v;
      return null;
    },
  ),
  scalar('cardinality', 'Z', exactly(1), (a) => (Array.isArray(a[0]) ? BigInt(a[0].length) : 0n)),
  scalar('newuuid', 'none', exactly(0), () => uuidV1()),
  scalar('tstamp', 'none', exactly(0), () => BigInt(Date.now())),
  scalar('rule_id', 'none', exactly(0), (_a, ctx) => ctx.ruleId),
  scalar('rule_start', 'none', exactly(0), (_a, ctx) => BigInt(ctx.ruleStart)),
  scalar('meta', 'none', metaValidate, (a) => (a[0] === undefined ? null : a[0]), { argMode: 'metaRef' }),
  scalar(
    'mqtt',
    'N',
    mqttValidate,
    (a) => {
      if (typeof a[0] !== 'string') throw new EvalError('<nil>');
      return a[0];
    },
    { argMode: 'metaRef' },
  ),
  scalar('window_start', 'none', exactly(0), (_a, ctx) => optionalInt(ctx.windowStart)),
  scalar('window_end', 'none', exactly(0), (_a, ctx) => optionalInt(ctx.windowEnd)),
  scalar('event_time', 'none', exactly(0), (_a, ctx) => optionalInt(ctx.eventTime)),
  scalar('last_hit_count', 'none', exactly(0), (_a, ctx) => BigInt(ctx.lastHitCount)),
  scalar('last_hit_time', 'none', exactly(0), (_a, ctx) => BigInt(ctx.lastHitTime)),
  delayDef,
  scalar('get_keyed_state', 'N', keyedStateValidate, (a, ctx) => {
    if (typeof a[0] !== 'string') throw new EvalError(`key ${textOf(a[0])} is not a string`);
    // Without a keyed-state store nothing was ever stored: every key is absent and the default applies.
    const stored = ctx.keyedState ? ctx.keyedState(a[0]) : undefined;
    if (stored === undefined || stored === null) return a[2];
    return cast(stored, textOf(a[1]), defaultZone());
  }),
];
