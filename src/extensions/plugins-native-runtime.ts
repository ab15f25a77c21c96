/**
 * The native plugins loaded into one thread: the main thread's plugin manager (plugins-native.ts) applies each module
 * it loads here and writes the list to `<plugins>/native/loaded.json`; each rule worker reads that list before it
 * opens a rule and loads the same modules into its own registries (docs/plugins.md §6). A module is loaded
 * once per thread: an update or a drop takes effect after a restart, and running rules keep the code they loaded.
 */
import { readFileSync, statSync } from 'node:fs';
import { checkWasm, wasmFunctionDefs, WASM_CALL_TIMEOUT_MS } from './plugins-wasm.js';
import type { Format, FormatOptions } from '../contracts/index.js';
import type { Declaration } from '../connectors/declaration.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { FunctionRegistry } from '../functions/registry.js';
import {
  formatFactory,
  functionDef,
  importPlugin,
  moduleFunctions,
  sinkDeclaration,
  sourceDeclarations,
  statedVersion,
  type NativeRef,
} from './plugins-native-load.js';

export interface DeclarePort {
  declare(d: Declaration): void;
}

/** The `custom` format: the codec of the custom schema named by SCHEMAID's first part (docs/plugins.md §1). */
export const CUSTOM_FORMAT = 'custom';

export class NativeRuntime {
  private readonly loaded = new Map<string, { ref: NativeRef; exported: unknown }>();
  private readonly formats = new Map<string, (message: string) => Format>();
  private seen = '';

  constructor(
    private readonly registry: DeclarePort,
    private readonly functions: FunctionRegistry,
  ) {
    registry.declare({
      kind: 'format',
      type: CUSTOM_FORMAT,
      create: (opts) => this.customFormat(opts),
      threads: { worker: true },
    });
  }

  private customFormat(opts: FormatOptions): Format {
    const id = opts.schemaId ?? '';
    const dot = id.indexOf('.');
    const name = dot < 0 ? id : id.slice(0, dot);
    const make = this.formats.get(name);
    if (!make)
      throw new EddyError(ErrorCode.Executor, `custom schema ${name === '' ? '(none: set SCHEMAID)' : name} not found`);
    return make(dot < 0 ? '' : id.slice(dot + 1));
  }

  has(ref: Pick<NativeRef, 'type' | 'name'>): boolean {
    return this.loaded.has(`${ref.type}_${ref.name}`);
  }

  /** The export of a loaded module (the manager lists function names from it). */
  exportOf(ref: Pick<NativeRef, 'type' | 'name'>): unknown {
    return this.loaded.get(`${ref.type}_${ref.name}`)?.exported;
  }

  /**
   * Imports the module and checks what it exports, without declaring anything: an install refuses a bad module
   * before it changes the registries. Returns the export and the version it states.
   */
  async inspect(ref: NativeRef): Promise<{ exported: unknown; version: string }> {
    if (ref.type === 'wasm') {
      checkWasm(new Uint8Array(readFileSync(ref.module)), ref.functions ?? []);
      return { exported: null, version: '' };
    }
    const exported = await importPlugin(ref);
    switch (ref.type) {
      case 'sources':
        sourceDeclarations(ref, exported);
        break;
      case 'sinks':
        sinkDeclaration(ref, exported);
        break;
      case 'functions': {
        const fns = moduleFunctions(exported);
        for (const f of ref.functions ?? [])
          if (!fns.has(f.toLowerCase())) throw new Error(`the plugin module has no function ${f}`);
        break;
      }
      case 'formats':
        formatFactory(exported);
        break;
    }
    return { exported, version: statedVersion(exported) };
  }

  /** Loads a module into this thread's registries (once per module). */
  async apply(ref: NativeRef): Promise<void> {
    const key = `${ref.type}_${ref.name}`;
    const had = this.loaded.get(key);
    if (had && had.ref.module === ref.module) {
      // the function list may change (register); the module stays
      if (ref.type === 'functions') this.registerFunctions(ref, had.exported, had.ref.functions ?? []);
      had.ref = ref;
      return;
    }
    if (had) return; // another version of a loaded plugin: only a restart loads it
    const { exported } = await this.inspect(ref);
    this.declareAll(ref, exported);
    this.loaded.set(key, { ref, exported });
  }

  private declareAll(ref: NativeRef, exported: unknown): void {
    switch (ref.type) {
      case 'sources':
        for (const d of sourceDeclarations(ref, exported)) this.registry.declare(d);
        break;
      case 'sinks':
        this.registry.declare(sinkDeclaration(ref, exported));
        break;
      case 'functions':
        this.registerFunctions(ref, exported, []);
        break;
      case 'formats':
        this.formats.set(ref.name, formatFactory(exported));
        break;
      case 'wasm': {
        const t = Number(ref.meta?.timeout);
        const timeout = Number.isFinite(t) && t > 0 ? t : WASM_CALL_TIMEOUT_MS;
        for (const def of wasmFunctionDefs(ref.module, ref.functions ?? [], timeout)) this.functions.register(def);
        break;
      }
    }
  }

  private registerFunctions(ref: NativeRef, exported: unknown, before: readonly string[]): void {
    const fns = moduleFunctions(exported);
    const now = new Set((ref.functions ?? []).map((f) => f.toLowerCase()));
    for (const f of before) if (!now.has(f.toLowerCase())) this.functions.unregister(f);
    for (const f of now) {
      const def = fns.get(f);
      if (def) this.functions.register(functionDef(f, def));
    }
  }

  /**
   * A worker's catch-up: loads every module of `file` (the main thread's list) not loaded yet. Read again only when
   * the file changed; a module that fails to load is reported through `warn` and its rules fail to plan.
   */
  async sync(file: string, warn: (msg: string) => void): Promise<void> {
    // asked before every rule a worker plans: no file (no native plugin) must not cost a thrown error each time
    let stamp: string;
    try {
      const st = statSync(file, { throwIfNoEntry: false });
      if (st === undefined) return;
      stamp = `${st.mtimeMs}:${st.size}`;
    } catch {
      return;
    }
    if (stamp === this.seen) return;
    this.seen = stamp;
    let refs: NativeRef[];
    try {
      refs = JSON.parse(readFileSync(file, 'utf8')) as NativeRef[];
    } catch (e) {
      warn(`cannot read the native plugin list ${file}: ${(e as Error).message}`);
      return;
    }
    for (const ref of refs) {
      try {
        await this.apply(ref);
      } catch (e) {
        warn(`native plugin ${ref.type}/${ref.name} cannot be loaded: ${(e as Error).message}`);
      }
    }
  }
}
