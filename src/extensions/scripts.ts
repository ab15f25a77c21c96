/**
 * JavaScript functions ("scripts", docs/runtime.md §8): `{id, description, script, isAgg}` records stored in the metadata
 * store (namespace `script`, keyed by id) and registered in the function registry as SQL functions — a scalar
 * function, or with `isAgg` an aggregate whose arguments are the lists of the group's values — exactly where
 * built-ins are, so the planner validates and compiles calls to them like any other function.
 *
 * Each call site of a rule gets an engine of its own (the registry's `instantiate` hook), created when the rule is
 * compiled: state a script keeps in globals is per call site, a rule keeps its engine when the script is updated or
 * deleted, and a rule planned after a delete fails with `function <id> not found`.
 */
import { Serial } from '../core/serial.js';
import { idTooLong } from '../core/limits.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import { field } from '../core/fields.js';
import type { FunctionDef, FunctionRegistry } from '../functions/registry.js';
import type { Logger } from '../config/log.js';
import type { KVStore } from '../store/kv.js';
import { EvalError } from '../values/index.js';
import {
  compileScript,
  DEFAULT_SCRIPT_TIMEOUT_MS,
  ScriptEngine,
  ScriptLoadError,
  type CompiledScript,
} from './scripts-engine.js';
import { goJsonSyntaxError } from '../core/gojson.js';

export { DEFAULT_SCRIPT_TIMEOUT_MS } from './scripts-engine.js';

/** Store namespace of JavaScript functions. */
export const SCRIPT_NS = 'script';
const NS = SCRIPT_NS;

export interface ScriptRecord {
  id: string;
  description: string;
  script: string;
  isAgg: boolean;
}

export interface ScriptServiceOptions {
  store: KVStore;
  functions: FunctionRegistry;
  logger?: Logger;
  /** time limit of a script's evaluation and of each call, in ms */
  timeoutMs?: number;
}

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v;
}

/**
 * A script record from decoded JSON, the way Go's decoder fills eKuiper's struct: fields matched case-insensitively,
 * unknown fields ignored, `null` leaves a field empty, a value of the wrong type is an error worded like Go's.
 */
export function decodeScript(v: unknown, defaults: Partial<ScriptRecord> = {}): ScriptRecord {
  const rec: ScriptRecord = { id: '', description: '', script: '', isAgg: false, ...defaults };
  if (v === null) return rec;
  if (typeof v !== 'object' || Array.isArray(v))
    throw new Error(`json: cannot unmarshal ${jsonKind(v)} into Go value of type js.Script`);
  const obj = v as Record<string, unknown>;
  const text = (name: 'id' | 'description' | 'script') => {
    const x = field(obj, name);
    if (x === undefined || x === null) return;
    if (typeof x !== 'string')
      throw new Error(`json: cannot unmarshal ${jsonKind(x)} into Go struct field Script.${name} of type string`);
    rec[name] = x;
  };
  text('id');
  text('description');
  text('script');
  const agg = field(obj, 'isAgg');
  if (agg !== undefined && agg !== null) {
    if (typeof agg !== 'boolean')
      throw new Error(`json: cannot unmarshal ${jsonKind(agg)} into Go struct field Script.isAgg of type bool`);
    rec.isAgg = agg;
  }
  return rec;
}

/** The stored and exported text of a record (fixed key order). */
function recordText(r: ScriptRecord): string {
  return JSON.stringify({ id: r.id, description: r.description, script: r.script, isAgg: r.isAgg });
}

/** A definition bound to one engine: what a call site runs. */
function boundDef(r: ScriptRecord, engine: ScriptEngine): FunctionDef {
  return r.isAgg
    ? { name: r.id, kind: 'aggregate', nullCheck: 'none', aggregate: (args) => engine.call(args) }
    : { name: r.id, kind: 'scalar', nullCheck: 'none', exec: (args) => engine.call(args) };
}

/**
 * The registered definition: its kind and name for the planner, a fresh engine per call site through `instantiate`,
 * and (for any caller that skips `instantiate`) one shared engine created on first use.
 */
function registeredDef(r: ScriptRecord, timeoutMs: number): FunctionDef {
  let compiled: CompiledScript | undefined;
  const load = () => ScriptEngine.load(r.id, (compiled ??= compileScript(r.id, r.script)), timeoutMs);
  let shared: ScriptEngine | undefined;
  const engine = (): ScriptEngine => {
    if (shared === undefined) {
      try {
        shared = load();
      } catch (e) {
        throw new EvalError((e as Error).message);
      }
    }
    return shared;
  };
  const instantiate = (): FunctionDef => boundDef(r, load());
  // every rule worker reads the stored functions too (workers/worker.ts), so a rule calling one may run there
  return r.isAgg
    ? {
        name: r.id,
        kind: 'aggregate',
        nullCheck: 'none',
        aggregate: (args) => engine().call(args),
        instantiate,
        worker: true,
      }
    : { name: r.id, kind: 'scalar', nullCheck: 'none', exec: (args) => engine().call(args), instantiate, worker: true };
}

export class ScriptService {
  /** every stored record, in store order */
  private readonly records_ = new Map<string, ScriptRecord>();
  /** the definitions this service put in the registry, by id */
  private readonly registered = new Map<string, FunctionDef>();
  private readonly timeoutMs: number;
  private revision_ = 0;
  /** mutations run one at a time: a check and the write that follows it see the same state */
  private readonly changes = new Serial();

  constructor(private readonly opts: ScriptServiceOptions) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_SCRIPT_TIMEOUT_MS;
  }

  /** Reads the stored scripts and registers them (before rules are restored). A script that no longer loads is kept but not callable. */
  async load(): Promise<void> {
    for (const [key, text] of await this.opts.store.entries(NS)) {
      let rec: ScriptRecord;
      try {
        rec = decodeScript(JSON.parse(text), { id: key });
      } catch (err) {
        this.opts.logger?.warn({ err }, 'stored javascript function %s cannot be read; it is skipped', key);
        continue;
      }
      this.records_.set(key, rec);
      try {
        this.validate(rec);
        this.register(rec);
      } catch (err) {
        this.opts.logger?.warn(
          { err: (err as Error).message },
          'javascript function %s cannot be loaded; it is not callable',
          key,
        );
      }
    }
  }

  /** Changes whenever a function is registered or removed (a worker thread then reads them again). */
  get revision(): number {
    return this.revision_;
  }

  ids(): string[] {
    return [...this.records_.keys()];
  }

  get(id: string): ScriptRecord | undefined {
    const r = this.records_.get(id);
    return r && { ...r };
  }

  /** Creates a script; fails when it does not load, clashes with another function, or the id exists. */
  create(rec: ScriptRecord): Promise<void> {
    return this.serial(async () => {
      this.validate(rec);
      if (!(await this.opts.store.setIfAbsent(NS, rec.id, recordText(rec)))) {
        throw new EddyError(ErrorCode.Undefined, `Item ${rec.id} already exists`);
      }
      this.records_.set(rec.id, { ...rec });
      this.register(rec);
    });
  }

  /** Creates or replaces a script. Running rules keep the engine they were compiled with. */
  upsert(rec: ScriptRecord): Promise<void> {
    return this.serial(async () => {
      this.validate(rec);
      await this.opts.store.set(NS, rec.id, recordText(rec));
      this.records_.set(rec.id, { ...rec });
      this.register(rec);
    });
  }

  /** Deletes a script and its SQL function; 1002 `<id> is not found` when absent. */
  delete(id: string): Promise<void> {
    return this.serial(async () => {
      if (!this.records_.has(id)) throw new EddyError(ErrorCode.NotFound, `${id} is not found`);
      await this.opts.store.delete(NS, id);
      this.records_.delete(id);
      this.unregister(id);
    });
  }

  /** Deletes every script (full data import). */
  removeAll(): Promise<void> {
    return this.serial(async () => {
      await this.opts.store.clear(NS);
      for (const id of this.records_.keys()) this.unregister(id);
      this.records_.clear();
    });
  }

  /**
   * Cluster mode: a script another node stored (`text`) or deleted (undefined), docs/cluster.md §2: its function is
   * registered or removed here without writing the store. A script that no longer loads is kept but not callable.
   */
  applyStored(id: string, text: string | undefined): Promise<void> {
    return this.serial(async () => {
      if (text === undefined) {
        if (this.records_.delete(id)) this.unregister(id);
        return;
      }
      const rec = decodeScript(JSON.parse(text), { id });
      this.records_.set(id, rec);
      try {
        this.validate(rec);
        this.register(rec);
      } catch (err) {
        this.unregister(id);
        this.opts.logger?.warn({ err: (err as Error).message }, 'javascript function %s cannot be loaded', id);
      }
    });
  }

  // ------------------------------------------------------------------------------------------ bundle items

  /** The bundle's `scripts` section: id → JSON text of the record. */
  records(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [id, r] of this.records_) out[id] = recordText(r);
    return out;
  }

  /** A bundle item checked without changing anything (the JSON, the key, the script itself). */
  check(key: string, text: string): void {
    this.validate(this.parseItem(key, text));
  }

  /** A bundle item created or overwritten. */
  upsertText(key: string, text: string): Promise<void> {
    return this.upsert(this.parseItem(key, text));
  }

  private parseItem(key: string, text: string): ScriptRecord {
    let rec: ScriptRecord;
    try {
      rec = decodeScript(JSON.parse(text), { id: key });
    } catch (e) {
      throw new EddyError(
        ErrorCode.Undefined,
        `fail to unmarshal the script ${key}: ${goJsonSyntaxError(text) ?? (e as Error).message}`,
      );
    }
    if (rec.id !== key)
      throw new EddyError(ErrorCode.Undefined, `the script id ${rec.id} does not match the key ${key}`);
    return rec;
  }

  // ------------------------------------------------------------------------------------------ internals

  /** The script loads and defines its function, and its id names no other function. */
  private validate(rec: ScriptRecord): void {
    const long = idTooLong('function id', rec.id);
    if (long) throw new EddyError(ErrorCode.Undefined, long);
    try {
      ScriptEngine.load(rec.id, rec.script, this.timeoutMs);
    } catch (e) {
      if (e instanceof ScriptLoadError) throw new EddyError(ErrorCode.Undefined, e.message);
      throw e;
    }
    const existing = this.opts.functions.get(rec.id);
    if (existing === undefined || existing === this.registered.get(rec.id)) return;
    const other = [...this.registered].find(([, def]) => def === existing)?.[0];
    throw new EddyError(
      ErrorCode.Undefined,
      other !== undefined
        ? `function ${rec.id} conflicts with javascript function ${other} (function names are case-insensitive)`
        : `function ${rec.id} is a built-in function and cannot be redefined by a javascript function`,
    );
  }

  private register(rec: ScriptRecord): void {
    const def = registeredDef(rec, this.timeoutMs);
    this.opts.functions.register(def);
    this.registered.set(rec.id, def);
    this.revision_++;
  }

  private unregister(id: string): void {
    const def = this.registered.get(id);
    if (def === undefined) return;
    if (this.opts.functions.get(id) === def) this.opts.functions.unregister(id);
    this.registered.delete(id);
    this.revision_++;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.changes.run(fn);
  }
}
