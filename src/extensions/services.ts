/**
 * External services (docs/runtime.md §6, docs/rest-api.md §11): a zip archive holding `<name>.json` and its protobuf schemas
 * is installed under `<data>/services/`; every function it defines becomes a SQL function in the function registry
 * (after built-ins and JavaScript functions, docs/runtime.md §5.1), calling the remote service synchronously.
 *
 * Persistence (docs/runtime.md §10.1): `services` (name → parsed definition), `serviceFuncs` (function → owner record),
 * `serviceInstall` (name → `{"name","file"}`). At start every definition file in `<data>/services/` is parsed again.
 */
import { Serial } from '../core/serial.js';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { EddyError, ErrorCode, isDefect } from '../core/errors.js';
import { badFileName, readUrl, tempPath, type FileRoots } from '../core/files.js';
import type { FunctionDef, FunctionRegistry } from '../functions/registry.js';
import type { Logger } from '../config/log.js';
import { checkRuleId } from '../core/ids.js';
import type { KVOp, KVStore } from '../store/kv.js';
import { moveEntries, readZip, writeEntries, type ArchiveEntry } from './services-archive.js';
import { interfaceFunctions } from './services-call.js';
import {
  describeService,
  functionRecords,
  parseServiceDef,
  type ServiceDef,
  type ServiceFuncRecord,
} from './services-def.js';
import { ServiceTransport } from './services-transport.js';

const NS_SERVICES = 'services';
const NS_FUNCS = 'serviceFuncs';
const NS_INSTALL = 'serviceInstall';

export interface ServiceManagerOptions {
  store: KVStore;
  functions: FunctionRegistry;
  /** `<data>/services` */
  dir: string;
  logger?: Logger;
  /** folders a `file://` URL may point into (all when absent) */
  fileRoots?: FileRoots;
}

interface Installed {
  def: ServiceDef;
  file: string;
}

const bad = (msg: string) => new EddyError(ErrorCode.Undefined, msg);

export class ServiceManager {
  private readonly services = new Map<string, Installed>();
  /** function name → its owner record (a later service takes a name over) */
  private readonly funcs = new Map<string, ServiceFuncRecord>();
  /** the definitions this manager put in the registry, by function name */
  private readonly registered = new Map<string, FunctionDef>();
  private readonly transport = new ServiceTransport();
  /** changes run one at a time */
  private readonly changes = new Serial();

  constructor(private readonly opts: ServiceManagerOptions) {}

  private get schemaDir(): string {
    return join(this.opts.dir, 'schemas');
  }

  /** Parses the installed definition files again and registers their functions (before rules are restored). */
  async load(): Promise<void> {
    await mkdir(this.opts.dir, { recursive: true });
    const installs = new Map<string, string>();
    for (const [name, text] of await this.opts.store.entries(NS_INSTALL)) {
      try {
        const v = JSON.parse(text) as { file?: unknown };
        installs.set(name, typeof v.file === 'string' ? v.file : '');
      } catch {
        installs.set(name, '');
      }
    }
    const files = readdirSync(this.opts.dir, { withFileTypes: true })
      .filter((d) => d.isFile() && d.name.endsWith('.json'))
      .map((d) => d.name.slice(0, -'.json'.length));
    const names = [...installs.keys()].filter((n) => files.includes(n));
    for (const n of files) if (!names.includes(n)) names.push(n);
    const ops: KVOp[] = [];
    for (const name of names) {
      try {
        const def = parseServiceDef(name, readFileSync(join(this.opts.dir, `${name}.json`), 'utf8'), [this.schemaDir]);
        this.services.set(name, { def, file: installs.get(name) ?? '' });
        this.register(def);
        ops.push({ ns: NS_SERVICES, key: name, value: JSON.stringify(describeService(def)) });
      } catch (err) {
        this.opts.logger?.warn(
          { err: (err as Error).message },
          'service definition %s.json cannot be loaded; it is skipped',
          name,
        );
      }
    }
    // the stored records follow the files: services whose file is gone are dropped
    for (const key of await this.opts.store.keys(NS_SERVICES))
      if (!this.services.has(key)) ops.push({ ns: NS_SERVICES, key, value: null });
    for (const key of await this.opts.store.keys(NS_FUNCS))
      if (!this.funcs.has(key)) ops.push({ ns: NS_FUNCS, key, value: null });
    for (const [fn, rec] of this.funcs) ops.push({ ns: NS_FUNCS, key: fn, value: JSON.stringify(rec) });
    if (ops.length > 0) await this.opts.store.batch(ops);
  }

  names(): string[] {
    return [...this.services.keys()];
  }

  /** The describe shape of a service; 404 when absent. */
  describe(name: string): Record<string, unknown> {
    const s = this.services.get(name);
    if (!s) throw new EddyError(ErrorCode.NotFound, `describe service ${name} error: not found`);
    return describeService(s.def);
  }

  functionNames(): string[] {
    return [...this.funcs.keys()].sort();
  }

  /** The brief's keys plus eKuiper's (docs/rest-api.md §11.2, docs/compatibility.md K21); 404 when absent. */
  describeFunction(name: string): Record<string, string> {
    const r = this.funcs.get(name);
    if (!r) throw new EddyError(ErrorCode.NotFound, `describe function ${name} error: not found`);
    return { name: r.FuncName, serviceName: r.ServiceName, ...r };
  }

  /** Install records `{name, file}` by name (what an export bundle carries). */
  installRecords(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, s] of this.services) out[name] = JSON.stringify({ name, file: s.file });
    return out;
  }

  /**
   * Installs a bundle item (`Service` section: name → `{"name","file"}` text). An existing service is kept as it is
   * (docs/compatibility.md D15); errors carry the create texts.
   */
  async importRecord(name: string, text: string): Promise<void> {
    let file: unknown;
    try {
      file = (JSON.parse(text) as { file?: unknown } | null)?.file;
    } catch (e) {
      throw bad(`invalid service install record ${name}: ${(e as Error).message}`);
    }
    if (typeof file !== 'string') throw bad(`invalid service install record ${name}: file must be a string`);
    if (this.services.has(name)) return;
    await this.create(name, file);
  }

  create(name: string, file: string): Promise<void> {
    return this.serial(async () => {
      try {
        this.checkName(name);
        if (this.services.has(name)) throw bad(`service ${name} exist`);
        await this.install(name, file);
      } catch (e) {
        throw prefixed(e, 'service create command error');
      }
    });
  }

  /** Replaces a service: delete + create, the path name is used. */
  update(name: string, file: string): Promise<void> {
    return this.serial(async () => {
      if (!this.services.has(name))
        throw new EddyError(ErrorCode.NotFound, `service update command error: ${name} is not found`);
      try {
        await this.remove(name);
        await this.install(name, file);
      } catch (e) {
        throw prefixed(e, 'service update command error');
      }
    });
  }

  delete(name: string): Promise<void> {
    return this.serial(async () => {
      if (!this.services.has(name))
        throw new EddyError(ErrorCode.NotFound, `delete service ${name} error: ${name} is not found`);
      await this.remove(name);
    });
  }

  /** Deletes every service (full data import). */
  removeAll(): Promise<void> {
    return this.serial(async () => {
      for (const name of [...this.services.keys()]) await this.remove(name);
    });
  }

  async close(): Promise<void> {
    await this.transport.close();
  }

  // ------------------------------------------------------------------------------------------------ internals

  private checkName(name: string): void {
    const idErr = checkRuleId(name);
    if (idErr) throw bad(idErr);
    const fileErr = badFileName(name, true);
    if (fileErr) throw bad(fileErr);
  }

  private async install(name: string, file: string): Promise<void> {
    let url: URL | undefined;
    try {
      url = new URL(file);
    } catch {
      url = undefined;
    }
    if (!url || !['http:', 'https:', 'file:'].includes(url.protocol)) throw bad(`invalid file path ${file}`);
    let bytes: Buffer;
    try {
      bytes = await readUrl(file, this.opts.fileRoots);
    } catch (e) {
      throw bad(`fail to download file ${file}: ${(e as Error).message}`);
    }
    let entries: ArchiveEntry[];
    try {
      entries = readZip(bytes);
    } catch (e) {
      throw bad((e as Error).message);
    }
    const wanted = `${name}.json`.toLowerCase();
    const descriptor = entries.find((e) => !e.path.includes('/') && e.path.toLowerCase() === wanted);
    if (!descriptor) throw bad(`cannot find the json descriptor file ${name}.json for service`);
    // the descriptor keeps the service's spelling; `schema/` files go to `schemas/` (docs/compatibility.md K24)
    const staged = entries.map((e): ArchiveEntry => {
      if (e === descriptor) return { path: `${name}.json`, data: e.data };
      if (e.path.startsWith('schema/')) return { path: `schemas/${e.path.slice('schema/'.length)}`, data: e.data };
      return e;
    });
    await mkdir(this.opts.dir, { recursive: true });
    const tmp = tempPath(this.opts.dir);
    let def: ServiceDef;
    try {
      await writeEntries(tmp, staged);
      def = parseServiceDef(name, descriptor.data.toString('utf8'), [join(tmp, 'schemas'), this.schemaDir]);
    } catch (e) {
      await rm(tmp, { recursive: true, force: true });
      throw bad((e as Error).message);
    }
    await moveEntries(tmp, this.opts.dir, staged);
    const records = functionRecords(def);
    const ops: KVOp[] = [
      { ns: NS_SERVICES, key: name, value: JSON.stringify(describeService(def)) },
      { ns: NS_INSTALL, key: name, value: JSON.stringify({ name, file }) },
      ...records.map((r): KVOp => ({ ns: NS_FUNCS, key: r.FuncName, value: JSON.stringify(r) })),
    ];
    await this.opts.store.batch(ops);
    this.services.set(name, { def, file });
    this.register(def);
  }

  private async remove(name: string): Promise<void> {
    const ops: KVOp[] = [
      { ns: NS_SERVICES, key: name, value: null },
      { ns: NS_INSTALL, key: name, value: null },
    ];
    const owned = [...this.funcs.values()].filter((r) => r.ServiceName === name).map((r) => r.FuncName);
    for (const fn of owned) ops.push({ ns: NS_FUNCS, key: fn, value: null });
    await this.opts.store.batch(ops);
    for (const fn of owned) {
      this.funcs.delete(fn);
      const def = this.registered.get(fn);
      if (def && this.opts.functions.get(fn) === def) this.opts.functions.unregister(fn);
      this.registered.delete(fn);
    }
    this.services.delete(name);
    await rm(join(this.opts.dir, `${basename(name)}.json`), { force: true });
  }

  /** Registers a service's functions; a name held by a built-in or a JavaScript function keeps that owner. */
  private register(def: ServiceDef): void {
    const records = new Map(functionRecords(def).map((r) => [r.FuncName, r]));
    for (const iface of def.interfaces) {
      for (const fd of interfaceFunctions(iface, this.transport)) {
        const rec = records.get(fd.name);
        if (rec) this.funcs.set(fd.name, rec);
        const current = this.opts.functions.get(fd.name);
        const ours = current !== undefined && [...this.registered.values()].includes(current);
        if (current !== undefined && !ours) {
          this.opts.logger?.warn(
            'service function %s of service %s is hidden by a function of the same name',
            fd.name,
            def.name,
          );
          continue;
        }
        this.opts.functions.register(fd);
        this.registered.set(fd.name, fd);
      }
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.changes.run(fn);
  }
}

/** A refusal with `prefix: ` in front (a defect is returned as it is). */
function prefixed(e: unknown, prefix: string): unknown {
  if (e instanceof EddyError) return e.withPrefix(prefix);
  if (isDefect(e)) return e;
  return new EddyError(ErrorCode.Undefined, `${prefix}: ${(e as Error).message}`);
}
