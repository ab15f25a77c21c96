/**
 * Every SQL math function against Go's math package, bit for bit: test/functions/gomath/vectors.json holds Go's
 * results (written by vectors.go beside it; see its header to regenerate) and each vector is replayed through the
 * function registry the way compiled SQL calls it, a few more through a planned SELECT and a running rule.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Value } from '../../src/values/index.js';
import { call } from './helpers.js';
import { plan, run } from '../plan/helpers.js';
import { createHarness, plainOut } from '../runtime/harness.js';
import { until } from '../runtime/helpers.js';
import { fourOverPiWords } from '../../src/functions/gomath/reduce.js';

interface Vectors {
  pi: string;
  unary: Record<string, [string, string][]>;
  binary: Record<string, [string, string, string][]>;
}

const vectors = JSON.parse(readFileSync(new URL('gomath/vectors.json', import.meta.url), 'utf8')) as Vectors;

const bits = new Float64Array(1);
const bitsU64 = new BigUint64Array(bits.buffer);

function fromHex(h: string): number {
  bitsU64[0] = BigInt(`0x${h}`);
  return bits[0];
}

function hex(x: number): string {
  bits[0] = x;
  return bitsU64[0].toString(16).padStart(16, '0');
}

/** What a SQL call returns, or its error message. */
function outcome(name: string, args: number[]): Value | { error: string } {
  try {
    return call(name, ...args);
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/** What the SQL function gives for Go's raw result: NaN is null (docs/sql.md §7.0), an infinite cot an error. */
function expected(name: string, goResult: number): Value | { error: string } {
  if (goResult !== goResult) return null;
  if (name === 'cot' && !Number.isFinite(goResult)) return { error: 'call func cot error: out-of-range error' };
  return goResult;
}

/** Mismatches as readable lines; numbers are compared by bit pattern (so -0 ≠ 0). */
function mismatches(name: string, inputs: number[][], goResults: number[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < inputs.length; i++) {
    const got = outcome(name, inputs[i]);
    const want = expected(name, goResults[i]);
    const same =
      typeof got === 'number' && typeof want === 'number'
        ? hex(got) === hex(want)
        : JSON.stringify(got) === JSON.stringify(want);
    if (!same) {
      const show = (v: Value | { error: string }) => (typeof v === 'number' ? `${v} (${hex(v)})` : JSON.stringify(v));
      out.push(`${name}(${inputs[i].join(', ')}): Go ${show(want)}, Eddy ${show(got)}`);
    }
  }
  return out;
}

/** SQL names that share one set of vectors. */
const SQL_NAMES: Record<string, string[]> = { ceil: ['ceil', 'ceiling'], power: ['power', 'pow'], log2: ['log'] };

for (const [fn, rows] of Object.entries(vectors.unary)) {
  test(`${fn}(x) gives Go's result for all ${rows.length} vectors`, () => {
    const inputs = rows.map(([x]) => [fromHex(x)]);
    const results = rows.map(([, r]) => fromHex(r));
    for (const name of SQL_NAMES[fn] ?? [fn]) assert.deepEqual(mismatches(name, inputs, results).slice(0, 10), []);
  });
}

for (const [fn, rows] of Object.entries(vectors.binary)) {
  test(`${SQL_NAMES[fn]?.[0] ?? fn}(a, b) gives Go's result for all ${rows.length} vectors`, () => {
    const inputs = rows.map(([a, b]) => [fromHex(a), fromHex(b)]);
    const results = rows.map(([, , r]) => fromHex(r));
    for (const name of SQL_NAMES[fn] ?? [fn]) assert.deepEqual(mismatches(name, inputs, results).slice(0, 10), []);
  });
}

test('pi() is Go math.Pi', () => {
  assert.equal(hex(call('pi') as number), vectors.pi);
});

test('int arguments convert to float first: the results are floats with the same bits', () => {
  assert.equal(call('log', 35n), 1.5440680443502754);
  assert.equal(call('sin', 27n), call('sin', 27));
  assert.equal(call('power', 2n, 10n), 1024);
  assert.equal(typeof call('power', 2n, 10n), 'number');
  assert.equal(typeof call('round', 10n), 'number');
  assert.equal(call('abs', -7n), 7n);
  assert.equal(call('sign', -2.5), -1n);
});

test('Payne–Hanek reduction uses the binary expansion of 4/π, computed at load', () => {
  // 4/π = 1.45f306dc9c882a53f84eafa3ea69bb81b6c52b3278872083fca2c757bd778ac36e48dc7484… (hex)
  assert.deepEqual(fourOverPiWords().slice(0, 6), [
    '0000000000000001',
    '45f306dc9c882a53',
    'f84eafa3ea69bb81',
    'b6c52b3278872083',
    'fca2c757bd778ac3',
    '6e48dc74849ba5c0',
  ]);
});

test("a planned SELECT gives eKuiper's values (log(35), sin(27.1), exp, power, cot, degrees)", () => {
  const p = plan(
    'SELECT log(35) AS l, sin(27.1) AS s, log(x) AS lx, sin(y) AS sy, exp(y) AS e, power(y, 1.5) AS p, ' +
      'cot(y) AS c, degrees(y) AS d, log(2, x) AS l2 FROM s',
  );
  assert.deepEqual(run(p, { x: 35, y: 27.1 }), {
    l: 1.5440680443502754, // V8's Math.log10 gives …757
    s: 0.9224328169230859, // V8's Math.sin gives …858
    lx: 1.5440680443502754,
    sy: 0.9224328169230859,
    e: goValue('exp', 27.1),
    p: goValue('power', 27.1, 1.5),
    c: goValue('cot', 27.1),
    d: goValue('degrees', 27.1),
    l2: goValue('log2', 2, 35),
  });
});

test("a running rule emits eKuiper's values", async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM gomath (x FLOAT, y FLOAT, z FLOAT) WITH (DATASOURCE="t/gomath", TYPE="memory")');
    const { out } = await h.rule('gomath', 'SELECT log(x) AS l, sin(y) AS s, tan(z) AS t FROM gomath');
    h.publish('t/gomath', { x: 35, y: 27.1, z: 1e15 }); // 1e15 takes Go's Payne–Hanek reduction
    await until(() => out.length === 1, 'the rule output');
    assert.deepEqual(plainOut(out), [[{ l: 1.5440680443502754, s: 0.9224328169230859, t: goValue('tan', 1e15) }]]);
  } finally {
    await h.close();
  }
});

/** Go's result for one vector of the file, looked up by its inputs (fails when the file does not have it). */
function goValue(fn: string, ...args: number[]): number {
  const keys = args.map(hex);
  const rows: string[][] = vectors.unary[fn] ?? vectors.binary[fn];
  const row = rows.find((r) => keys.every((k, i) => r[i] === k));
  assert.ok(row, `vectors.json has ${fn}(${args.join(', ')})`);
  return fromHex(row[args.length]);
}
