/**
 * Portable plugins (docs/runtime.md §5.3, docs/rest-api.md §10.5): a zip with a JSON descriptor and an executable, installed
 * under `<plugins>/portable/<name>/`, run as a child process (started on first use) that speaks NNG over IPC. Each
 * declared symbol becomes a source type, a sink type or a SQL function, looked up after the built-ins (docs/runtime.md §5.1).
 *
 * Persistence: KV namespace `portablePlugin` (name → `{"name","file","shellParas"}`); at start every folder of
 * `<plugins>/portable/` with a valid descriptor is registered again (no reinstall).
 *
 * Function symbols are scalar functions (the host does not ask `IsAggregate`, which would start the process when
 * a rule is planned).
 */
import { Serial } from '../core/serial.js';
import { spawn } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import YAML from 'yaml';
import { EddyError, ErrorCode } from '../core/errors.js';
import { readUrl, tempPath, type FileRoots } from '../core/files.js';
import type { FunctionDef, FunctionRegistry } from '../functions/registry.js';
import type { Logger } from '../config/log.js';
import type { Props, SourceConnector } from '../contracts/index.js';
import type { SinkConnector } from '../contracts/index.js';
import type { Declaration } from '../connectors/declaration.js';
import type { KVStore } from '../store/kv.js';
import { parseJsonExact } from '../connectors/formats/jsonparse.js';
import { EvalError, toJsonData, type Value } from '../values/index.js';
import { PluginHost, type PluginSpec } from './plugins-host.js';
import { portableDeclaration, type PortableControl, type PortableKind } from './plugins-portable-connectors.js';
import { PortableRelayServer, type PortableSymbols } from './plugins-portable-relay.js';
import type { MessagePort } from 'node:worker_threads';
import { checkRequest, type PluginRequest } from './plugins.js';
import { readZip, type ArchiveEntry } from './services-archive.js';

const NS = 'portablePlugin';
const FUNC_TIMEOUT_MS = 5000;

/** The descriptor, as `GET /plugins/portables/{name}` shows it. */
export interface PortableInfo {
  name: string;
  version: string;
  language: string;
  executable: string;
  sources: string[];
  sinks: string[];
  functions: string[];
  virtualEnvType?: string;
  env?: string;
}

/** What the manager needs of the connector registry (sources and sinks are declared like built-ins). */
export interface ConnectorPort {
  source(type: string): (() => SourceConnector) | undefined;
  sink(type: string): (() => SinkConnector) | undefined;
  declare(d: Declaration): void;
}

/** What the manager needs of the config keys: a plugin's source yaml becomes the user layer of its type. */
export interface SourceConfigPort {
  hasUser(kind: 'sources', type: string): boolean;
  setUser(kind: 'sources', type: string, map: Record<string, Props>): Promise<void>;
}

export interface PortableOptions {
  store: KVStore;
  functions: FunctionRegistry;
  connectors: ConnectorPort;
  confKeys: SourceConfigPort;
  /** `<plugins>/portable` */
  dir: string;
  /** `<data>` (sources/, sinks/, functions/ metadata files) */
  dataDir: string;
  pythonBin: string;
  initTimeoutMs: number;
  logger?: Logger;
  /** folders a `file://` URL may point into (all when absent) */
  fileRoots?: FileRoots;
}

const bad = (msg: string) => new EddyError(ErrorCode.Undefined, msg);
const LANGUAGES = new Set(['go', 'python', 'javascript', 'node']);

function strings(v: unknown, what: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === ''))
    throw new Error(`invalid plugin, ${what} must be an array of names`);
  return v as string[];
}

/** Parses and checks a descriptor; `name` is the plugin name it must carry. */
export function parseDescriptor(name: string, text: string): PortableInfo {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`invalid plugin, cannot parse ${name}.json: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new Error(`invalid plugin, ${name}.json must be a JSON object`);
  const o = v as Record<string, unknown>;
  const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : '');
  const declared = str('name');
  if (declared !== '' && declared !== name)
    throw new Error(`invalid plugin, the name ${declared} in ${name}.json does not match ${name}`);
  const info: PortableInfo = {
    name,
    version: str('version'),
    language: str('language'),
    executable: str('executable'),
    sources: strings(o.sources, 'sources'),
    sinks: strings(o.sinks, 'sinks'),
    functions: strings(o.functions, 'functions'),
  };
  if (!LANGUAGES.has(info.language)) throw new Error(`invalid plugin, unsupported language ${info.language}`);
  if (info.executable === '' || info.executable.split(/[\\/]/).includes('..') || info.executable.startsWith('/')) {
    throw new Error('invalid plugin, executable must be a path inside the plugin');
  }
  if (info.sources.length + info.sinks.length + info.functions.length === 0)
    throw new Error('invalid plugin, it declares no source, sink or function');
  if (str('virtualEnvType') !== '') {
    if (str('virtualEnvType') !== 'conda')
      throw new Error(`invalid plugin, unsupported virtualEnvType ${str('virtualEnvType')}`);
    info.virtualEnvType = 'conda';
    info.env = str('env');
  }
  return info;
}

interface Installed {
  info: PortableInfo;
  spec: PluginSpec;
  record: { name: string; file: string; shellParas: string[] };
}

export class PortableManager implements PortableControl {
  private relayServer: PortableRelayServer | undefined;
  private readonly plugins = new Map<string, Installed>();
  /** symbol → plugin name, per kind */
  private readonly owners = {
    source: new Map<string, string>(),
    sink: new Map<string, string>(),
    func: new Map<string, string>(),
  };
  private readonly registeredFuncs = new Map<string, FunctionDef>();
  /** source/sink types whose registry factory this manager installed (they stay across delete and re-create) */
  private readonly factories = { source: new Set<string>(), sink: new Set<string>() };
  readonly host: PluginHost;
  /** changes run one at a time */
  private readonly changes = new Serial();
  private opCounter = 0;

  constructor(private readonly opts: PortableOptions) {
    this.host = new PluginHost((plugin, line) => opts.logger?.info('plugin %s: %s', plugin, line));
  }

  /** Registers every installed plugin folder (before rules are restored). */
  async load(): Promise<void> {
    await mkdir(this.opts.dir, { recursive: true });
    const records = new Map<string, Installed['record']>();
    for (const [name, text] of await this.opts.store.entries(NS)) {
      try {
        records.set(name, JSON.parse(text) as Installed['record']);
      } catch {
        // a record that cannot be read only loses the export of that plugin
      }
    }
    for (const d of readdirSync(this.opts.dir, { withFileTypes: true })) {
      if (!d.isDirectory() || d.name.startsWith('.')) continue;
      const name = d.name;
      try {
        const info = parseDescriptor(name, readFileSync(join(this.opts.dir, name, `${name}.json`), 'utf8'));
        this.checkSymbols(info);
        this.register(info, records.get(name) ?? { name, file: '', shellParas: [] });
      } catch (err) {
        this.opts.logger?.warn(
          { err: (err as Error).message },
          'portable plugin %s cannot be loaded; it is skipped',
          name,
        );
      }
    }
  }

  names(): string[] {
    return [...this.plugins.keys()];
  }

  describe(name: string): PortableInfo | undefined {
    const p = this.plugins.get(name);
    return p && { ...p.info };
  }

  /** Install records by name (the export bundle's `portablePlugins` section). */
  installRecords(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, p] of this.plugins) out[name] = JSON.stringify(p.record);
    return out;
  }

  /**
   * Installs a bundle item (`portablePlugins` section: name → `{"name","file","shellParas"}` text); an existing
   * plugin is kept as it is.
   */
  async importRecord(name: string, text: string): Promise<void> {
    let v: { file?: unknown; shellParas?: unknown } | null;
    try {
      v = JSON.parse(text) as typeof v;
    } catch (e) {
      throw bad(`invalid portable plugin install record ${name}: ${(e as Error).message}`);
    }
    if (typeof v?.file !== 'string') throw bad(`invalid portable plugin install record ${name}: file must be a string`);
    const paras = Array.isArray(v.shellParas) ? v.shellParas.filter((x): x is string => typeof x === 'string') : [];
    if (this.plugins.has(name)) return;
    await this.create({ name, file: v.file, shellParas: paras, functions: [] });
  }

  /** Deletes every plugin (full data import). */
  removeAll(): Promise<void> {
    return this.serial(async () => {
      for (const name of [...this.plugins.keys()]) await this.remove(name);
    });
  }

  /** The plugin providing SQL function `name` (the bundle's export of the items a rule needs); throws when none. */
  describeFunction(name: string): Record<string, string> {
    const owner = this.owners.func.get(name);
    if (owner === undefined) throw new EddyError(ErrorCode.NotFound, `describe function ${name} error: not found`);
    return { name, plugin: owner, serviceName: owner };
  }

  create(req: PluginRequest): Promise<void> {
    return this.serial(() => this.install(req));
  }

  /** PUT: the old version is removed when present (its absence is no error), then the body is installed. */
  update(name: string, req: PluginRequest): Promise<void> {
    return this.serial(async () => {
      if (this.plugins.has(name)) await this.remove(name);
      await this.install(req);
    });
  }

  delete(name: string): Promise<void> {
    return this.serial(async () => {
      if (!this.plugins.has(name)) throw new EddyError(ErrorCode.NotFound, `portable plugin ${name} is not found`);
      await this.remove(name);
    });
  }

  async close(): Promise<void> {
    await this.host.close();
  }

  // ------------------------------------------------------------------------------------------ install / remove

  private async install(req: PluginRequest): Promise<void> {
    const name = checkRequest(req);
    if (this.plugins.has(name)) throw bad(`invalid name ${name}: duplicate`);
    let bytes: Buffer;
    try {
      bytes = await readUrl(req.file, this.opts.fileRoots);
    } catch (e) {
      throw bad(`fail to download file ${req.file}: ${(e as Error).message}`);
    }
    let entries: ArchiveEntry[];
    try {
      entries = readZip(bytes);
    } catch (e) {
      throw bad((e as Error).message);
    }
    const byPath = new Map(entries.map((e) => [e.path, e]));
    const descriptor = byPath.get(`${name}.json`);
    if (!descriptor) throw bad(`missing ${name}.json`);
    let info: PortableInfo;
    try {
      info = parseDescriptor(name, descriptor.data.toString('utf8'));
    } catch (e) {
      throw bad((e as Error).message);
    }
    const exe = info.executable.replace(/\\/g, '/').replace(/^\.\//, '');
    if (!byPath.has(exe)) throw bad(`missing ${info.executable}`);
    for (const src of info.sources) if (!byPath.has(`sources/${src}.yaml`)) throw bad(`missing sources/${src}.yaml`);
    const hasInstall = byPath.has('install.sh');
    if (req.shellParas.length > 0 && !hasInstall) throw bad('shellParas are given but the plugin has no install.sh');
    this.checkSymbols(info);

    const metaDirs = ['sources/', 'sinks/', 'functions/'];
    const metaEntries = entries.filter(
      (e) => metaDirs.some((d) => e.path.startsWith(d)) && !e.path.slice(e.path.indexOf('/') + 1).includes('/'),
    );
    const pluginEntries = entries.filter((e) => !metaEntries.includes(e));
    const target = join(this.opts.dir, name);
    const staging = tempPath(this.opts.dir);
    try {
      for (const e of pluginEntries) {
        const p = join(staging, e.path);
        await mkdir(dirname(p), { recursive: true });
        await writeFile(p, e.data);
      }
      chmodSync(join(staging, exe), 0o755);
      await rm(target, { recursive: true, force: true });
      await rename(staging, target);
    } catch (e) {
      await rm(staging, { recursive: true, force: true });
      throw bad(`fail to install plugin: ${(e as Error).message}`);
    }
    if (hasInstall) {
      try {
        await runInstall(target, req.shellParas);
      } catch (e) {
        await rm(target, { recursive: true, force: true });
        throw bad(`fail to install plugin: ${(e as Error).message}`);
      }
    }
    for (const e of metaEntries) {
      const m = /^sources\/(.+)\.yaml$/.exec(e.path);
      if (m && info.sources.includes(m[1])) {
        // the config keys of the source: kept when the user already has some (a reinstall keeps their edits)
        if (!this.opts.confKeys.hasUser('sources', m[1]))
          await this.opts.confKeys.setUser('sources', m[1], yamlConfKeys(e.data));
        continue;
      }
      const p = join(this.opts.dataDir, e.path);
      await mkdir(dirname(p), { recursive: true });
      await writeFile(p, e.data);
    }
    const record = { name, file: req.file, shellParas: req.shellParas };
    await this.opts.store.set(NS, name, JSON.stringify(record));
    this.register(info, record);
    this.host.installed(this.plugins.get(name)!.spec);
  }

  private async remove(name: string): Promise<void> {
    const p = this.plugins.get(name);
    if (!p) return;
    this.host.stopPlugin(name);
    for (const [kind, map] of Object.entries(this.owners)) {
      for (const [symbol, owner] of [...map]) {
        if (owner !== name) continue;
        map.delete(symbol);
        if (kind === 'func') {
          const def = this.registeredFuncs.get(symbol);
          if (def && this.opts.functions.get(symbol) === def) this.opts.functions.unregister(symbol);
          this.registeredFuncs.delete(symbol);
        }
      }
    }
    this.plugins.delete(name);
    await this.opts.store.delete(NS, name);
    const files = [
      ...p.info.sources.flatMap((s) => [join('sources', `${s}.yaml`), join('sources', `${s}.json`)]),
      ...p.info.sinks.map((s) => join('sinks', `${s}.json`)),
      ...p.info.functions.map((f) => join('functions', `${f}.json`)),
    ];
    for (const src of p.info.sources) await this.opts.confKeys.setUser('sources', src, {}).catch(() => undefined);
    for (const f of files) await rm(join(this.opts.dataDir, f), { force: true });
    await rm(join(this.opts.dir, name), { recursive: true, force: true });
  }

  // ------------------------------------------------------------------------------------------ symbols

  /** Symbol names are global per kind: a built-in or another plugin's symbol is a clash. */
  private checkSymbols(info: PortableInfo): void {
    for (const s of info.sources) {
      if (this.owners.source.has(s) || (!this.owns('source', s) && this.opts.connectors.source(s)))
        throw bad(`source ${s} already exists`);
    }
    for (const s of info.sinks) {
      if (this.owners.sink.has(s) || (!this.owns('sink', s) && this.opts.connectors.sink(s)))
        throw bad(`sink ${s} already exists`);
    }
    for (const f of info.functions) {
      const current = this.opts.functions.get(f);
      if (this.owners.func.has(f) || (current !== undefined && ![...this.registeredFuncs.values()].includes(current))) {
        throw bad(`function name ${f} already exists`);
      }
    }
  }

  private owns(kind: 'source' | 'sink', symbol: string): boolean {
    return this.factories[kind].has(symbol);
  }

  private register(info: PortableInfo, record: Installed['record']): void {
    const dir = join(this.opts.dir, info.name);
    const spec = this.spec(info, dir);
    this.plugins.set(info.name, { info, spec, record });
    for (const s of info.sources) {
      this.owners.source.set(s, info.name);
      if (!this.factories.source.has(s)) {
        this.factories.source.add(s);
        this.opts.connectors.declare(portableDeclaration('source', s, this));
      }
    }
    for (const s of info.sinks) {
      this.owners.sink.set(s, info.name);
      if (!this.factories.sink.has(s)) {
        this.factories.sink.add(s);
        this.opts.connectors.declare(portableDeclaration('sink', s, this));
      }
    }
    for (const f of info.functions) {
      this.owners.func.set(f, info.name);
      const def: FunctionDef = {
        name: f,
        kind: 'scalar',
        nullCheck: 'none',
        // the plugin answers one call at a time (request/reply channel)
        async: { timeoutMs: PluginHost.callTimeLimit(this.opts.initTimeoutMs, FUNC_TIMEOUT_MS), maxInFlight: 1 },
        execAsync: (args) => this.callFunction(f, args),
      };
      this.opts.functions.register(def);
      this.registeredFuncs.set(f, def);
    }
  }

  private spec(info: PortableInfo, dir: string): PluginSpec {
    const exe = join(dir, info.executable);
    const arg = JSON.stringify({ sendTimeout: 1000 });
    let command = exe;
    let args = [arg];
    if (info.language === 'python') {
      if (info.virtualEnvType === 'conda') {
        command = 'conda';
        args = ['run', '-n', info.env ?? '', this.opts.pythonBin, exe, arg];
      } else {
        command = this.opts.pythonBin;
        args = [exe, arg];
      }
    } else if (info.language === 'javascript' || info.language === 'node') {
      command = process.execPath;
      args = [exe, arg];
    }
    return { name: info.name, command, args, cwd: dirname(exe), initTimeoutMs: this.opts.initTimeoutMs };
  }

  /** The running plugin that provides a symbol; throws when it was deleted. */
  specOf(kind: 'source' | 'sink' | 'func', symbol: string): PluginSpec {
    const owner = this.owners[kind].get(symbol);
    const p = owner === undefined ? undefined : this.plugins.get(owner);
    if (!p)
      throw new EddyError(
        ErrorCode.Executor,
        `portable plugin providing ${kind === 'func' ? 'function' : kind} ${symbol} is not installed`,
      );
    return p.spec;
  }

  check(kind: PortableKind, symbol: string): void {
    this.specOf(kind, symbol);
  }

  async reserve(kind: PortableKind, symbol: string): Promise<string> {
    this.specOf(kind, symbol);
    return `${symbol}${this.opCounter++}`;
  }

  command(kind: PortableKind, symbol: string, cmd: 'start' | 'stop', arg: string): Promise<void> {
    return this.host.command(this.specOf(kind, symbol), { cmd, arg });
  }

  /** Serves the control of the plugin processes to a rule worker through `port` (plugins-portable-relay.ts). */
  serveWorker(port: MessagePort): void {
    this.relayServer ??= new PortableRelayServer(this);
    this.relayServer.serve(port);
  }

  /** The source and sink symbols of the installed plugins (the rule workers declare them: plugins-portable-relay.ts). */
  installedConnectors(): PortableSymbols {
    return { source: [...this.owners.source.keys()], sink: [...this.owners.sink.keys()] };
  }

  private async callFunction(f: string, args: Value[]): Promise<Value> {
    let spec: PluginSpec;
    try {
      spec = this.specOf('func', f);
    } catch (e) {
      throw new EvalError((e as Error).message);
    }
    const ctx = JSON.stringify({ ruleId: '', opId: '', instanceId: 0, funcId: 0 });
    const payload = JSON.stringify({ func: 'Exec', arg: [...args.map(toJsonData), ctx] }, (_k, v: unknown) =>
      typeof v === 'bigint' ? Number(v) : v,
    );
    let text: string;
    try {
      text = await this.host.call(spec, f, payload, FUNC_TIMEOUT_MS);
    } catch (e) {
      throw new EvalError((e as Error).message);
    }
    let reply: { state?: unknown; result?: unknown };
    try {
      reply = parseJsonExact(text) as { state?: unknown; result?: unknown };
    } catch {
      throw new EvalError(`invalid reply from the plugin: ${text}`);
    }
    if (reply.state !== true)
      throw new EvalError(typeof reply.result === 'string' ? reply.result : JSON.stringify(reply.result));
    return (reply.result ?? null) as Value;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.changes.run(fn);
  }
}

/** A source yaml (`confKey: {props}`) as config keys; anything unreadable gives none. */
function yamlConfKeys(data: Buffer): Record<string, Props> {
  let tree: unknown;
  try {
    tree = YAML.parse(data.toString('utf8'));
  } catch {
    return {};
  }
  const out: Record<string, Props> = {};
  if (typeof tree !== 'object' || tree === null || Array.isArray(tree)) return out;
  for (const [k, v] of Object.entries(tree as Record<string, unknown>)) {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) out[k.toLowerCase()] = v as Props;
  }
  return out;
}

function runInstall(dir: string, params: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('/bin/sh', ['install.sh', ...params], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`install.sh exited with ${code}: ${out.trim()}`)),
    );
  });
}
