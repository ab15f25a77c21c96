/**
 * Loads `etc/kuiper.yaml` of the home folder with eKuiper's keys, defaults and `KUIPER__...` overrides.
 */
import { existsSync, mkdirSync, readFileSync, cpSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { applyEnvOverrides, type ConfigTree } from './env.js';
import { settingWarnings } from './settings.js';
import { builtInRuleOptions, type RuleOptions } from '../core/rule-options.js';
import { DEFAULT_MAX_BODY_SIZE } from '../core/limits.js';

export { applyEnvOverrides, typeEnvValue } from './env.js';

/** The four folders of an Eddy home (ARCHITECTURE.md "Configuration and files"). */
/** The marker written in `data/` at a home's first start (docs/runtime.md §9.6); the store's start check reads it. */
export const INITIALIZED_MARKER = 'initialized';

export interface Home {
  root: string;
  etc: string;
  data: string;
  log: string;
  plugins: string;
}

export interface EddyConfig {
  basic: {
    logLevel: string;
    debug: boolean;
    consoleLog: boolean;
    fileLog: boolean;
    /** hours between rotations of log/stream.log (eKuiper's key; 0 = never by time) */
    rotateTime?: number | string;
    /** hours a rotated log file is kept when `rotateSize` is not set */
    maxAge?: number | string;
    /** bytes (or `10MB`) at which log/stream.log is rotated; 0 = no size limit */
    rotateSize?: number | string;
    /** rotated log files kept when `rotateSize` is set */
    rotateCount?: number | string;
    timezone: string;
    restIp: string;
    restPort: number;
    restTls?: { certfile?: string; keyfile?: string } | null;
    prometheus: boolean;
    prometheusPort: number;
    pluginHosts: string;
    authentication: boolean;
    ignoreCase: boolean;
    rulePatrolInterval: string;
    cfgStorageType: string;
    /** largest REST request body in bytes (Eddy's key; default 32 MB) */
    maxBodySize: number;
    /** folders besides the home's data/ that file paths given over the API may use (Eddy's key) */
    fileAccessRoots: string[];
    /**
     * rule executor threads (docs/runtime.md §1.10): 0 (default) = one per core, N ≥ 1 = N threads, `none` = every rule
     * on the main thread, with the API
     */
    workers?: number | string;
    /**
     * ms a worker may stay busy with one record before its rule is stopped and the worker replaced; a rule's
     * `evalLimit` option replaces it for that rule
     */
    ruleEvalLimit?: number | string;
    /** megabytes of JavaScript heap each rule worker may use (docs/runtime.md §1.10); 0 = V8's default */
    workerMemoryLimit?: number | string;
  };
  rule: RuleOptions;
  sink: {
    enableCache: boolean;
    memoryCacheThreshold: number;
    maxDiskCache: number;
    bufferPageSize: number;
    resendInterval: number;
    cleanCacheAtStop: boolean;
  };
  source: { httpServerIp: string; httpServerPort: number };
  store: {
    type: 'sqlite' | 'redis';
    /** `db` is the database number */
    redis: { host: string; port: number; password: string; timeout: number; db?: number };
    sqlite: { name: string };
  };
  portable: { pythonBin: string; initTimeout: number };
  /** the whole tree as read, for keys Eddy does not type */
  raw: ConfigTree;
  /** unknown or unimplemented settings of the home's kuiper.yaml and the `KUIPER__…` variables (settings.ts) */
  warnings: string[];
}

/** eKuiper's built-in rule option defaults (docs/runtime.md §1.2), under the `rule:` section of kuiper.yaml. */
export const DEFAULT_RULE_OPTIONS: Readonly<RuleOptions> = (() => {
  const defaults = builtInRuleOptions();
  return Object.freeze({ ...defaults, restartStrategy: Object.freeze(defaults.restartStrategy) });
})();

/** Folder holding the `etc/` defaults shipped with Eddy (the repository root, or the package root when installed). */
export function packageRoot(): string {
  // src/config/index.ts → two levels up; dist/src/config/index.js → three levels up
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'etc', 'kuiper.yaml'))) return dir;
    dir = dirname(dir);
  }
  throw new Error('cannot find the Eddy package root (etc/kuiper.yaml)');
}

export function resolveHome(root: string = process.env.EDDY_HOME ?? process.cwd()): Home {
  const abs = resolve(root);
  return {
    root: abs,
    etc: join(abs, 'etc'),
    data: join(abs, 'data'),
    log: join(abs, 'log'),
    plugins: join(abs, 'plugins'),
  };
}

/**
 * Creates the home's folders; on first start copies the shipped `etc/` defaults into it, and creates the data
 * sub-folders eKuiper creates at boot (docs/runtime.md §10.2).
 */
export function prepareHome(home: Home): void {
  if (!existsSync(join(home.etc, 'kuiper.yaml'))) {
    const shipped = join(packageRoot(), 'etc');
    if (resolve(shipped) !== resolve(home.etc)) cpSync(shipped, home.etc, { recursive: true });
  }
  for (const dir of [
    home.data,
    home.log,
    home.plugins,
    join(home.data, 'uploads'),
    join(home.data, 'sources'),
    join(home.data, 'sinks'),
    join(home.data, 'functions'),
    join(home.data, 'services'),
    join(home.data, 'services', 'schemas'),
    join(home.data, 'connections'),
    join(home.data, 'schemas', 'protobuf'),
  ]) {
    mkdirSync(dir, { recursive: true });
  }
  const conn = join(home.data, 'connections', 'connection.yaml');
  if (!existsSync(conn)) writeFileSync(conn, '');
}

function isTree(v: unknown): v is ConfigTree {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge of `over` onto `base` (objects merge, everything else replaces); returns a new tree. */
export function mergeTree(base: ConfigTree, over: ConfigTree): ConfigTree {
  const out: ConfigTree = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = isTree(v) && isTree(out[k]) ? mergeTree(out[k] as ConfigTree, v) : v;
  }
  return out;
}

/** Reads a YAML file into a tree ({} when missing or empty). */
export function readYamlFile(path: string): ConfigTree {
  if (!existsSync(path)) return {};
  const parsed: unknown = YAML.parse(readFileSync(path, 'utf8'));
  return isTree(parsed) ? parsed : {};
}

/** The folders file paths given over the API may use: the home's data/ folder, then `basic.fileAccessRoots`. */
export function fileAccessRoots(home: Home, config: EddyConfig): string[] {
  return [home.data, ...(config.basic.fileAccessRoots ?? [])];
}

/** A size in bytes from a number or a text such as `64MB` (K, M, G: powers of 1024); `fallback` when unusable. */
export function byteSize(v: unknown, fallback: number): number {
  if (typeof v === 'number') return Number.isFinite(v) && v > 0 ? Math.floor(v) : fallback;
  if (typeof v !== 'string') return fallback;
  const m = /^\s*(\d+)\s*([KMG]i?B?|B)?\s*$/i.exec(v);
  if (!m) return fallback;
  const unit = (m[2] ?? '').toUpperCase()[0];
  const n = Number(m[1]) * (unit === 'K' ? 1024 : unit === 'M' ? 1024 ** 2 : unit === 'G' ? 1024 ** 3 : 1);
  return n > 0 ? n : fallback;
}

/** Loads the configuration of a home: shipped defaults, then the home's kuiper.yaml, then env overrides. */
export function loadConfig(home: Home, env: NodeJS.ProcessEnv = process.env): EddyConfig {
  const defaults = readYamlFile(join(packageRoot(), 'etc', 'kuiper.yaml'));
  const own = readYamlFile(join(home.etc, 'kuiper.yaml'));
  const tree = applyEnvOverrides(mergeTree(defaults, own), 'KUIPER', env);
  const basic = (tree.basic ?? {}) as EddyConfig['basic'];
  if (!basic.restIp) basic.restIp = '0.0.0.0';
  basic.maxBodySize = byteSize(basic.maxBodySize, DEFAULT_MAX_BODY_SIZE);
  const roots: unknown = basic.fileAccessRoots;
  basic.fileAccessRoots = (Array.isArray(roots) ? roots : typeof roots === 'string' && roots !== '' ? [roots] : [])
    .filter((r): r is string => typeof r === 'string' && r.trim() !== '')
    .map((r) => resolve(home.root, r.trim()));
  const source = (tree.source ?? {}) as EddyConfig['source'];
  if (!source.httpServerIp) source.httpServerIp = '0.0.0.0';
  const rule = (tree.rule ?? {}) as Partial<RuleOptions>;
  return {
    basic,
    rule: {
      ...DEFAULT_RULE_OPTIONS,
      ...rule,
      restartStrategy: { ...DEFAULT_RULE_OPTIONS.restartStrategy, ...(rule.restartStrategy ?? {}) },
    },
    sink: tree.sink as EddyConfig['sink'],
    source,
    store: tree.store as EddyConfig['store'],
    portable: tree.portable as EddyConfig['portable'],
    raw: tree,
    warnings: settingWarnings(own, env),
  };
}
