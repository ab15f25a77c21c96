/**
 * WebAssembly function plugins (`/plugins/wasm`, docs/rest-api.md §10.6): the functions a `.wasm` module exports, run
 * with Node's own WebAssembly. A call must be stoppable (a loop in wasm never yields), so each thread that runs rules
 * gives each wasm plugin a small thread of its own: a call is a message to it, answered or cut off at the per-call
 * time limit, after which that thread is replaced. The functions are asynchronous SQL functions (an `op_<N>_async`
 * node, docs/runtime.md §6.3) defined on every rule worker (plugins-native-runtime.ts loads them there too).
 */
import { Worker } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import type { FunctionDef } from '../functions/registry.js';
import { EvalError, type Value } from '../values/index.js';

/** The time limit of one call unless the plugin's json sets `timeout` (ms). */
export const WASM_CALL_TIMEOUT_MS = 5000;

/**
 * The call thread: instantiates the module (no imports) and answers `{id, fn, args}`. Arguments are tried as numbers
 * and, for an i64 parameter that refuses them, as BigInts. Evaluated as a script (CommonJS), so that it needs no
 * loader in development or in a build.
 */
const CALL_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const instance = new WebAssembly.Instance(new WebAssembly.Module(workerData.bytes), {});
parentPort.on('message', ({ id, fn, args }) => {
  try {
    const f = instance.exports[fn];
    if (typeof f !== 'function') throw new Error('the module exports no function ' + fn);
    let r;
    try {
      r = f(...args);
    } catch (e) {
      if (!(e instanceof TypeError) || !args.every((a) => Number.isInteger(a))) throw e;
      r = f(...args.map((a) => BigInt(a)));
    }
    parentPort.postMessage(typeof r === 'bigint' ? { id, big: r.toString() } : { id, result: r === undefined ? null : r });
  } catch (e) {
    parentPort.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
  }
});
`;

type Answer = { id: number; result?: number | null; big?: string; error?: string };

interface Pending {
  fn: string;
  args: number[];
  resolve: (a: Answer) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One wasm plugin's call thread on this thread, started on first call. A call that overran its limit fails and the
 * thread is replaced; the calls queued behind it never started, so they are sent again to the new thread, each with
 * its time limit counted again.
 */
class WasmHost {
  private worker: Worker | undefined;
  private next = 1;
  private readonly waiting = new Map<number, Pending>();

  constructor(
    private readonly bytes: Uint8Array,
    private readonly timeoutMs: number,
  ) {}

  private thread(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(CALL_THREAD, { eval: true, workerData: { bytes: this.bytes } });
    w.unref();
    w.on('message', (a: Answer) => {
      const p = this.waiting.get(a.id);
      if (!p) return;
      this.waiting.delete(a.id);
      clearTimeout(p.timer);
      p.resolve(a);
    });
    const ended = (err: Error) => {
      if (this.worker !== w) return;
      this.worker = undefined;
      for (const p of this.waiting.values()) {
        clearTimeout(p.timer);
        p.reject(err);
      }
      this.waiting.clear();
    };
    w.on('error', ended);
    w.on('exit', (code) => ended(new Error(`the WebAssembly thread ended (${code})`)));
    this.worker = w;
    return w;
  }

  private overran(id: number): void {
    const p = this.waiting.get(id);
    if (!p) return;
    this.waiting.delete(id);
    const stuck = this.worker;
    this.worker = undefined;
    if (stuck) void stuck.terminate();
    p.reject(new Error(`the call did not return within ${this.timeoutMs} ms`));
    if (this.waiting.size === 0) return;
    const fresh = this.thread();
    for (const [qid, q] of this.waiting) {
      clearTimeout(q.timer);
      q.timer = setTimeout(() => this.overran(qid), this.timeoutMs);
      fresh.postMessage({ id: qid, fn: q.fn, args: q.args });
    }
  }

  call(fn: string, args: number[]): Promise<Answer> {
    const w = this.thread();
    const id = this.next++;
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => this.overran(id), this.timeoutMs);
      this.waiting.set(id, { fn, args, resolve, reject, timer });
      w.postMessage({ id, fn, args });
    });
  }
}

/** The part of Node's global `WebAssembly` used here (the compiler's lib settings do not declare it). */
interface WasmApi {
  Module: {
    new (bytes: Uint8Array): object;
    imports(m: object): Array<{ module: string; name: string }>;
    exports(m: object): Array<{ name: string; kind: string }>;
  };
}
const Wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** Checks a module: it compiles, needs no imports, and exports every function named. */
export function checkWasm(bytes: Uint8Array, functions: readonly string[]): void {
  let mod: object;
  try {
    mod = new Wasm.Module(bytes);
  } catch (e) {
    throw new Error(`invalid WebAssembly module: ${(e as Error).message}`);
  }
  const imports = Wasm.Module.imports(mod);
  if (imports.length > 0)
    throw new Error(
      `the WebAssembly module imports ${imports.map((i) => `${i.module}.${i.name}`).join(', ')}; only self-contained modules run`,
    );
  const exported = new Set(
    Wasm.Module.exports(mod)
      .filter((e) => e.kind === 'function')
      .map((e) => e.name),
  );
  for (const f of functions) if (!exported.has(f)) throw new Error(`the WebAssembly module exports no function ${f}`);
}

/** The SQL functions of a wasm plugin (module at `file`), each call in its call thread within `timeoutMs`. */
export function wasmFunctionDefs(file: string, functions: readonly string[], timeoutMs: number): FunctionDef[] {
  const bytes = new Uint8Array(readFileSync(file));
  checkWasm(bytes, functions);
  const host = new WasmHost(bytes, timeoutMs);
  return functions.map((fn) => ({
    name: fn.toLowerCase(),
    kind: 'scalar',
    nullCheck: 'N',
    worker: true,
    async: { timeoutMs: timeoutMs + 1000, maxInFlight: 1 },
    execAsync: async (args: Value[]) => {
      const nums = args.map((a) => {
        if (typeof a === 'bigint') return Number(a);
        if (typeof a === 'number') return a;
        if (typeof a === 'boolean') return a ? 1 : 0;
        throw new EvalError(`a WebAssembly function takes numbers, got ${typeof a}`);
      });
      const allInt = args.every((a) => typeof a !== 'number');
      let answer: Answer;
      try {
        answer = await host.call(fn, nums);
      } catch (e) {
        throw new EvalError((e as Error).message);
      }
      if (answer.error !== undefined) throw new EvalError(answer.error);
      if (answer.big !== undefined) return BigInt(answer.big);
      const r = answer.result ?? null;
      return typeof r === 'number' && allInt && Number.isSafeInteger(r) ? BigInt(r) : r;
    },
  }));
}
