/**
 * Native plugins (docs/plugins.md, docs/rest-api.md §10): ES modules installed from a zip with
 * `POST /plugins/sources|sinks|functions` (and format plugins through `POST /schemas/custom`), loaded into the
 * server and into every rule worker (plugins-native-runtime.ts) and declared exactly like built-ins.
 *
 * On disk, under `<plugins>/native/`: `<type>/<name>/<generation>/` holds one installed copy of the archive (module,
 * its dependency files); `index.json` records every plugin (install request, active and pending generation, deleted
 * mark, registered functions, UI metadata); `loaded.json` lists the modules the main thread loaded (the workers load
 * the same). The source yaml goes to `<etc>/sources/<name>.yaml`, the archive's `etc/` folder to
 * `<etc>/<type>/<name>/`, as eKuiper places them.
 *
 * Restart semantics, as eKuiper's: a create is loaded at once; an update installs a pending generation and a drop
 * marks the plugin, both taking effect at the next start, so that running rules keep the code they loaded.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import YAML from 'yaml';
import { EddyError, ErrorCode } from '../core/errors.js';
import { readUrl, tempPath, writeAtomic, type FileRoots } from '../core/files.js';
import type { Logger } from '../config/log.js';
import type { FunctionRegistry } from '../functions/registry.js';
import { checkRequest, type PluginRequest } from './plugins.js';
import { exportName, moduleFunctions, type NativeRef, type NativeType } from './plugins-native-load.js';
import { NativeRuntime, type DeclarePort } from './plugins-native-runtime.js';
import { readZip, runInstallScript, type ArchiveEntry } from './services-archive.js';

/** The contract majors this server loads (plugin/index.js `PLUGIN_API_VERSION`). */
export const SUPPORTED_API_MAJORS: readonly number[] = [1];

/** The default time limit of an archive's install.sh. */
export const INSTALL_TIMEOUT_MS = 300_000;

interface Generation {
  dir: string;
  module: string;
  version: string;
  file: string;
  shellParas: string[];
  meta: Record<string, unknown> | null;
}

interface Entry extends Generation {
  type: NativeType;
  name: string;
  functions: string[];
  pending?: Generation & { functions: string[] };
  deleted?: boolean;
}

export interface NativeOptions {
  /** `<plugins>/native` */
  dir: string;
  /** the home's etc folder */
  etcDir: string;
  functions: FunctionRegistry;
  connectors: DeclarePort & {
    source(type: string): unknown;
    sink(type: string): unknown;
    forgetDefaults(type: string): void;
  };
  logger?: Logger;
  fileRoots?: FileRoots;
  installTimeoutMs?: number;
}

const bad = (msg: string) => new EddyError(ErrorCode.Undefined, msg);
const hasFunctions = (e: { type: NativeType }) => e.type === 'functions' || e.type === 'wasm';
const KEY = (type: NativeType, name: string) => `${type}_${name}`;

/** The contract version named by the manifest; throws for a major this server does not know. */
export function checkApiVersion(v: unknown): string {
  if (v === undefined || v === null) return '1.0';
  const text = String(v);
  const major = Number(/^v?(\d+)/.exec(text)?.[1]);
  if (!SUPPORTED_API_MAJORS.includes(major)) {
    throw new Error(
      `the plugin is written for plugin API ${text}, which this Eddy does not load (supported: ${SUPPORTED_API_MAJORS.map((m) => `${m}.x`).join(', ')})`,
    );
  }
  return text;
}

/** What an archive holds, sorted by role. */
interface Layout {
  module: ArchiveEntry;
  fileVersion: string;
  yaml?: ArchiveEntry;
  json?: ArchiveEntry;
  install?: ArchiveEntry;
  etc: ArchiveEntry[];
  rest: ArchiveEntry[];
  apiVersion: string;
  meta: Record<string, unknown> | null;
}

/** A wasm plugin's archive (eKuiper 1.14): `<name>.wasm` and `<name>.json` with `functions` (and `version`). */
function wasmLayoutOf(name: string, entries: readonly ArchiveEntry[]): Layout {
  const module = entries.find((e) => e.path === `${name}.wasm`);
  const json = entries.find((e) => e.path === `${name}.json`);
  if (!module || !json) throw new Error(`invalid zip file: expect ${name}.wasm and ${name}.json`);
  let meta: Record<string, unknown>;
  try {
    meta = JSON.parse(json.data.toString('utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`invalid ${name}.json: ${(e as Error).message}`);
  }
  const fns = meta?.functions;
  if (!Array.isArray(fns) || fns.length === 0 || fns.some((f) => typeof f !== 'string' || f === ''))
    throw new Error(`invalid ${name}.json: functions must list the module's function names`);
  const rest = entries.filter((e) => e !== module && e !== json && e.path !== 'install.sh');
  return {
    module,
    fileVersion: typeof meta.version === 'string' ? meta.version : '',
    json,
    install: entries.find((e) => e.path === 'install.sh'),
    etc: [],
    rest,
    apiVersion: '',
    meta,
  };
}

function layoutOf(type: NativeType, name: string, entries: readonly ArchiveEntry[]): Layout {
  if (type === 'wasm') return wasmLayoutOf(name, entries);
  const sym = exportName(name);
  const modRe = new RegExp(`^${sym.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:@v?([^/]*))?\\.(?:mjs|js)$`);
  let module: ArchiveEntry | undefined;
  let fileVersion = '';
  let yaml: ArchiveEntry | undefined;
  let json: ArchiveEntry | undefined;
  let install: ArchiveEntry | undefined;
  const etc: ArchiveEntry[] = [];
  const rest: ArchiveEntry[] = [];
  for (const e of entries) {
    const m = modRe.exec(e.path);
    if (m && !module) {
      module = e;
      fileVersion = m[1] ?? '';
    } else if (type === 'sources' && e.path === `${name}.yaml`) yaml = e;
    else if (e.path === `${name}.json`) json = e;
    else if (e.path === 'install.sh') install = e;
    else if (e.path.startsWith('etc/')) etc.push(e);
    else rest.push(e);
  }
  if (!module || (type === 'sources' && !yaml)) {
    const want = [`${sym}.mjs`, ...(type === 'sources' ? [`${name}.yaml`] : [])].join(', ');
    throw new Error(`invalid zip file: the module file or conf file is missing (expected ${want})`);
  }
  let meta: Record<string, unknown> | null = null;
  let apiVersion: unknown;
  if (json) {
    try {
      const v = JSON.parse(json.data.toString('utf8')) as unknown;
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not a JSON object');
      meta = v as Record<string, unknown>;
      apiVersion = meta.apiVersion;
    } catch (e) {
      throw new Error(`invalid ${name}.json: ${(e as Error).message}`);
    }
  }
  if (yaml && apiVersion === undefined) apiVersion = sourceYaml(name, yaml.data).apiVersion;
  return { module, fileVersion, yaml, json, install, etc, rest, apiVersion: checkApiVersion(apiVersion), meta };
}

/** A source yaml: its config keys and the manifest field beside them. */
function sourceYaml(name: string, data: Buffer): { apiVersion?: unknown; keys: Record<string, unknown> } {
  let tree: unknown;
  try {
    tree = YAML.parse(data.toString('utf8'));
  } catch (e) {
    throw new Error(`invalid ${name}.yaml: ${(e as Error).message}`);
  }
  if (tree === null || tree === undefined) return { keys: {} };
  if (typeof tree !== 'object' || Array.isArray(tree))
    throw new Error(`invalid ${name}.yaml: not a map of config keys`);
  const { apiVersion, ...keys } = tree as Record<string, unknown>;
  return { apiVersion, keys };
}

export class NativeManager {
  private readonly entries = new Map<string, Entry>();
  readonly runtime: NativeRuntime;
  private queue: Promise<unknown> = Promise.resolve();
  private gen = 0;

  constructor(private readonly opts: NativeOptions) {
    this.runtime = new NativeRuntime(opts.connectors, opts.functions);
  }

  private get indexFile(): string {
    return join(this.opts.dir, 'index.json');
  }

  /** The list the rule workers load (plugins-native-runtime.ts `sync`). */
  get loadedFile(): string {
    return join(this.opts.dir, 'loaded.json');
  }

  // ------------------------------------------------------------------------------------------ start

  /** Applies pending updates and drops, then loads every plugin (before rules are restored). */
  async load(): Promise<void> {
    await mkdir(this.opts.dir, { recursive: true });
    let saved: Entry[] = [];
    if (existsSync(this.indexFile)) {
      try {
        saved = JSON.parse(readFileSync(this.indexFile, 'utf8')) as Entry[];
      } catch (e) {
        this.opts.logger?.error({ err: (e as Error).message }, 'the native plugin index cannot be read');
      }
    }
    for (const e of saved) {
      const key = KEY(e.type, e.name);
      if (e.deleted) {
        await this.removeFiles(e);
        continue;
      }
      if (e.pending) {
        await rm(join(this.opts.dir, e.dir), { recursive: true, force: true });
        const { functions, ...gen } = e.pending;
        Object.assign(e, gen, { functions });
        delete e.pending;
      }
      this.entries.set(key, e);
      try {
        await this.runtime.apply(this.refOf(e));
      } catch (err) {
        this.opts.logger?.warn(
          { err: (err as Error).message },
          'native plugin %s %s cannot be loaded; its rules will fail',
          e.type,
          e.name,
        );
      }
    }
    await this.save();
  }

  private refOf(e: Entry): NativeRef {
    return {
      type: e.type,
      name: e.name,
      module: join(this.opts.dir, e.dir, e.module),
      functions: e.functions,
      meta: e.meta,
    };
  }

  private async save(): Promise<void> {
    const all = [...this.entries.values()];
    await writeAtomic(this.opts.dir, 'index.json', JSON.stringify(all, null, 1));
    const loaded = all.filter((e) => this.runtime.has(e)).map((e) => this.refOf(e));
    await writeAtomic(this.opts.dir, 'loaded.json', JSON.stringify(loaded));
  }

  // ------------------------------------------------------------------------------------------ reads

  /** `GET /plugins/{type}`: names, the dropped ones included until the restart (as eKuiper lists them). */
  names(type: NativeType): string[] {
    return [...this.entries.values()].filter((e) => e.type === type && !e.deleted).map((e) => e.name);
  }

  /** `GET /plugins/{type}/{name}`: `{name, version}`. */
  describe(type: NativeType, name: string): { name: string; version: string; functions?: string[] } | undefined {
    const e = this.entries.get(KEY(type, name));
    if (!e || e.deleted) return undefined;
    return hasFunctions(e)
      ? { name: e.name, version: e.version, functions: e.functions }
      : { name: e.name, version: e.version };
  }

  /** `GET /plugins/udfs`: every function of the function plugins. */
  udfs(): string[] {
    return [...this.entries.values()].filter((e) => hasFunctions(e) && !e.deleted).flatMap((e) => e.functions);
  }

  /** `GET /plugins/udfs/{name}`: the plugin providing a function. */
  udf(name: string): { name: string; plugin: string } | undefined {
    const lower = name.toLowerCase();
    for (const e of this.entries.values()) {
      if (!hasFunctions(e) || e.deleted) continue;
      if (e.functions.some((f) => f.toLowerCase() === lower)) return { name, plugin: e.name };
    }
    return undefined;
  }

  /** The installed format plugin (custom schema) `name`: its install request. */
  customSchema(name: string): { name: string; soFile: string } | undefined {
    const e = this.entries.get(KEY('formats', name));
    return e && !e.deleted ? { name, soFile: e.file } : undefined;
  }

  // ------------------------------------------------------------------------------------------ changes

  create(type: NativeType, req: PluginRequest): Promise<void> {
    return this.serial(async () => {
      const name = checkRequest(req);
      const had = this.entries.get(KEY(type, name));
      if (had?.deleted)
        throw bad(
          `invalid name ${name}: the plugin is marked as deleted but Eddy is not restarted for the change to take effect yet`,
        );
      if (had) throw bad(`invalid name ${name}: duplicate`);
      const gen = await this.installGeneration(type, name, req, true);
      const e: Entry = { ...gen, type, name, functions: gen.functions };
      this.entries.set(KEY(type, name), e);
      try {
        await this.runtime.apply(this.refOf(e));
      } catch (err) {
        this.entries.delete(KEY(type, name));
        await this.removeFiles(e);
        throw bad(`fail to install plugin: ${(err as Error).message}`);
      }
      await this.save();
    });
  }

  /** PUT: installs the new archive beside the loaded one; it is loaded at the next start. */
  update(type: NativeType, name: string, req: PluginRequest): Promise<void> {
    return this.serial(async () => {
      const e = this.entries.get(KEY(type, name));
      if (!e || e.deleted) throw new EddyError(ErrorCode.NotFound, `invalid name ${name}: not exist`);
      const body = checkRequest({ ...req, name: req.name.trim() === '' ? name : req.name });
      if (body !== name) throw bad(`invalid name ${body}: the body names another plugin than ${name}`);
      const gen = await this.installGeneration(type, name, req, false);
      if (e.pending) await rm(join(this.opts.dir, e.pending.dir), { recursive: true, force: true });
      e.pending = gen;
      await this.save();
    });
  }

  /** DELETE: marked, removed at the next start. */
  delete(type: NativeType, name: string): Promise<void> {
    return this.serial(async () => {
      const e = this.entries.get(KEY(type, name));
      if (!e || e.deleted) throw new EddyError(ErrorCode.NotFound, `invalid name ${name}: not exist`);
      e.deleted = true;
      await this.save();
    });
  }

  /** `POST /plugins/functions/{name}/register`: the plugin's SQL functions become `functions`. */
  registerFunctions(name: string, functions: readonly string[]): Promise<void> {
    return this.serial(async () => {
      const e = this.entries.get(KEY('functions', name));
      if (!e || e.deleted) throw new EddyError(ErrorCode.NotFound, 'not found');
      const fns = moduleFunctions(this.runtime.exportOf(e));
      for (const f of functions) if (!fns.has(f.toLowerCase())) throw bad(`the plugin ${name} has no function ${f}`);
      this.checkFunctionNames(name, functions);
      e.functions = [...functions];
      await this.runtime.apply(this.refOf(e));
      await this.save();
    });
  }

  /** Functions are unique across plugins and built-ins. */
  private checkFunctionNames(plugin: string, functions: readonly string[]): void {
    for (const f of functions) {
      const owner = this.udf(f);
      if (owner && owner.plugin !== plugin) throw bad(`function name ${f} already exists in plugin ${owner.plugin}`);
      if (!owner && this.opts.functions.get(f)) throw bad(`function name ${f} already exists`);
    }
  }

  /**
   * Downloads, checks and unpacks an archive into a new generation folder, runs its install.sh and places its etc
   * files. `load`: the module is imported to check its exports (an update imports it only at the next start).
   */
  private async installGeneration(
    type: NativeType,
    name: string,
    req: PluginRequest,
    creating: boolean,
  ): Promise<Generation & { functions: string[] }> {
    let bytes: Buffer;
    try {
      bytes = await readUrl(req.file, this.opts.fileRoots);
    } catch (e) {
      throw bad(`fail to download file ${req.file}: ${(e as Error).message}`);
    }
    let layout: Layout;
    try {
      layout = layoutOf(type, name, readZip(bytes));
    } catch (e) {
      throw bad(`fail to install plugin: ${(e as Error).message}`);
    }
    if (req.shellParas.length > 0 && !layout.install)
      throw bad('fail to install plugin: shellParas are given but the plugin has no install.sh');
    const relDir = join(type, name, `${Date.now().toString(36)}${(this.gen++).toString(36)}`);
    const target = join(this.opts.dir, relDir);
    const staging = tempPath(this.opts.dir);
    const placed: string[] = [];
    try {
      for (const e of [layout.module, ...layout.rest, ...(layout.install ? [layout.install] : [])]) {
        const p = join(staging, e.path);
        await mkdir(dirname(p), { recursive: true });
        await writeFile(p, e.data);
      }
      await mkdir(dirname(target), { recursive: true });
      await rename(staging, target);
      if (layout.install) {
        const log = (line: string) => this.opts.logger?.info('plugin %s install.sh: %s', name, line);
        await runInstallScript(target, req.shellParas, this.opts.installTimeoutMs ?? INSTALL_TIMEOUT_MS, log);
      }
      const wasmFunctions = type === 'wasm' ? (layout.meta?.functions as string[]) : undefined;
      const ref: NativeRef = {
        type,
        name,
        module: join(target, layout.module.path),
        functions: wasmFunctions ?? req.functions,
        meta: layout.meta,
      };
      const { exported, version } = await this.runtime.inspect(ref);
      let functions: string[] = wasmFunctions ?? [];
      if (type === 'functions')
        functions = req.functions.length > 0 ? req.functions : [...moduleFunctions(exported).keys()];
      if (creating && functions.length > 0) this.checkFunctionNames(name, functions);
      if (creating) placed.push(...(await this.placeEtc(type, name, layout)));
      return {
        dir: relDir,
        module: layout.module.path,
        // eKuiper shows a file name's `@v1.2.0` without its `v`
        version: type === 'wasm' ? layout.fileVersion : (layout.fileVersion || version).replace(/^v(?=\d)/, ''),
        file: req.file,
        shellParas: req.shellParas,
        meta: layout.meta,
        functions,
      };
    } catch (e) {
      await rm(staging, { recursive: true, force: true });
      await rm(target, { recursive: true, force: true });
      for (const p of placed) await rm(p, { recursive: true, force: true });
      throw e instanceof EddyError ? e : bad(`fail to install plugin: ${(e as Error).message}`);
    }
  }

  /** The source yaml to `<etc>/sources/<name>.yaml`, `etc/**` to `<etc>/<type>/<name>/`; returns what it wrote. */
  private async placeEtc(type: NativeType, name: string, layout: Layout): Promise<string[]> {
    const out: string[] = [];
    if (layout.yaml) {
      const file = join(this.opts.etcDir, 'sources', `${name}.yaml`);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, YAML.stringify(sourceYaml(name, layout.yaml.data).keys));
      out.push(file);
      this.opts.connectors.forgetDefaults(name);
    }
    if (layout.etc.length > 0) {
      const dir = join(this.opts.etcDir, type, name);
      out.push(dir);
      for (const e of layout.etc) {
        const p = join(dir, e.path.slice('etc/'.length));
        await mkdir(dirname(p), { recursive: true });
        await writeFile(p, e.data);
      }
    }
    return out;
  }

  private async removeFiles(e: Entry): Promise<void> {
    await rm(join(this.opts.dir, e.type, e.name), { recursive: true, force: true });
    if (e.type === 'sources') await rm(join(this.opts.etcDir, 'sources', `${e.name}.yaml`), { force: true });
    await rm(join(this.opts.etcDir, e.type, e.name), { recursive: true, force: true });
  }

  // ------------------------------------------------------------------------------------------ bundles

  /** The bundle's `nativePlugins` section: `<type>_<name>` → `{"name","file","shellParas"}`. */
  installRecords(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const e of this.entries.values()) {
      if (e.deleted || e.type === 'formats' || e.type === 'wasm') continue;
      const rec: Record<string, unknown> = { name: e.name, file: e.file, shellParas: e.shellParas };
      if (e.type === 'functions') rec.functions = e.functions;
      out[KEY(e.type, e.name)] = JSON.stringify(rec);
    }
    return out;
  }

  /** Installs one bundle item; a plugin already installed from the same file is kept (and a drop of it undone). */
  async importRecord(key: string, text: string): Promise<void> {
    const m = /^(sources|sinks|functions)_(.+)$/.exec(key);
    if (!m) throw bad(`invalid native plugin key ${key}: expect <sources|sinks|functions>_<name>`);
    const type = m[1] as NativeType;
    let v: { name?: unknown; file?: unknown; shellParas?: unknown; functions?: unknown };
    try {
      v = JSON.parse(text) as typeof v;
    } catch (e) {
      throw bad(`invalid native plugin install record ${key}: ${(e as Error).message}`);
    }
    if (typeof v?.file !== 'string') throw bad(`invalid native plugin install record ${key}: file must be a string`);
    const name = typeof v.name === 'string' && v.name !== '' ? v.name : m[2];
    const strings = (x: unknown) => (Array.isArray(x) ? x.filter((s): s is string => typeof s === 'string') : []);
    const had = this.entries.get(KEY(type, name));
    if (had && had.file === v.file) {
      if (had.deleted) {
        delete had.deleted;
        await this.serial(() => this.save());
      }
      return;
    }
    // eKuiper ships some standard connectors as native plugins that Eddy has built in
    if (!had && this.builtIn(type, name)) return;
    await this.create(type, { name, file: v.file, shellParas: strings(v.shellParas), functions: strings(v.functions) });
  }

  private builtIn(type: NativeType, name: string): boolean {
    if (type === 'sources') return this.opts.connectors.source(name) !== undefined;
    if (type === 'sinks') return this.opts.connectors.sink(name) !== undefined;
    return false;
  }

  /** A full import: every plugin is dropped (at the next start) unless the bundle installs it again. */
  removeAll(): Promise<void> {
    return this.serial(async () => {
      for (const e of this.entries.values()) e.deleted = true;
      await this.save();
    });
  }

  /** The plugin providing SQL function `name` (the bundle's export of the items a rule needs). */
  describeFunction(name: string): Record<string, string> {
    const u = this.udf(name);
    if (!u) throw new EddyError(ErrorCode.NotFound, `describe function ${name} error: not found`);
    return { name, plugin: u.plugin, serviceName: KEY('functions', u.plugin) };
  }

  specOf(kind: 'source' | 'sink', type: string): { name: string } {
    const e = this.entries.get(KEY(kind === 'source' ? 'sources' : 'sinks', type));
    if (!e || e.deleted) throw new Error(`no native plugin provides ${kind} ${type}`);
    return { name: KEY(e.type, e.name) };
  }

  // ------------------------------------------------------------------------------------------ custom schemas

  /** `POST /schemas/custom {name, soFile}`: a format plugin archive. */
  createFormat(name: string, file: string): Promise<void> {
    return this.create('formats', { name, file, shellParas: [], functions: [] });
  }

  deleteFormat(name: string): Promise<void> {
    return this.delete('formats', name);
  }

  /** The bundle's custom schema items: `custom_<name>` → `{type, name, content, file, soFile}`. */
  customRecords(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const e of this.entries.values()) {
      if (e.type !== 'formats' || e.deleted) continue;
      out[`custom_${e.name}`] = JSON.stringify({ type: 'custom', name: e.name, content: '', file: '', soFile: e.file });
    }
    return out;
  }

  /** A bundle's custom schema: installed unless one of that name is. */
  async installCustom(name: string, soFile: string): Promise<void> {
    const had = this.entries.get(KEY('formats', name));
    if (had && had.file === soFile && had.deleted) {
      delete had.deleted;
      await this.serial(() => this.save());
    }
    if (had) return;
    await this.createFormat(name, soFile);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
