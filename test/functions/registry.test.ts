import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EvalError } from '../../src/values/index.js';
import {
  bindAggregate,
  bindScalar,
  createFuncContext,
  FunctionRegistry,
  isNullish,
  registerBuiltins,
  type FunctionDef,
} from '../../src/functions/index.js';

const ctx = createFuncContext();

test('a plugin function registers exactly like a built-in and is found case-insensitively', () => {
  const reg = registerBuiltins(new FunctionRegistry());
  const echo: FunctionDef = { name: 'myEcho', kind: 'scalar', nullCheck: 'none', exec: (a) => a[0] };
  reg.register(echo);
  assert.equal(reg.get('MYECHO'), echo);
  assert.equal(reg.kindOf('myecho'), 'scalar');
  assert.equal(reg.validateCall('MyEcho', [{ kind: 'int', literal: 1n }]), undefined);
  assert.ok(reg.names().includes('myecho'));
  // array_map sees functions registered later
  assert.deepEqual(bindScalar(reg.get('array_map')!)(['myecho', [1n, 2n]], ctx), [1n, 2n]);
  assert.equal(reg.unregister('MYECHO'), true);
  assert.equal(reg.get('myecho'), undefined);
  assert.equal(reg.validateCall('myEcho', []), 'function myEcho not found');
});

test('null pre-checks treat null, [] and {} as null', () => {
  const seen: unknown[] = [];
  const mk = (nullCheck: 'N' | 'F' | 'Z' | 'none'): FunctionDef => ({
    name: 'f',
    kind: 'scalar',
    nullCheck,
    exec: (a) => {
      seen.push(a[0]);
      return 'ran';
    },
  });
  for (const v of [null, undefined, [], {}]) {
    assert.equal(bindScalar(mk('N'))([1n, v], ctx), null);
    assert.equal(bindScalar(mk('F'))([v], ctx), false);
    assert.equal(bindScalar(mk('Z'))([v], ctx), 0n);
    assert.equal(bindScalar(mk('none'))([v], ctx), 'ran');
  }
  assert.equal(seen.length, 4);
  assert.equal(bindScalar(mk('N'))([0n, '', false, [null], { a: null }], ctx), 'ran');
  assert.equal(isNullish(new Uint8Array()), false);
});

test('failures are prefixed with the function name; unexpected exceptions become EvalErrors', () => {
  const boom: FunctionDef = {
    name: 'boom',
    kind: 'scalar',
    nullCheck: 'none',
    exec: () => {
      throw new TypeError('x is not a function');
    },
  };
  assert.throws(
    () => bindScalar(boom)([], ctx),
    (e) => e instanceof EvalError && e.message === 'call func boom error: x is not a function',
  );
});

test('an aggregate over an empty group is null under pre-check N', () => {
  const reg = registerBuiltins(new FunctionRegistry());
  assert.equal(bindAggregate(reg.get('count')!)([[]], ctx), null);
  assert.deepEqual(bindAggregate(reg.get('collect')!)([[]], ctx), []);
  assert.equal(reg.get('deduplicate')!.appendRows, true);
});

test('every catalogue function is registered with a kind', () => {
  const reg = registerBuiltins(new FunctionRegistry());
  assert.equal(reg.names().length, 178);
  const kinds = new Map<string, number>();
  for (const n of reg.names()) kinds.set(reg.kindOf(n)!, (kinds.get(reg.kindOf(n)!) ?? 0) + 1);
  assert.equal(kinds.get('aggregate'), 17);
  assert.equal(kinds.get('analytic'), 9);
  assert.equal(kinds.get('srf'), 1);
  assert.equal(kinds.get('multicol'), 1);
  assert.equal(kinds.get('window'), 1);
});
