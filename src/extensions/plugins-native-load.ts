/**
 * Turning a native plugin module (docs/plugins.md, the contract `plugin/index.d.ts`) into what Eddy runs: connector
 * declarations for the registry (declared exactly like a built-in's, connectors/declaration.ts) and SQL function
 * definitions for the function registry. Used on the main thread by the plugin manager (plugins-native.ts) and on
 * every rule worker (plugins-native-sync.ts), so a plugin's code runs on the thread its rule runs on.
 *
 * The plugin sees plain JSON values; these adapters convert at the boundary: SQL ints reach it as numbers, and whole
 * numbers it emits (sources, formats) come back as ints, as a JSON decode would read them.
 */
import { pathToFileURL } from 'node:url';
import type {
  ConnectorContext,
  Format,
  FormatFactory,
  LookupConnector,
  Props,
  SinkConnector,
  SinkContext,
  SinkPayload,
  SourceConnector,
  SourceEvent,
} from '../contracts/index.js';
import type { Declaration, Threads } from '../connectors/declaration.js';
import type { SinkMeta, SourceMeta } from '../connectors/meta.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { ArgInfo, FunctionDef } from '../functions/registry.js';
import { EvalError, isObject, toJsonData, type Value, type ValueObject } from '../values/index.js';
import type * as Api from 'eddy/plugin';
import type { NativeType as RestNativeType } from './plugins.js';

/** The REST plugin types, `formats` (custom schemas, `/schemas/custom`) and `wasm` (`/plugins/wasm`). */
export type NativeType = RestNativeType | 'formats' | 'wasm';

/** One loaded plugin as the main thread loaded it; workers load the same modules from it. */
export interface NativeRef {
  type: NativeType;
  name: string;
  /** absolute path of the module */
  module: string;
  /** function plugins: the SQL functions registered */
  functions?: string[];
  /** connector plugins: UI metadata (`<name>.json`), null when the archive had none */
  meta?: Record<string, unknown> | null;
}

/** The exported name of a plugin: its name with the first letter upper-cased (eKuiper's symbol rule). */
export function exportName(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

/** Imports a plugin module; throws with a message naming what is wrong. */
export async function importPlugin(ref: Pick<NativeRef, 'name' | 'module'>): Promise<unknown> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(ref.module).href)) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`cannot load the plugin module: ${(e as Error).message}`);
  }
  const sym = exportName(ref.name);
  const exported = mod[sym] ?? mod.default;
  if (exported === undefined) throw new Error(`the plugin module exports no ${sym}`);
  return exported;
}

// ---------------------------------------------------------------------------------------------- values

/** A plugin's JSON value as an Eddy value: whole numbers become ints (as a JSON decode reads `3`). */
export function fromPlugin(v: unknown): Value {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : v;
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object') return v as Value;
  if (Array.isArray(v)) return v.map(fromPlugin);
  if (v instanceof Uint8Array) return v;
  const out: ValueObject = {};
  for (const k in v as Record<string, unknown>) out[k] = fromPlugin((v as Record<string, unknown>)[k]);
  return out;
}

function rowFromPlugin(v: unknown): ValueObject {
  const r = fromPlugin(v);
  if (!isObject(r)) throw new Error('a plugin must emit objects (rows)');
  return r;
}

const toPlugin = (v: Value): Api.JsonValue => (v === undefined ? null : (toJsonData(v) as Api.JsonValue));

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

// ---------------------------------------------------------------------------------------------- connectors

function pluginContext(ctx: ConnectorContext): Api.PluginContext {
  const log = ctx.logger;
  return {
    ruleId: ctx.ruleId,
    dataDir: ctx.dataDir,
    logger: {
      info: (m) => log.info(m),
      warn: (m) => log.warn(m),
      error: (m) => log.error(m),
      debug: (m) => log.debug(m),
    },
  };
}

const configError = (e: unknown) => new EddyError(ErrorCode.Executor, message(e));

class PluginSource implements SourceConnector {
  constructor(protected readonly p: Api.SourcePlugin) {}
  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    try {
      this.p.configure(datasource, props);
    } catch (e) {
      throw configError(e);
    }
  }
  async connect(
    ctx: ConnectorContext,
    emit: (ev: SourceEvent) => void,
    onError: (err: Error) => void,
    onEnd?: () => void,
  ): Promise<void> {
    const sctx: Api.SourceContext = {
      ...pluginContext(ctx),
      emit: (data, meta) => {
        const payload =
          typeof data === 'string'
            ? new TextEncoder().encode(data)
            : data instanceof Uint8Array
              ? data
              : Array.isArray(data)
                ? data.map(rowFromPlugin)
                : rowFromPlugin(data);
        emit({ payload, meta: meta ? rowFromPlugin(meta) : {}, timestamp: Date.now() });
      },
      error: (err) => onError(err instanceof Error ? err : new Error(String(err))),
      end: () => onEnd?.(),
    };
    await this.p.open(sctx);
  }
  async close(ctx: ConnectorContext): Promise<void> {
    await this.p.close(pluginContext(ctx));
  }
}

/** A source whose plugin can resume: only then does the runtime see offset/rewind (contracts isRewindable). */
class RewindablePluginSource extends PluginSource {
  offset(): ValueObject {
    return rowFromPlugin(this.p.offset?.() ?? {});
  }
  rewind(offset: ValueObject): void {
    this.p.rewind?.(toPlugin(offset) as Api.Row);
  }
}

class PluginLookup implements LookupConnector {
  constructor(private readonly p: Api.LookupPlugin) {}
  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    try {
      this.p.configure(datasource, props);
    } catch (e) {
      throw configError(e);
    }
  }
  async connect(ctx: ConnectorContext): Promise<void> {
    await this.p.open(pluginContext(ctx));
  }
  async lookup(
    _ctx: ConnectorContext,
    fields: readonly string[],
    keys: readonly string[],
    values: readonly Value[],
  ): Promise<ValueObject[]> {
    const rows = await this.p.lookup(fields, keys, values.map(toPlugin));
    return rows.map(rowFromPlugin);
  }
  async close(ctx: ConnectorContext): Promise<void> {
    await this.p.close(pluginContext(ctx));
  }
}

class PluginSink implements SinkConnector {
  constructor(private readonly p: Api.SinkPlugin) {}
  provision(_ctx: SinkContext, props: Props): void {
    try {
      this.p.configure(props);
    } catch (e) {
      throw configError(e);
    }
  }
  async connect(ctx: SinkContext): Promise<void> {
    await this.p.open(pluginContext(ctx));
  }
  collect(ctx: SinkContext, payload: SinkPayload): Promise<void> | void {
    const data = payload.data;
    const rows = (Array.isArray(data) ? data : [data]).map((r) => toPlugin(r as Value)) as Api.Row[];
    return this.p.collect(pluginContext(ctx), rows, payload.bytes);
  }
  async close(ctx: SinkContext): Promise<void> {
    await this.p.close(pluginContext(ctx));
  }
}

/** Plugin modules are loaded on every rule worker, so their rules run where they are placed. */
function threadsOf(o: Api.ConnectorOptions): Threads {
  return o.mainThreadOnly ? { worker: false, because: o.mainThreadOnly } : { worker: true };
}

function isFn(v: unknown): v is (...a: unknown[]) => unknown {
  return typeof v === 'function';
}

function factoryOf<T>(exported: unknown, key: string, what: string): { make: () => T; opts: Api.ConnectorOptions } {
  if (isFn(exported)) return { make: exported as () => T, opts: {} };
  if (typeof exported === 'object' && exported !== null && isFn((exported as Record<string, unknown>)[key])) {
    const o = exported as Record<string, unknown>;
    return { make: o[key] as () => T, opts: o as Api.ConnectorOptions };
  }
  throw new Error(`the plugin module must export a ${what} factory or an object with ${key}()`);
}

/** Makes a fresh plugin instance, failing clearly when the factory misbehaves. */
function instance<T extends object>(make: () => T, what: string, methods: readonly string[]): T {
  const p = make();
  if (typeof p !== 'object' || p === null) throw new Error(`the ${what} factory returned no object`);
  for (const m of methods)
    if (!isFn((p as Record<string, unknown>)[m])) throw new Error(`the ${what} has no ${m}() method`);
  return p;
}

const SOURCE_METHODS = ['configure', 'open', 'close'];
const LOOKUP_METHODS = ['configure', 'open', 'lookup', 'close'];
const SINK_METHODS = ['configure', 'open', 'collect', 'close'];

/** A source plugin's declarations (stream source, and a lookup source when it offers one). */
export function sourceDeclarations(ref: NativeRef, exported: unknown): Declaration[] {
  const { make, opts } = factoryOf<Api.SourcePlugin>(exported, 'source', 'source');
  const threads = threadsOf(opts);
  const check = opts.check ? (props: Props) => opts.check!(props) : null;
  const validate = opts.validate ? (props: Props) => opts.validate!(props) : null;
  const meta = sourceMeta(ref);
  const out: Declaration[] = [
    {
      kind: 'source',
      type: ref.name,
      create: () => {
        const p = instance(make, 'source', SOURCE_METHODS);
        return isFn(p.offset) && isFn(p.rewind) ? new RewindablePluginSource(p) : new PluginSource(p);
      },
      defaults: `sources/${ref.name}.yaml`,
      meta,
      check,
      validate,
      threads,
    },
  ];
  const lookup = (exported as { lookup?: unknown }).lookup;
  if (isFn(lookup)) {
    out.push({
      kind: 'lookup',
      type: ref.name,
      create: () => new PluginLookup(instance(lookup as () => Api.LookupPlugin, 'lookup source', LOOKUP_METHODS)),
      defaults: `sources/${ref.name}.yaml`,
      meta,
      check,
      threads: { worker: false, because: 'a lookup table is one connector per server' },
    });
  }
  return out;
}

export function sinkDeclaration(ref: NativeRef, exported: unknown): Declaration {
  const { make, opts } = factoryOf<Api.SinkPlugin>(exported, 'sink', 'sink');
  return {
    kind: 'sink',
    type: ref.name,
    create: () => new PluginSink(instance(make, 'sink', SINK_METHODS)),
    meta: sinkMeta(ref),
    check: opts.check ? (props) => opts.check!(props) : null,
    validate: opts.validate ? (props) => opts.validate!(props) : null,
    threads: threadsOf(opts),
  };
}

function metaBase(ref: NativeRef, category: 'source' | 'sink') {
  const m = ref.meta ?? {};
  const text = { en_US: ref.name, zh_CN: ref.name };
  const about = (m.about ?? {}) as Record<string, unknown>;
  return {
    about: {
      trial: false,
      installed: true,
      author: { name: '', email: '', company: '', website: '' },
      helpUrl: { en_US: '', zh_CN: '' },
      description: { en_US: `native plugin ${ref.name}`, zh_CN: `native plugin ${ref.name}` },
      ...about,
    },
    libs: Array.isArray(m.libs) ? (m.libs as string[]) : [],
    node: { category, icon: '', label: text, ...((m.node ?? {}) as object) },
  };
}

/** `GET /metadata/sources/{name}` of a plugin: its `<name>.json`, completed to eKuiper's shape. */
function sourceMeta(ref: NativeRef): SourceMeta {
  const props = ref.meta?.properties;
  const list = Array.isArray(props) ? props : ((props as { default?: unknown } | undefined)?.default ?? []);
  return { ...metaBase(ref, 'source'), properties: { default: list as SourceMeta['properties']['default'] } };
}

function sinkMeta(ref: NativeRef): SinkMeta {
  const props = ref.meta?.properties;
  return { ...metaBase(ref, 'sink'), properties: (Array.isArray(props) ? props : []) as SinkMeta['properties'] };
}

// ---------------------------------------------------------------------------------------------- functions

/** The functions a function plugin module offers, by lower-case SQL name. */
export function moduleFunctions(exported: unknown): Map<string, Api.FunctionPlugin> {
  const fns = (exported as { functions?: unknown } | null)?.functions;
  if (typeof fns !== 'object' || fns === null)
    throw new Error('the plugin module must export an object with its functions ({functions: {name: …}})');
  const out = new Map<string, Api.FunctionPlugin>();
  for (const [name, f] of Object.entries(fns as Record<string, unknown>)) {
    const def = isFn(f) ? { exec: f as Api.FunctionPlugin['exec'] } : (f as Api.FunctionPlugin);
    if (typeof def !== 'object' || def === null || !isFn(def.exec))
      throw new Error(`function ${name} of the plugin has no exec()`);
    out.set(name.toLowerCase(), def);
  }
  return out;
}

function argInfo(a: ArgInfo): Api.ArgInfo {
  return { kind: a.kind, name: a.name, literal: a.literal === undefined ? undefined : toPlugin(a.literal) };
}

/** The result of a call: a whole number is an int when every numeric argument was one (`cube(2)` is 8, an int). */
function resultOf(r: unknown, args: readonly Value[]): Value {
  if (typeof r === 'number') {
    if (!Number.isSafeInteger(r)) return r;
    for (const a of args) if (typeof a === 'number') return r;
    return BigInt(r);
  }
  return fromPlugin(r);
}

/** The SQL function definition of one plugin function; `worker`: it is defined on every rule worker too. */
export function functionDef(name: string, f: Api.FunctionPlugin): FunctionDef {
  const exec = f.exec;
  const validate = f.validate ? (args: readonly ArgInfo[]) => f.validate!(args.map(argInfo)) : undefined;
  const fctx = { ruleId: '' };
  if (f.aggregate) {
    return {
      name,
      kind: 'aggregate',
      nullCheck: 'none',
      worker: true,
      validate,
      aggregate: (args, ctx) => {
        fctx.ruleId = ctx.ruleId;
        const r = exec(
          args.map((list) => list.map(toPlugin)),
          fctx,
        );
        if (r instanceof Promise) throw new EvalError('an aggregate plugin function cannot be asynchronous');
        return resultOf(r, args.flat());
      },
    };
  }
  if (f.async) {
    return {
      name,
      kind: 'scalar',
      nullCheck: 'none',
      worker: true,
      validate,
      async: { timeoutMs: f.async.timeoutMs },
      execAsync: async (args, ctx) => {
        const own = args.slice();
        return resultOf(await exec(own.map(toPlugin), { ruleId: ctx.ruleId }), own);
      },
    };
  }
  return {
    name,
    kind: 'scalar',
    nullCheck: 'none',
    worker: true,
    validate,
    // the hot path of a plugin call: arguments that are JSON values already (numbers, strings, booleans, null) are
    // passed in the call's own argument array, without a copy; anything else is converted into a new one
    exec: (args, ctx) => {
      let plain = args as Api.JsonValue[];
      for (let i = 0; i < args.length; i++) {
        const a = args[i];
        if (typeof a !== 'number' && typeof a !== 'string' && typeof a !== 'boolean' && a !== null) {
          plain = args.map(toPlugin);
          break;
        }
      }
      fctx.ruleId = ctx.ruleId;
      const r = exec(plain, fctx);
      if (typeof r === 'number') return resultOf(r, args);
      if (r instanceof Promise) throw new EvalError('the plugin function returned a promise but is not declared async');
      return fromPlugin(r);
    },
  };
}

// ---------------------------------------------------------------------------------------------- formats

/** A format plugin as a factory of codecs: `message` is what follows the schema name in SCHEMAID. */
export function formatFactory(exported: unknown): (message: string) => Format {
  const make = isFn(exported)
    ? (exported as (m: string) => Api.FormatPlugin)
    : isFn((exported as { format?: unknown } | null)?.format)
      ? (exported as { format: (m: string) => Api.FormatPlugin }).format
      : undefined;
  if (!make) throw new Error('the plugin module must export a format factory or an object with format()');
  return (msg) => {
    const codec = instance(() => make(msg), 'format', ['decode', 'encode']);
    const enc = new TextEncoder();
    return {
      decode: (data) => {
        const r = codec.decode(data);
        return Array.isArray(r) ? r.map(rowFromPlugin) : rowFromPlugin(r);
      },
      encode: (data) => {
        const out = codec.encode(toPlugin(data) as Api.Row | Api.Row[]);
        return typeof out === 'string' ? enc.encode(out) : out;
      },
    };
  };
}

/** The version a plugin module states (`version` of its export), '' when none. */
export function statedVersion(exported: unknown): string {
  const v = (exported as { version?: unknown } | null)?.version;
  return typeof v === 'string' ? v : '';
}

export type { FormatFactory };
