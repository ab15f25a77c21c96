/**
 * The JavaScript engine of a script: loading checks with eKuiper's texts, value conversion both ways, evaluation
 * errors, the time limit, and the isolation from Node.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ScriptEngine, ScriptLoadError } from '../../src/extensions/scripts-engine.js';
import { DateTime, EvalError, type Value } from '../../src/values/index.js';

function loadError(id: string, source: string, timeoutMs = 1000): string {
  try {
    ScriptEngine.load(id, source, timeoutMs);
  } catch (e) {
    assert.ok(e instanceof ScriptLoadError, String(e));
    return e.message;
  }
  assert.fail('the script loaded');
}

function evalError(engine: ScriptEngine, args: Value[]): string {
  try {
    engine.call(args);
  } catch (e) {
    assert.ok(e instanceof EvalError, String(e));
    return e.message;
  }
  assert.fail('the call succeeded');
}

test('loading: the script must evaluate and define a global function named like the id', () => {
  assert.equal(loadError('f', 'function g(x) { return x; }'), 'cannot find function "f" in script');
  assert.equal(loadError('f', 'var f = 5;'), 'cannot find function "f" in script');
  assert.equal(loadError('f', 'throw new Error("boom")'), 'failed to interprete script: Error: boom');
  assert.match(loadError('f', 'function f( {'), /^failed to interprete script: SyntaxError: /);
  assert.equal(
    loadError('f', 'while (true) {}', 500),
    'failed to interprete script: script execution timed out after 500ms',
  );
  assert.equal(loadError('', 'function f() {}'), 'cannot find function "" in script');
  // helpers, constants and function expressions assigned to globals are fine
  const e = ScriptEngine.load(
    'area',
    'const K = 2; function half(x) { return x / K; }\nvar area = function (w, h) { return half(w * h) * K; };',
  );
  assert.equal(e.call([3n, 4n]), 12n);
});

test('arguments arrive as JS values; integral numbers come back as ints, others as floats', () => {
  const id = ScriptEngine.load('id', 'function id(x) { return x; }');
  const kind = ScriptEngine.load(
    'kind',
    'function kind(x) { return Object.prototype.toString.call(x) + ":" + typeof x; }',
  );
  assert.equal(kind.call([5n]), '[object Number]:number', 'a safe int is a number');
  assert.equal(kind.call([2n ** 60n]), '[object BigInt]:bigint', 'an int beyond 2^53 stays exact as a BigInt');
  assert.equal(id.call([2n ** 60n]), 2n ** 60n);
  assert.equal(kind.call([new DateTime(0)]), '[object Date]:object');
  assert.equal(kind.call([new Uint8Array([1])]), '[object Uint8Array]:object');
  assert.equal(kind.call([[1n]]), '[object Array]:object');
  assert.equal(kind.call([null]), '[object Null]:object');
  assert.equal(kind.call([undefined]), '[object Null]:object', 'a missing field is null');

  assert.equal(id.call([7n]), 7n);
  assert.equal(id.call([2.5]), 2.5);
  assert.equal(id.call([4.0]), 4n, 'an integral float comes back as an int');
  assert.equal(id.call(['text']), 'text');
  assert.equal(id.call([true]), true);
  assert.equal(id.call([null]), null);
  assert.deepEqual(id.call([{ a: 1n, b: [2.5, 'x', null, { c: true }] }]), { a: 1n, b: [2.5, 'x', null, { c: true }] });
  assert.deepEqual(id.call([new Uint8Array([1, 2, 3])]), new Uint8Array([1, 2, 3]));
  const dt = id.call([new DateTime(1700000000123)]);
  assert.ok(dt instanceof DateTime);
  assert.equal(dt.ms, 1700000000123);

  const f2c = ScriptEngine.load('f2c', 'function f2c(f) { return (f - 32) * 5 / 9; }');
  assert.equal(f2c.call([212n]), 100n);
  assert.equal(f2c.call([100n]), ((100 - 32) * 5) / 9);
});

test('results: undefined is null, objects and arrays are converted deeply, odd values are mapped', () => {
  const e = ScriptEngine.load(
    'r',
    `function r(k) {
      switch (k) {
        case 0: return undefined;
        case 1: return { n: 1, f: 1.5, s: "s", u: undefined, fn: function () {}, d: new Date(86400000), nested: [[1], { x: null }] };
        case 2: return 2n ** 70n;
        case 3: return -(2n ** 10n);
        case 4: return new Date(NaN);
        case 5: return new Float64Array([1.5]).buffer.constructor === ArrayBuffer ? new Uint16Array([258]) : null;
        case 6: return JSON.parse('{"__proto__": 1, "a": 2}');
      }
    }`,
  );
  assert.equal(e.call([0n]), null);
  assert.deepEqual(e.call([1n]), {
    n: 1n,
    f: 1.5,
    s: 's',
    u: null,
    fn: null,
    d: new DateTime(86400000),
    nested: [[1n], { x: null }],
  });
  assert.equal(e.call([2n]), Number(2n ** 70n), 'a BigInt beyond int64 becomes a float');
  assert.equal(e.call([3n]), -1024n);
  assert.equal(e.call([4n]), null, 'an invalid date is null');
  assert.deepEqual(e.call([5n]), new Uint8Array([2, 1]), 'any typed array comes back as its bytes');
  const proto = e.call([6n]) as Record<string, Value>;
  assert.deepEqual(Object.keys(proto), ['__proto__', 'a']);
  assert.equal(proto['__proto__'], 1n);
  assert.equal(Object.getPrototypeOf(proto), Object.prototype, 'a "__proto__" key stays a plain key');
});

test('evaluation errors: a thrown value, NaN, ±Infinity, cyclic results', () => {
  const e = ScriptEngine.load(
    'bad',
    `function bad(k) {
      if (k === 1) throw new TypeError("no way");
      if (k === 2) throw "plain text";
      if (k === 3) return 0 / 0;
      if (k === 4) return -1 / 0;
      if (k === 5) { var o = {}; o.self = o; return o; }
      if (k === 6) return undefinedVariable;
      if (k === 7) return bad(k);
      return [0 / 0];
    }`,
  );
  assert.equal(evalError(e, [1n]), 'TypeError: no way');
  assert.equal(evalError(e, [2n]), 'plain text');
  assert.equal(evalError(e, [3n]), 'result is NaN');
  assert.equal(evalError(e, [4n]), 'result is Inf');
  assert.match(evalError(e, [5n]), /nested too deeply/);
  assert.equal(evalError(e, [6n]), 'ReferenceError: undefinedVariable is not defined');
  assert.match(evalError(e, [7n]), /^RangeError: Maximum call stack size exceeded/);
  assert.ok(Number.isNaN((e.call([8n]) as Value[])[0]), 'only the top-level result is checked, as eKuiper does');
  assert.equal(e.call([9n]) instanceof Array, true, 'the engine still works after errors');
});

test('time limit: loops, looping getters and looping promises are cut off; the engine keeps working', () => {
  const e = ScriptEngine.load(
    'slow',
    `var calls = 0;
    function slow(k) {
      calls++;
      if (k === 1) while (true) {}
      if (k === 2) return { get x() { while (true) {} } };
      if (k === 3) return [1, { get y() { for (;;) {} } }];
      return calls;
    }`,
    500,
  );
  for (const k of [1n, 2n, 3n]) assert.equal(evalError(e, [k]), 'script execution timed out after 500ms', `case ${k}`);
  assert.equal(
    loadError(
      'p',
      'throw new Proxy({}, { getOwnPropertyDescriptor: function () { for (;;) {} }, get: function () { for (;;) {} } });',
      500,
    ),
    'failed to interprete script: script execution timed out after 500ms',
    'a thrown proxy is described inside the time limit',
  );
  const thrower = ScriptEngine.load('t', 'function t() { throw { toString: function () { while (true) {} } }; }', 500);
  assert.equal(
    evalError(thrower, []),
    'script execution timed out after 500ms',
    'describing the thrown value is timed too',
  );
  assert.equal(e.call([5n]), 4n, 'state survives an interrupted call');
});

test('isolation: no Node APIs, no code from strings, no way to the host realm, fresh state per engine', () => {
  const probe = ScriptEngine.load(
    'probe',
    `function probe() {
      return [typeof require, typeof process, typeof setTimeout, typeof setInterval, typeof Buffer, typeof module,
        typeof globalThis.global, typeof Promise, typeof FinalizationRegistry, typeof WebAssembly, typeof Atomics,
        typeof Math, typeof JSON, Object.getPrototypeOf(globalThis.constructor) === Object.getPrototypeOf(probe)].join(",");
    }`,
  );
  assert.equal(
    probe.call([]),
    'undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,object,object,true',
  );
  const escape = ScriptEngine.load(
    'esc',
    'function esc(a) { return a.constructor.constructor("return typeof process")(); }',
  );
  assert.equal(evalError(escape, [[1n]]), 'EvalError: Code generation from strings disallowed for this context');
  assert.equal(evalError(escape, [{ a: 1n }]), 'EvalError: Code generation from strings disallowed for this context');
  const evil = ScriptEngine.load('ev', 'function ev() { return eval("1 + 1"); }');
  assert.equal(evalError(evil, []), 'EvalError: Code generation from strings disallowed for this context');
  for (const src of [
    'async function f() {}',
    'function f() { return (async () => 1)(); }',
    'function f() { return import("fs"); }',
    'function f(x) { await x; }',
  ]) {
    assert.equal(
      loadError('f', src),
      'failed to interprete script: async functions, await and import are not supported in javascript functions',
      src,
    );
  }

  const src = 'var n = 0; function counter() { n++; return n; }';
  const a = ScriptEngine.load('counter', src);
  const b = ScriptEngine.load('counter', src);
  assert.deepEqual([a.call([]), a.call([]), b.call([])], [1n, 2n, 1n]);

  const tamper = ScriptEngine.load(
    'tamper',
    'Object.defineProperty(Array.prototype, "0", { set: function () { throw new Error("hooked"); }, configurable: true }); function tamper(x) { return [x, [x]]; }',
  );
  assert.deepEqual(tamper.call([1n]), [1n, [1n]], 'results are built with the pristine built-ins');
  const helper = ScriptEngine.load('h', 'var __eddy_call__ = 1; function h() { return typeof __eddy_call__; }');
  assert.equal(helper.call([]), 'function', 'the host helper cannot be replaced');
});

test('aggregate calls: each argument is the list of the group values', () => {
  const e = ScriptEngine.load(
    'wavg',
    'function wavg(vs, ws) { var s = 0, w = 0; for (var i = 0; i < vs.length; i++) { s += vs[i] * ws[i]; w += ws[i]; } return s / w; }',
  );
  assert.equal(
    e.call([
      [1n, 2n, 3n],
      [1n, 1n, 2n],
    ]),
    2.25,
  );
  assert.equal(e.call([[4n], [2n]]), 4n);
});
