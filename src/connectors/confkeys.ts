/**
 * Config keys (docs/runtime.md §2.1, §10.2; docs/rest-api.md §5): named property sets per source type, sink type and
 * connection type, in two layers. The read-only defaults are the shipped etc files (`etc/mqtt_source.yaml`,
 * `etc/sources/<type>.yaml`, `etc/connections/connection.yaml`) with `<FILE>__KEY__...` environment overrides; the
 * user layer lives in `data/sources/<type>.yaml`, `data/sinks/<type>.yaml`, `data/connections/connection.yaml` (or in
 * the store's `confKVStorage` namespace when `basic.cfgStorageType` is `kv`). Reads are synchronous from memory.
 */
import { Serial } from '../core/serial.js';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import YAML from 'yaml';
import { applyEnvOverrides } from '../config/env.js';
import { packageRoot, type Home } from '../config/index.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { KVStore } from '../store/kv.js';
import type { Props } from '../contracts/index.js';
import { isRecord } from '../core/fields.js';

export type ConfKind = 'sources' | 'sinks' | 'connections';
/** confKey → properties */
export type ConfMap = Record<string, Props>;

/** Store namespace of the user's config keys when `basic.cfgStorageType` is `kv` (always in cluster mode). */
export const CONF_KEYS_NS = 'confKVStorage';
const KV_NAMESPACE = CONF_KEYS_NS;

export interface ConfKeysOptions {
  home: Home;
  /** environment for `<FILE>__...` overrides of the etc defaults */
  env: NodeJS.ProcessEnv;
  /** `basic.cfgStorageType`: `file` (default) or `kv` */
  storage: string;
  store: KVStore;
  /** the etc file of a type's read-only default keys as its declaration names it (null: none, undefined: undeclared) */
  defaultsFile?: (type: string) => string | null | undefined;
}

function toConfMap(v: unknown, lowerKeys = false): ConfMap {
  const out: ConfMap = {};
  if (!isRecord(v)) return out;
  for (const [k, p] of Object.entries(v)) out[lowerKeys ? k.toLowerCase() : k] = isRecord(p) ? (p as Props) : {};
  return out;
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

/** Finds `key` the way eKuiper resolves a CONF_KEY: lower-cased name first, then the exact name. */
function lookupKey(map: ConfMap, key: string): Props | undefined {
  const lower = key.toLowerCase();
  if (Object.prototype.hasOwnProperty.call(map, lower)) return map[lower];
  if (Object.prototype.hasOwnProperty.call(map, key)) return map[key];
  return undefined;
}

/** A type name becomes a file name in the data folder: no path separators, NUL, `.` or `..`. */
function checkTypeName(kind: ConfKind, type: string): void {
  if (type === '' || type === '.' || type === '..' || /[/\\]/.test(type) || type.includes('\u0000')) {
    throw new EddyError(ErrorCode.ConfKey, `invalid name:${kind}.${type}`);
  }
}

/** A KV key `<kind>.<type>.<confKey>` split, or undefined when it is not one. */
function splitKvKey(k: string): [ConfKind, string, string] | undefined {
  const first = k.indexOf('.');
  const second = k.indexOf('.', first + 1);
  if (first < 0 || second < 0) return undefined;
  const kind = k.slice(0, first);
  if (kind !== 'sources' && kind !== 'sinks' && kind !== 'connections') return undefined;
  return [kind, k.slice(first + 1, second), k.slice(second + 1)];
}

export class ConfKeys {
  private readonly home: Home;
  private readonly env: NodeJS.ProcessEnv;
  private readonly kv: boolean;
  private readonly store: KVStore;
  private readonly declaredDefaults: ConfKeysOptions['defaultsFile'];
  /** etc defaults per kind and type, read once */
  private readonly defaultsCache = new Map<string, ConfMap>();
  private connectionDefaults: Record<string, ConfMap> | undefined;
  /** user layer per kind → type → confKey → props */
  private readonly userLayer: Record<ConfKind, Map<string, ConfMap>> = {
    sources: new Map(),
    sinks: new Map(),
    connections: new Map(),
  };
  /** serialises writes so files and KV follow the order of requests */
  /** writes of the user layer run one at a time */
  private readonly writing = new Serial();
  private changes = 0;

  constructor(opts: ConfKeysOptions) {
    this.home = opts.home;
    this.env = opts.env;
    this.kv = opts.storage === 'kv';
    this.store = opts.store;
    this.declaredDefaults = opts.defaultsFile;
  }

  /** Changes with every write of the user layer: rule workers read it again only when it moved. */
  get revision(): number {
    return this.changes;
  }

  /**
   * Cluster mode: a config key another node stored (`<kind>.<type>.<confKey>` → its properties as JSON) or deleted,
   * docs/cluster.md §2; the user layer follows without writing the store.
   */
  applyStored(key: string, value: string | undefined): void {
    const [kind, type, confKey] = splitKvKey(key) ?? [];
    if (kind === undefined || type === undefined || confKey === undefined) return;
    const map = this.userLayer[kind].get(type) ?? {};
    if (value === undefined) delete map[confKey];
    else {
      let props: unknown;
      try {
        props = JSON.parse(value);
      } catch {
        return;
      }
      map[confKey] = isRecord(props) ? (props as Props) : {};
    }
    this.userLayer[kind].set(type, map);
    this.changes++;
  }

  /** Reads the user layer (files or KV): at start, and on a rule worker when the main thread's layer changed. */
  async load(): Promise<void> {
    if (this.kv) {
      for (const [k, v] of await this.store.entries(KV_NAMESPACE)) {
        const parts = splitKvKey(k);
        if (!parts) continue;
        const [kind, type, key] = parts;
        let props: unknown;
        try {
          props = JSON.parse(v);
        } catch {
          continue;
        }
        const map = this.userLayer[kind].get(type) ?? {};
        map[key] = isRecord(props) ? (props as Props) : {};
        this.userLayer[kind].set(type, map);
      }
      return;
    }
    for (const kind of ['sources', 'sinks'] as const) {
      const dir = join(this.home.data, kind);
      if (!existsSync(dir)) continue;
      for (const name of readdirSync(dir)) {
        if (!name.endsWith('.yaml') && !name.endsWith('.yml')) continue;
        const type = name.replace(/\.ya?ml$/, '');
        try {
          this.userLayer[kind].set(type, toConfMap(YAML.parse(readFileSync(join(dir, name), 'utf8'))));
        } catch {
          // an unreadable user file is treated as empty; the next write replaces it
        }
      }
    }
    const conn = join(this.home.data, 'connections', 'connection.yaml');
    if (existsSync(conn)) {
      try {
        const tree: unknown = YAML.parse(readFileSync(conn, 'utf8'));
        if (isRecord(tree))
          for (const [type, m] of Object.entries(tree)) this.userLayer.connections.set(type, toConfMap(m));
      } catch {
        // same as above
      }
    }
  }

  // ------------------------------------------------------------------------------------------- defaults

  private etcFile(rel: string): string | undefined {
    const own = join(this.home.etc, rel);
    if (existsSync(own)) return own;
    const shipped = join(packageRoot(), 'etc', rel);
    return existsSync(shipped) ? shipped : undefined;
  }

  private readEtc(rel: string): Record<string, unknown> {
    const file = this.etcFile(rel);
    let tree: Record<string, unknown> = {};
    if (file) {
      try {
        const parsed: unknown = YAML.parse(readFileSync(file, 'utf8'));
        if (isRecord(parsed)) tree = parsed;
      } catch {
        tree = {};
      }
    }
    const prefix = basename(rel)
      .replace(/\.ya?ml$/, '')
      .toUpperCase();
    return applyEnvOverrides(tree, prefix, this.env);
  }

  /** The read-only default config keys of a type ({} when it has none). */
  defaults(kind: ConfKind, type: string): ConfMap {
    if (kind === 'sinks') return {};
    if (kind === 'connections') {
      if (!this.connectionDefaults) {
        const tree = this.readEtc(join('connections', 'connection.yaml'));
        this.connectionDefaults = {};
        // like eKuiper's loader, config-key names of the etc files are lower-cased
        for (const [t, m] of Object.entries(tree)) this.connectionDefaults[t] = toConfMap(m, true);
      }
      return this.connectionDefaults[type] ?? {};
    }
    let cached = this.defaultsCache.get(type);
    if (!cached) {
      const rel = this.defaultsFileOf(type);
      cached = rel === null ? {} : toConfMap(this.readEtc(rel), true);
      this.defaultsCache.set(type, cached);
    }
    return cached;
  }

  /** Reads a type's defaults file again on next use (a plugin installed or replaced it). */
  forgetDefaults(type: string): void {
    this.defaultsCache.delete(type);
  }

  /** Whether a defaults file exists for the type. */
  hasDefaults(kind: ConfKind, type: string): boolean {
    if (kind === 'sinks') return false;
    if (kind === 'connections') {
      this.defaults(kind, type);
      return !!this.connectionDefaults && type in this.connectionDefaults;
    }
    const rel = this.defaultsFileOf(type);
    return rel !== null && this.etcFile(rel) !== undefined;
  }

  /** A source type's defaults file: as declared, else by eKuiper's naming (a type nothing declares yet). */
  private defaultsFileOf(type: string): string | null {
    const declared = this.declaredDefaults?.(type);
    if (declared !== undefined) return declared;
    return type === 'mqtt' ? 'mqtt_source.yaml' : join('sources', `${type}.yaml`);
  }

  // ------------------------------------------------------------------------------------------- reads

  /** The user layer of a type (a copy). */
  user(kind: ConfKind, type: string): ConfMap {
    return clone(this.userLayer[kind].get(type) ?? {});
  }

  hasUser(kind: ConfKind, type: string): boolean {
    return this.userLayer[kind].has(type);
  }

  /** Types with a user layer. */
  userTypes(kind: ConfKind): string[] {
    return [...this.userLayer[kind].keys()];
  }

  /** Defaults then user keys; a user key replaces a default key of the same name as a whole. */
  merged(kind: ConfKind, type: string): ConfMap {
    return clone({ ...this.defaults(kind, type), ...(this.userLayer[kind].get(type) ?? {}) });
  }

  /** One key of the merged view (lower-cased name first, then exact), or undefined. */
  get(kind: ConfKind, type: string, key: string): Props | undefined {
    const user = this.userLayer[kind].get(type);
    const hit = (user && lookupKey(user, key)) ?? lookupKey(this.defaults(kind, type), key);
    return hit ? clone(hit) : undefined;
  }

  /** Properties of a source: the `default` key overlaid with `confKey`'s properties. */
  sourceProps(type: string, confKey: string | undefined): Props {
    const base = this.get('sources', type, 'default') ?? {};
    if (!confKey || confKey === 'default') return base;
    const over = this.get('sources', type, confKey) ?? {};
    return { ...base, ...over };
  }

  /** Properties of a sink config key (`resourceId`), {} when absent. */
  sinkProps(type: string, resourceId: string | undefined): Props {
    if (!resourceId) return {};
    return this.get('sinks', type, resourceId) ?? {};
  }

  /** Properties of a shared connection `connectionSelector: <type>.<key>`. */
  connectionProps(type: string, key: string): Props | undefined {
    return this.get('connections', type, key);
  }

  // ------------------------------------------------------------------------------------------- writes

  /** Adds or replaces a user key and persists it. */
  async put(kind: ConfKind, type: string, key: string, props: Props): Promise<void> {
    const next = { ...(this.userLayer[kind].get(type) ?? {}), [key]: clone(props) };
    await this.apply(kind, type, next, [key]);
  }

  /** Removes a user key (no-op when absent) and persists. */
  async delete(kind: ConfKind, type: string, key: string): Promise<void> {
    const map = this.userLayer[kind].get(type);
    if (!map || !(key in map)) return;
    const next = { ...map };
    delete next[key];
    await this.apply(kind, type, next, [key]);
  }

  /** Replaces (or, with `merge`, extends) the whole user layer of a type: used by data import. */
  async setUser(kind: ConfKind, type: string, map: ConfMap, merge = false): Promise<void> {
    const old = this.userLayer[kind].get(type) ?? {};
    const next = merge ? { ...old, ...clone(map) } : clone(map);
    await this.apply(kind, type, next, [...new Set([...Object.keys(old), ...Object.keys(next)])]);
  }

  /** Installs the new user map of a type and persists it; the previous map comes back if writing fails. */
  private async apply(kind: ConfKind, type: string, next: ConfMap, touched: string[]): Promise<void> {
    checkTypeName(kind, type);
    const layer = this.userLayer[kind];
    const had = layer.has(type);
    const previous = layer.get(type);
    layer.set(type, next);
    this.changes++;
    try {
      await this.persist(kind, type, touched);
    } catch (err) {
      if (had) layer.set(type, previous!);
      else layer.delete(type);
      throw err;
    }
  }

  /** Drops every user key of every type of a kind: used by a full data import. */
  async clearUser(kind: ConfKind): Promise<void> {
    for (const type of [...this.userLayer[kind].keys()]) await this.setUser(kind, type, {});
  }

  private persist(kind: ConfKind, type: string, touched: string[]): Promise<void> {
    const run = async () => {
      try {
        if (this.kv) await this.persistKv(kind, type, touched);
        else this.persistFile(kind, type);
      } catch (err) {
        throw new EddyError(
          ErrorCode.ConfKey,
          `Failed to write data to file:${kind}.${type}.${err instanceof Error ? err.message : String(err)}`,
        );
      }
    };
    return this.writing.run(run);
  }

  private async persistKv(kind: ConfKind, type: string, touched: string[]): Promise<void> {
    const map = this.userLayer[kind].get(type) ?? {};
    await this.store.batch(
      touched.map((key) => ({
        ns: KV_NAMESPACE,
        key: `${kind}.${type}.${key}`,
        value: key in map ? JSON.stringify(map[key]) : null,
      })),
    );
  }

  private persistFile(kind: ConfKind, type: string): void {
    let file: string;
    let tree: unknown;
    if (kind === 'connections') {
      file = join(this.home.data, 'connections', 'connection.yaml');
      const all: Record<string, ConfMap> = {};
      for (const [t, m] of this.userLayer.connections) all[t] = m;
      tree = all;
    } else {
      file = join(this.home.data, kind, `${type}.yaml`);
      tree = this.userLayer[kind].get(type) ?? {};
    }
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, YAML.stringify(tree));
    renameSync(tmp, file);
  }
}
