/**
 * One JavaScript engine of a script (docs/runtime.md §8): a `node:vm` context of its own in which the script was
 * evaluated, and the per-call conversion of Eddy values to JS values and back.
 *
 * Isolation: the context is created over a null-prototype object, so the script sees only the ECMAScript built-ins
 * (no `require`, `process`, timers, `Buffer`), and `this.constructor.constructor` leads to the context's own
 * `Function`, not to the host's. Every evaluation runs under vm's `timeout`, so a `while (true)` cannot hang a rule.
 *
 * A function is called synchronously, once per record: nothing may run after the call returns. Work queued for later
 * would run outside the time limit (or, when a time-out interrupts the context's own microtask queue, corrupt Node's
 * async-hooks stack and abort the process). So the script realm has no way to queue any: code generation from
 * strings is off (the script's text is all the code there is), the text may not use `async`, `await` or `import`,
 * and `Promise`, `Atomics`, `WebAssembly` and `FinalizationRegistry` are removed before the script runs.
 * node:vm is not a security boundary against a hostile author; it keeps honest mistakes from reaching the host.
 *
 * Everything that could run script code — argument conversion (prototype setters), the call itself, reading the
 * result (getters, proxies), describing a thrown value (`toString`) — happens inside the timed evaluation, in a
 * helper installed before the script runs (so it holds the pristine built-ins). The host then reads only what the
 * helper built: primitives, null-prototype objects, arrays filled with own data properties, and two marker objects
 * for dates and bytes.
 */
import vm from 'node:vm';
import { types } from 'node:util';
import { DateTime, EvalError, stopRuleAfterThis, type Value, type ValueObject } from '../values/index.js';

/** Default time limit of one evaluation (the script's load, or one call). */
export const DEFAULT_SCRIPT_TIMEOUT_MS = 1000;

/** Values nested deeper than this are refused (cyclic results, runaway arguments). */
const MAX_DEPTH = 256;

/** Name of the helper the host calls through `vm.Script`; non-writable, so a script cannot replace it. */
const HELPER = '__eddy_call__';

/** The helper's shared state; a null-prototype object, so writing it from the host triggers no script code. */
interface HelperState {
  mode: 'find' | 'describe' | 'call';
  id: string;
  args: readonly Value[];
  /** a value the script's top level threw, for `describe` */
  thrown: unknown;
  /** text of the value the script threw, when the last evaluation failed */
  error: string | undefined;
  /** prototypes of the helper's result markers */
  readonly dateMark: object;
  readonly bytesMark: object;
}

// Runs inside the context before the script. Plain ES5+ with captured built-ins; its own code, never the user's.
// Values are written with defineProperty, so setters a script puts on Object.prototype or Array.prototype never run.
const PRELUDE = `(function (dateTimeProto, maxDepth, helperName) {
  'use strict';
  var G = globalThis, isArray = Array.isArray, keys = Object.keys, getProto = Object.getPrototypeOf,
    create = Object.create, define = Object.defineProperty, isView = ArrayBuffer.isView, apply = Reflect.apply,
    objToString = Object.prototype.toString, getTime = Date.prototype.getTime, U8 = Uint8Array, D = Date,
    Str = String, Num = Number, Err = Error, MAX = 9007199254740991;
  delete G.Promise; delete G.Atomics; delete G.WebAssembly; delete G.FinalizationRegistry;
  function call(f, self, a) { return apply(f, self, a); }
  function DateMark(ms) { this.ms = ms; }
  function BytesMark(b, n) { this.b = b; this.n = n; }
  var state = create(null);
  state.mode = 'call'; state.id = ''; state.args = null; state.thrown = undefined; state.error = undefined;
  state.dateMark = DateMark.prototype; state.bytesMark = BytesMark.prototype;
  var fn;

  function toJs(v, d) {
    if (v === null || v === undefined) return null;
    var t = typeof v;
    if (t === 'bigint') return v <= MAX && v >= -MAX ? Num(v) : v;
    if (t !== 'object') return v;
    if (d > maxDepth) throw new Err('argument is nested too deeply');
    if (isArray(v)) {
      var n = v.length, a = [];
      for (var i = 0; i < n; i++) put(a, i, toJs(v[i], d + 1));
      return a;
    }
    if (isView(v)) return new U8(v);
    if (getProto(v) === dateTimeProto) return new D(v.ms);
    var o = {}, ks = keys(v);
    for (var j = 0; j < ks.length; j++) put(o, ks[j], toJs(v[ks[j]], d + 1));
    return o;
  }

  // one null-prototype descriptor, reused: no property of it can be inherited from a tampered Object.prototype
  var desc = create(null);
  desc.writable = true; desc.enumerable = true; desc.configurable = true;
  function put(target, key, value) {
    desc.value = value;
    define(target, key, desc);
    desc.value = undefined;
  }

  function fromJs(v, d) {
    var t = typeof v;
    if (t === 'undefined' || t === 'function' || t === 'symbol' || v === null) return null;
    if (t !== 'object') return v;
    if (d > maxDepth) throw new Err('result is nested too deeply (or cyclic)');
    if (isArray(v)) {
      var n = v.length, a = [];
      for (var i = 0; i < n; i++) put(a, i, fromJs(v[i], d + 1));
      return a;
    }
    if (isView(v)) {
      var copy = new U8(v.buffer, v.byteOffset, v.byteLength);
      var b = new U8(copy.length);
      for (var k = 0; k < copy.length; k++) b[k] = copy[k];
      return new BytesMark(b, b.length);
    }
    if (call(objToString, v, []) === '[object Date]') return new DateMark(call(getTime, v, []));
    var o = create(null), ks = keys(v);
    for (var j = 0; j < ks.length; j++) put(o, ks[j], fromJs(v[ks[j]], d + 1));
    return o;
  }

  function describe(e) {
    try {
      return Str(e);
    } catch (e2) {
      return 'the script threw a value that cannot be shown';
    }
  }

  function run() {
    state.error = undefined;
    try {
      if (state.mode === 'describe') return describe(state.thrown);
      if (state.mode === 'find') {
        fn = G[state.id];
        return typeof fn === 'function';
      }
      var src = state.args, n = src.length, args = [];
      for (var i = 0; i < n; i++) put(args, i, toJs(src[i], 0));
      return fromJs(call(fn, undefined, args), 0);
    } catch (e) {
      state.error = describe(e);
      return null;
    }
  }

  define(G, helperName, { value: run, writable: false, enumerable: false, configurable: false });
  return state;
})`;

const preludeScript = new vm.Script(PRELUDE, { filename: 'eddy-script-prelude.js' });
const callScript = new vm.Script(`${HELPER}()`, { filename: 'eddy-script-call.js' });

/** Syntax that would queue work to run after a call (see the file comment). */
const ASYNC_SYNTAX = /\b(?:async|await|import)\b/;

/** Why a script cannot be used; the texts eKuiper reports on create/update. */
export class ScriptLoadError extends Error {
  override readonly name = 'ScriptLoadError';
}

/**
 * The time-out error is created in the context's realm: read its own `code` through a descriptor, which runs no
 * script code even if the script put getters on its `Error.prototype` (a thrown proxy, whose traps would, is never
 * the time-out).
 */
function isTimeout(e: unknown): boolean {
  if (typeof e !== 'object' || e === null || types.isProxy(e)) return false;
  return Object.getOwnPropertyDescriptor(e, 'code')?.value === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
}

export class ScriptEngine {
  private constructor(
    private readonly context: vm.Context,
    private readonly state: HelperState,
    private readonly timeoutMs: number,
  ) {}

  /**
   * A fresh engine with `source` evaluated in it. Throws {@link ScriptLoadError}: `failed to interprete script: …`
   * when the evaluation fails (or runs out of time), `cannot find function "<id>" in script` when the script does
   * not define a global function named `id`.
   */
  static load(
    id: string,
    source: string | CompiledScript,
    timeoutMs: number = DEFAULT_SCRIPT_TIMEOUT_MS,
  ): ScriptEngine {
    const script = typeof source === 'string' ? compileScript(id, source) : source;
    const context = vm.createContext(Object.create(null) as object, {
      name: `script ${id}`,
      codeGeneration: { strings: false, wasm: false },
      // anything that slips past the checks above still runs inside the time limit
      microtaskMode: 'afterEvaluate',
    });
    const factory = preludeScript.runInContext(context, { displayErrors: false }) as (
      proto: object,
      depth: number,
      name: string,
    ) => HelperState;
    const state = factory(DateTime.prototype, MAX_DEPTH, HELPER);
    const engine = new ScriptEngine(context, state, timeoutMs);
    try {
      // displayErrors off: Node would otherwise read properties of the thrown value (its getters, a proxy's traps)
      // after the time limit has ended
      script.vm.runInContext(context, { timeout: timeoutMs, displayErrors: false });
    } catch (e) {
      if (isTimeout(e))
        throw new ScriptLoadError(`failed to interprete script: script execution timed out after ${timeoutMs}ms`);
      throw new ScriptLoadError(`failed to interprete script: ${engine.helper('describe', e)}`);
    }
    if (engine.helper('find', id) !== true) throw new ScriptLoadError(`cannot find function "${id}" in script`);
    return engine;
  }

  /** Runs the helper in mode `find` (of a function named `arg`) or `describe` (of thrown value `arg`). */
  private helper(mode: 'find' | 'describe', arg: unknown): unknown {
    const state = this.state;
    state.mode = mode;
    if (mode === 'find') state.id = arg as string;
    else state.thrown = arg;
    try {
      const out = this.run();
      if (state.error !== undefined) return mode === 'describe' ? state.error : false;
      return out;
    } catch (e) {
      return mode === 'describe' ? (e as Error).message : false;
    } finally {
      state.mode = 'call';
      state.thrown = undefined;
    }
  }

  /**
   * Calls the script's function with `args` (ints as numbers when exactly representable, otherwise BigInt; dates as
   * `Date`; bytes as `Uint8Array`; arrays and objects copied). The result comes back as an Eddy value: an integral
   * number is an int, any other number a float, `null`/`undefined` null. A thrown value, a time-out, or a NaN/±Infinity
   * result throws {@link EvalError}.
   */
  call(args: readonly Value[]): Value {
    this.state.args = args;
    let out: unknown;
    try {
      out = this.run();
    } finally {
      this.state.args = EMPTY;
    }
    if (this.state.error !== undefined) throw new EvalError(this.state.error);
    if (typeof out === 'number') {
      if (Number.isNaN(out)) throw new EvalError('result is NaN');
      if (!Number.isFinite(out)) throw new EvalError('result is Inf');
    }
    return this.toEddy(out);
  }

  private run(): unknown {
    try {
      return callScript.runInContext(this.context, { timeout: this.timeoutMs, displayErrors: false });
    } catch (e) {
      // the helper catches whatever the script throws: only a time-out (or a broken engine) gets here
      const timedOut = isTimeout(e);
      // a call that ran out of time would do so for every record: its rule stops (docs/runtime.md §8)
      if (timedOut && this.state.mode === 'call')
        stopRuleAfterThis(
          new Error(
            `javascript function ${this.state.id} ran past its time limit of ${this.timeoutMs} ms, so the rule was stopped`,
          ),
        );
      throw new EvalError(
        timedOut ? `script execution timed out after ${this.timeoutMs}ms` : 'the script engine failed',
      );
    }
  }

  /** Reads what the helper built (see the file comment: nothing here can run script code). */
  private toEddy(v: unknown): Value {
    switch (typeof v) {
      case 'number':
        return Number.isInteger(v) && Math.abs(v) < 2 ** 63 ? BigInt(v) : v;
      case 'bigint':
        return BigInt.asIntN(64, v) === v ? v : Number(v);
      case 'string':
      case 'boolean':
        return v;
      case 'object':
        break;
      default:
        return null;
    }
    if (v === null) return null;
    if (Array.isArray(v)) {
      const out: Value[] = new Array<Value>(v.length);
      for (let i = 0; i < v.length; i++) out[i] = this.toEddy(v[i]);
      return out;
    }
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto === this.state.dateMark) {
      const ms = (v as { ms: number }).ms;
      return Number.isFinite(ms) ? new DateTime(ms) : null;
    }
    if (proto === this.state.bytesMark) {
      const m = v as { b: Uint8Array; n: number };
      const bytes = new Uint8Array(m.n);
      bytes.set(m.b);
      return bytes;
    }
    const src = v as Record<string, unknown>;
    const out: ValueObject = {};
    for (const k of Object.keys(src)) {
      const x = this.toEddy(src[k]);
      if (k === '__proto__')
        Object.defineProperty(out, k, { value: x, writable: true, enumerable: true, configurable: true });
      else out[k] = x;
    }
    return out;
  }
}

const EMPTY: readonly Value[] = [];

/** A script's text checked and compiled once; every engine of the script runs it. */
export interface CompiledScript {
  readonly vm: vm.Script;
}

/** Compiles a script's text (throws {@link ScriptLoadError} for a syntax error or async syntax). */
export function compileScript(id: string, source: string): CompiledScript {
  if (ASYNC_SYNTAX.test(source)) {
    throw new ScriptLoadError(
      'failed to interprete script: async functions, await and import are not supported in javascript functions',
    );
  }
  try {
    return { vm: new vm.Script(source, { filename: `${id}.js` }) };
  } catch (e) {
    throw new ScriptLoadError(`failed to interprete script: ${String(e)}`);
  }
}
