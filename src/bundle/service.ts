/**
 * Data import and export (docs/rest-api.md §7, docs/runtime.md §9).
 *
 * Export gathers every section from the services that own the data. Import applies a bundle through those same
 * services, in docs/runtime.md §9's order (uploads, schemas, portable plugins, external services, JavaScript functions,
 * config keys, streams, tables, rules):
 * - a **full** import is all or nothing: the whole bundle is parsed and every item checked before anything changes
 *   (docs/compatibility.md D4); then the old data is reset and the bundle applied; if any item fails (a download, a rule that cannot be
 *   planned...) or the import is cancelled, the previous state is put back from a snapshot taken just before;
 * - a **partial** import merges item by item (existing streams, tables and rules are replaced, schemas, plugins and
 *   services that exist are kept) and reports the items that failed; the others stay applied.
 * Every failing item is named in the status document. So are, without failing the import, the extension items Eddy
 * cannot install (native plugins, custom and static schemas, and the plugin or service archives it cannot fetch or
 * has no manager for: an eKuiper bundle that lists them still imports) and the rules that need what is missing (a
 * plugin's function or sink, a graph rule), which are kept stopped as eKuiper keeps a rule it cannot plan. A rule
 * reading a stream the bundle does not define makes a malformed bundle.
 * Imports run one at a time.
 */
import type { FileRoots } from '../core/files.js';
import { INITIALIZED_MARKER } from '../config/index.js';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { KVStore } from '../store/kv.js';
import type { Catalog } from '../catalog/catalog.js';
import type { StreamDef, StreamKind } from '../catalog/types.js';
import type { RuleDef, RuleOptions } from '../contracts/index.js';
import type { ConfKind, ConfMap } from '../connectors/confkeys.js';
import { RuleDefError, decodeRuleText, parseRule } from '../rules/definition.js';
import { sqlStatementKind } from '../rules/engine.js';
import {
  BUNDLE_KEYS,
  emptyBundle,
  emptyStatus,
  hasErrors,
  parseSections,
  RULESET_KEYS,
  type Ruleset,
  type Bundle,
  type BundleKey,
  type StatusDoc,
} from './bundle.js';
import { parseUploadRecord, type UploadsService } from '../catalog/uploads.js';
import { goJsonSyntaxError } from '../core/gojson.js';
import {
  isSchemaType,
  parseSchemaRecord,
  validateSchemaRecord,
  type SchemaRecord,
  type SchemaRegistry,
} from '../catalog/schemas.js';

/** What import/export needs of the rules service. */
export interface RulesPort {
  ids(): string[];
  has(id: string): boolean;
  get(id: string): RuleDef | undefined;
  exportText(id: string): string | undefined;
  rulesUsing(name: string): string[];
  create(text: string, opts?: { keepUnplannable?: boolean; defaultId?: string }): Promise<string>;
  update(id: string, text: string): Promise<void>;
  delete(id: string): Promise<void>;
}

/** What import/export needs of the config-key service (user layer only). */
export interface ConfKeysPort {
  userTypes(kind: ConfKind): string[];
  user(kind: ConfKind, type: string): ConfMap;
  setUser(kind: ConfKind, type: string, map: ConfMap, merge?: boolean): Promise<void>;
  clearUser(kind: ConfKind): Promise<void>;
}

/** What import/export needs of the JavaScript functions service (`scripts` items: JSON text of the function). */
export interface ScriptsPort {
  records(): Record<string, string>;
  /** throws what is wrong with an item, changing nothing */
  check(key: string, text: string): void;
  upsertText(key: string, text: string): Promise<void>;
  removeAll(): Promise<void>;
}

/**
 * What import/export needs of an extension manager whose items a bundle carries (external services, portable
 * plugins): the install records `{name, file, ...}` by item name, installing one item (an existing one is kept), and
 * removing everything (full import).
 */
export interface InstallerPort {
  installRecords(): Record<string, string>;
  importRecord(name: string, text: string): Promise<void>;
  removeAll(): Promise<void>;
  /** the SQL function `name` as the manager describes it (throws when it has none); names its item in `serviceName` */
  describeFunction?(name: string): Record<string, string>;
  /** the item providing a source or sink type (throws when none does) */
  specOf?(kind: 'source' | 'sink', type: string): { name: string };
}

/** Names written as calls in a rule's SQL (a superset of the functions it calls: only known ones count). */
function calledNames(sql: string): Set<string> {
  const out = new Set<string>();
  for (const m of sql.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*\(/g)) out.add(m[1]);
  return out;
}

/** The bundle sections an {@link InstallerPort} can serve, in the order eKuiper installs them. */
export const EXTENSION_SECTIONS = ['nativePlugins', 'portablePlugins', 'Service'] as const;
export type ExtensionSection = (typeof EXTENSION_SECTIONS)[number];

export type CatalogPort = Pick<Catalog, 'get' | 'list' | 'validate' | 'create' | 'replace' | 'clear' | 'statements'>;

export interface BundleDeps {
  store: KVStore;
  logger: Logger;
  catalog: CatalogPort;
  rules: RulesPort;
  confKeys: ConfKeysPort;
  uploads: UploadsService;
  schemas: SchemaRegistry;
  scripts: ScriptsPort;
  /** the server's rule option defaults, to check rule items before a full import */
  ruleDefaults: RuleOptions;
  timezone?: string;
  /** managers of the extension sections Eddy can install; the items of the others are reported as not installed */
  extensions?: Partial<Record<ExtensionSection, InstallerPort>>;
  /**
   * Whether Eddy itself has the source type, sink type or SQL function that a native plugin item (`<kind>_<name>`)
   * would add: eKuiper ships some of its standard connectors (random, sql, influx...) as native plugins
   */
  builtIn?(kind: 'sources' | 'sinks' | 'functions', name: string): boolean;
  /** validation of config-key properties per kind and type, when the connector offers one */
  propsValidator?(kind: ConfKind, type: string): ((props: Record<string, unknown>) => void) | undefined;
  /** folders an import's `file://` URL may point into (all when absent) */
  fileRoots?: FileRoots;
  /** custom schemas: format plugins (docs/plugins.md §1), exported as `custom_<name>` Schema items */
  customSchemas?: CustomSchemaPort;
}

/** What import/export needs of the custom schemas (the native plugin manager). */
export interface CustomSchemaPort {
  /** `custom_<name>` → the schema record text */
  records(): Record<string, string>;
  /** installs a format plugin archive; an existing schema of that name is kept */
  install(name: string, soFile: string): Promise<void>;
}

/** Cooperative control of one import: cancellation between items. */
export interface ImportControl {
  readonly cancelled: boolean;
  /** told after each item is applied: items done so far and the bundle's item count (progress bars) */
  progress?(done: number, total: number): void;
}

export class ImportCancelled extends Error {
  constructor() {
    super('the import was cancelled');
  }
}

export interface ImportResult {
  /** per-item errors and notes (items not installed, rules kept stopped); all empty on a complete success */
  status: StatusDoc;
  /** some item failed: a full import was refused or rolled back, a partial import kept the other items */
  failed: boolean;
  /** a full import that failed was rolled back (or a check failed before anything changed) */
  rolledBack: boolean;
  cancelled: boolean;
}

const STATUS_NS = 'importStatus';
const STATUS_KEY = 'last';
/** Present while a full import runs; left behind only when the process died during one. */
const RUNNING_KEY = 'running';

const CONFIG_SECTIONS: ReadonlyArray<[BundleKey, ConfKind]> = [
  ['sourceConfig', 'sources'],
  ['sinkConfig', 'sinks'],
  ['connectionConfig', 'connections'],
];

/** Sections whose items Eddy has nothing to install with, and why. */
const UNSUPPORTED: ReadonlyArray<[BundleKey, string]> = [
  ['nativePlugins', 'native plugins are not supported by Eddy'],
  ['portablePlugins', 'portable plugins are not supported by Eddy'],
  ['Service', 'external services are not supported by Eddy'],
];

/**
 * Planning errors of a rule that is well formed but needs something Eddy does not provide; such a rule is imported
 * stopped (`fail to create the topo`), as eKuiper imports a rule whose plugin is not installed yet.
 */
const MISSING_EXTENSION = [
  /^function \S+ not found$/,
  /^sink \S+ is not defined$/,
  /^parse \w+ \S+ with .* error: function \S+ not found$/,
];

function needsMissingExtension(err: unknown): boolean {
  const text = err instanceof Error ? err.message.replace(/^Update rule error: /, '') : '';
  return MISSING_EXTENSION.some((re) => re.test(text));
}

/**
 * Splits off the items Eddy cannot install (the sections above, and schemas of eKuiper's `custom` type, which are Go
 * plugins): `notes` names each with why (reported, never fatal), `installable` is the rest of the bundle.
 */
function notInstalled(
  bundle: Bundle,
  deps: Pick<BundleDeps, 'extensions' | 'builtIn' | 'customSchemas'>,
): { notes: StatusDoc; installable: Bundle } {
  const notes = emptyStatus();
  const installable: Bundle = { ...bundle, Schema: {} };
  const installers = deps.extensions ?? {};
  for (const [key, why] of UNSUPPORTED) {
    if (key in installers) continue;
    for (const name of Object.keys(bundle[key])) {
      const m = key === 'nativePlugins' ? /^(sources|sinks|functions)_(.+)$/.exec(name) : null;
      if (m && deps.builtIn?.(m[1] as 'sources' | 'sinks' | 'functions', m[2])) continue;
      notes[key][name] = `${why}: ${name} was not installed`;
    }
    installable[key] = {};
  }
  for (const [name, text] of Object.entries(bundle.Schema)) {
    let rec: SchemaRecord | undefined;
    try {
      rec = parseSchemaRecord(name, text);
    } catch {
      // a broken record is reported by the checks
    }
    if (rec?.type === 'custom') {
      // a format plugin archive installs; eKuiper's Go codec (a .so) cannot be loaded
      if (deps.customSchemas && rec.soFile.endsWith('.zip')) installable.Schema[name] = text;
      else
        notes.Schema[name] =
          `custom schemas are format plugin archives (.zip); a Go codec plugin cannot be loaded: ${name} was not installed`;
    } else if (rec?.soFile) {
      // a static codec (Go plugin) beside the proto: the proto alone serves Eddy
      if (rec.content === '' && rec.file === '') {
        notes.Schema[name] = `static schema plugins (soFile) are not supported by Eddy: ${name} was not installed`;
      } else {
        installable.Schema[name] = JSON.stringify({ ...rec, soFile: '' });
        notes.Schema[name] =
          `static schema plugins (soFile) are not supported by Eddy: ${name} was installed from its proto only`;
      }
    } else installable.Schema[name] = text;
  }
  return { notes, installable };
}

/** `a` with the entries of `b` added (a is changed). */
function mergeInto(a: StatusDoc, b: StatusDoc): StatusDoc {
  for (const k of BUNDLE_KEYS) Object.assign(a[k], b[k]);
  return a;
}

const NO_CONTROL: ImportControl = { cancelled: false };

function message(err: unknown): string {
  return err instanceof RuleDefError ? err.detail : err instanceof Error ? err.message : String(err);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A config section item: JSON text of `{confKey: {props}}`. */
function parseConfMap(text: string): ConfMap {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`invalid config: ${goJsonSyntaxError(text) ?? (e as Error).message}`);
  }
  if (!isObject(v)) throw new Error('invalid config: expect a JSON object of config keys');
  const out: ConfMap = {};
  for (const [k, props] of Object.entries(v)) {
    if (!isObject(props)) throw new Error(`invalid config key ${k}: expect a JSON object of properties`);
    out[k] = props;
  }
  return out;
}

export class BundleService {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: BundleDeps) {}

  /** folders an import's `file://` URL may point into */
  get fileRoots(): FileRoots | undefined {
    return this.deps.fileRoots;
  }

  /** Holds every import back until `p` settles (the rules being restored at start). */
  waitFor(p: Promise<unknown>): void {
    const next = this.queue.then(() => p);
    this.queue = next.catch(() => undefined);
  }

  // ------------------------------------------------------------------------------------------ export

  /** Every section (docs/rest-api.md §7.1), all twelve keys present. */
  async exportAll(): Promise<Bundle> {
    const { catalog, rules, confKeys } = this.deps;
    const b = emptyBundle();
    b.streams = catalog.statements('stream');
    b.tables = catalog.statements('table');
    for (const id of rules.ids()) b.rules[id] = rules.exportText(id) ?? '';
    for (const [key, kind] of CONFIG_SECTIONS) {
      for (const type of confKeys.userTypes(kind)) {
        const map = confKeys.user(kind, type);
        if (Object.keys(map).length > 0) b[key][type] = JSON.stringify(map);
      }
    }
    for (const key of EXTENSION_SECTIONS) {
      const installer = this.deps.extensions?.[key];
      if (installer) b[key] = installer.installRecords();
    }
    b.Schema = { ...(await this.deps.schemas.records()), ...this.deps.customSchemas?.records() };
    b.uploads = await this.deps.uploads.records();
    b.scripts = this.deps.scripts.records();
    return b;
  }

  /**
   * What rules `ids` need (docs/rest-api.md §7.4): those rules (an unknown id exports as ""), the streams and tables they
   * read, the config keys named by those streams' CONF_KEY (of their effective TYPE) and the actions' resourceId,
   * every connection config, the schemas named by SCHEMAID / sink schemaId, and every upload.
   */
  async exportRules(ids: readonly string[]): Promise<Bundle> {
    const { catalog, rules, confKeys } = this.deps;
    const b = emptyBundle();
    const wanted = new Set<string>();
    for (const id of ids) {
      const text = rules.exportText(id);
      b.rules[id] = text ?? '';
      if (text !== undefined) wanted.add(id);
    }
    const defs: StreamDef[] = [...catalog.list('stream'), ...catalog.list('table')].filter((d) =>
      rules.rulesUsing(d.name).some((r) => wanted.has(r)),
    );
    const sourceKeys = new Map<string, Set<string>>();
    const sinkKeys = new Map<string, Set<string>>();
    const schemaIds = new Set<string>();
    const add = (m: Map<string, Set<string>>, type: string, key: string) =>
      m.set(type, (m.get(type) ?? new Set()).add(key));
    for (const d of defs) {
      (d.kind === 'stream' ? b.streams : b.tables)[d.name] = d.sql;
      add(sourceKeys, (d.options.TYPE || 'mqtt').toLowerCase(), d.options.CONF_KEY || 'default');
      if (d.options.SCHEMAID)
        schemaIds.add(`${(d.options.FORMAT ?? 'json').toLowerCase()}_${d.options.SCHEMAID.split('.')[0]}`);
    }
    for (const id of wanted) {
      for (const action of rules.get(id)?.actions ?? []) {
        for (const [type, props] of Object.entries(action)) {
          if (!isObject(props)) continue;
          const resourceId = props.resourceId;
          if (typeof resourceId === 'string' && resourceId !== '') add(sinkKeys, type, resourceId);
          const format = typeof props.format === 'string' ? props.format.toLowerCase() : 'json';
          if (typeof props.schemaId === 'string' && props.schemaId !== '' && format !== 'json') {
            schemaIds.add(`${format}_${props.schemaId.split('.')[0]}`);
          }
        }
      }
    }
    const pickKeys = (kind: ConfKind, keys: Map<string, Set<string>>, into: Record<string, string>) => {
      for (const [type, names] of keys) {
        const user = confKeys.user(kind, type);
        const picked: ConfMap = {};
        for (const n of names) {
          const hit = n in user ? n : n.toLowerCase() in user ? n.toLowerCase() : undefined;
          if (hit !== undefined) picked[hit] = user[hit];
        }
        if (Object.keys(picked).length > 0) into[type] = JSON.stringify(picked);
      }
    };
    pickKeys('sources', sourceKeys, b.sourceConfig);
    pickKeys('sinks', sinkKeys, b.sinkConfig);
    for (const type of confKeys.userTypes('connections')) {
      const map = confKeys.user('connections', type);
      if (Object.keys(map).length > 0) b.connectionConfig[type] = JSON.stringify(map);
    }
    // the extension items providing the source types of those streams, the sink types and the functions the rules call
    const sourceTypes = new Set(
      defs.flatMap((d) => [d.options.TYPE || 'mqtt', (d.options.TYPE || 'mqtt').toLowerCase()]),
    );
    const sinkTypes = new Set(
      [...wanted].flatMap((id) => (rules.get(id)?.actions ?? []).flatMap((a) => Object.keys(a))),
    );
    for (const key of EXTENSION_SECTIONS) {
      const installer = this.deps.extensions?.[key];
      if (!installer) continue;
      const records = installer.installRecords();
      const take = (owner: string | undefined) => {
        if (owner !== undefined && owner in records) b[key][owner] = records[owner];
      };
      const ownerOf = (kind: 'source' | 'sink', type: string) => {
        try {
          return installer.specOf?.(kind, type).name;
        } catch {
          return undefined;
        }
      };
      for (const t of sourceTypes) take(ownerOf('source', t));
      for (const t of sinkTypes) take(ownerOf('sink', t));
      if (!installer.describeFunction) continue;
      for (const id of wanted) {
        for (const fn of calledNames(rules.get(id)?.sql ?? '')) {
          let owner: string | undefined;
          try {
            const d = installer.describeFunction(fn);
            owner = d.serviceName ?? d.ServiceName;
          } catch {
            continue;
          }
          take(owner);
        }
      }
    }
    const schemaRecords = { ...(await this.deps.schemas.records()), ...this.deps.customSchemas?.records() };
    for (const key of schemaIds) if (key in schemaRecords) b.Schema[key] = schemaRecords[key];
    b.uploads = await this.deps.uploads.records();
    return b;
  }

  // ------------------------------------------------------------------------------------------ status

  /**
   * The status document of the last import (all empty before the first). After a full import cut short by the
   * process dying, it also has `interrupted`: the text saying so (the data is the data from before that import).
   */
  async lastStatus(): Promise<StatusDoc & { interrupted?: string }> {
    const text = await this.deps.store.get(STATUS_NS, STATUS_KEY);
    const doc: StatusDoc & { interrupted?: string } = emptyStatus();
    if (text === undefined) return doc;
    try {
      const saved = JSON.parse(text) as Partial<StatusDoc> & { interrupted?: unknown };
      for (const k of BUNDLE_KEYS) if (isObject(saved[k])) doc[k] = saved[k] as Record<string, string>;
      if (typeof saved.interrupted === 'string') doc.interrupted = saved.interrupted;
    } catch {
      // a damaged record reads as "no errors"
    }
    return doc;
  }

  /**
   * At start: a full import that was running when the process died left its marker (its writes were rolled back
   * with its transaction); the import status then says so.
   */
  async recoverInterruptedImport(): Promise<void> {
    const marker = await this.deps.store.get(STATUS_NS, RUNNING_KEY);
    if (marker === undefined) return;
    let startedAt = '';
    try {
      startedAt = String((JSON.parse(marker) as { startedAt?: unknown }).startedAt ?? '');
    } catch {
      // an unreadable marker still means an interrupted import
    }
    const interrupted = `the full import started at ${startedAt || 'an unknown time'} was interrupted: the server stopped before it completed; the data is as it was before that import`;
    this.deps.logger.warn(interrupted);
    await this.deps.store.set(STATUS_NS, STATUS_KEY, JSON.stringify({ ...emptyStatus(), interrupted }));
    await this.deps.store.delete(STATUS_NS, RUNNING_KEY);
  }

  // ------------------------------------------------------------------------------------------ ruleset

  /** `POST /ruleset/export`: every stream, table and rule. */
  exportRuleset(): Ruleset {
    const { catalog, rules } = this.deps;
    const out: Ruleset = { streams: catalog.statements('stream'), tables: catalog.statements('table'), rules: {} };
    for (const id of rules.ids()) out.rules[id] = rules.exportText(id) ?? '';
    return out;
  }

  /**
   * `POST /ruleset/import` (docs/rest-api.md §8.1, docs/compatibility.md D24): creates the streams, tables and rules that do not exist yet
   * (only CREATE statements of the section's kind are run); rules are kept even when they cannot be planned (stopped,
   * `fail to create the topo`). Failures are logged, not reported. Resolves with the counts of items created.
   */
  importRuleset(rs: Ruleset): Promise<{ streams: number; tables: number; rules: number }> {
    const run = async () => {
      const { catalog, rules, logger } = this.deps;
      const counts = { streams: 0, tables: 0, rules: 0 };
      for (const kind of ['stream', 'table'] as const) {
        const key = kind === 'stream' ? 'streams' : 'tables';
        for (const [name, sql] of Object.entries(rs[key])) {
          try {
            await catalog.create(catalog.validate(sql, kind));
            counts[key]++;
          } catch (err) {
            logger.info({ err: message(err) }, 'ruleset import: %s %s not created', kind, name);
          }
        }
      }
      for (const [key, text] of Object.entries(rs.rules)) {
        try {
          this.checkRule(key, text);
          if (rules.has(key)) throw new Error(`rule ${key} already exists`);
          await rules.create(text, { defaultId: key, keepUnplannable: true });
          counts.rules++;
        } catch (err) {
          logger.info({ err: message(err) }, 'ruleset import: rule %s not created', key);
        }
      }
      return counts;
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  /**
   * The initial ruleset (docs/runtime.md §9.6): at the first start (no `<data>/initialized` marker), `<data>/init.json` is
   * imported when present; the marker is created in any case, even when the import fails or there is no file (as
   * eKuiper does: an init.json added after the first start is never read).
   */
  async importInitialRuleset(dataDir: string): Promise<void> {
    const file = join(dataDir, 'init.json');
    const marker = join(dataDir, INITIALIZED_MARKER);
    if (existsSync(marker)) return;
    if (!existsSync(file)) {
      this.deps.logger.info('no initial ruleset %s', file);
      writeFileSync(marker, '');
      return;
    }
    try {
      const rs = parseSections(readFileSync(file, 'utf8'), RULESET_KEYS, 'Ruleset');
      const n = await this.importRuleset(rs);
      this.deps.logger.info(
        'initial ruleset imported: %d streams, %d tables and %d rules',
        n.streams,
        n.tables,
        n.rules,
      );
    } catch (err) {
      this.deps.logger.error({ err: message(err) }, 'cannot import the initial ruleset %s', file);
    }
    writeFileSync(marker, '');
  }

  // ------------------------------------------------------------------------------------------ import

  /** Imports a parsed bundle; resolves with the per-item result (never rejects for item failures). */
  import(bundle: Bundle, partial: boolean, ctl: ImportControl = NO_CONTROL): Promise<ImportResult> {
    const run = () => (partial ? this.importPartial(bundle, ctl) : this.importFull(bundle, ctl));
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p.then(async (res) => {
      await this.deps.store.set(STATUS_NS, STATUS_KEY, JSON.stringify(res.status));
      return res;
    });
  }

  /** Item checks that need no change of state: every problem a full import can know before it starts. */
  check(bundle: Bundle): StatusDoc {
    const errs = emptyStatus();
    for (const [name, text] of Object.entries(bundle.uploads)) {
      try {
        parseUploadRecord(name, text);
      } catch (e) {
        errs.uploads[name] = message(e);
      }
    }
    for (const [name, text] of Object.entries(bundle.Schema)) {
      try {
        const rec = parseSchemaRecord(name, text);
        if (rec.type === 'custom' && this.deps.customSchemas) continue;
        if (!isSchemaType(rec.type)) throw new Error(`schema type ${rec.type} is not supported`);
        validateSchemaRecord(rec);
      } catch (e) {
        errs.Schema[name] = message(e);
      }
    }
    for (const [name, text] of Object.entries(bundle.scripts)) {
      try {
        this.deps.scripts.check(name, text);
      } catch (e) {
        errs.scripts[name] = message(e);
      }
    }
    for (const [key] of CONFIG_SECTIONS) {
      for (const [type, text] of Object.entries(bundle[key])) {
        try {
          parseConfMap(text);
        } catch (e) {
          errs[key][type] = message(e);
        }
      }
    }
    const names = new Map<string, StreamKind>();
    for (const kind of ['stream', 'table'] as const) {
      const key = kind === 'stream' ? 'streams' : 'tables';
      for (const [name, sql] of Object.entries(bundle[key])) {
        try {
          const def = this.deps.catalog.validate(sql, kind);
          if (names.has(def.name)) throw new Error(`Create ${kind} fails: Item ${def.name} already exists.`);
          names.set(def.name, kind);
        } catch (e) {
          errs[key][name] = message(e);
        }
      }
    }
    for (const [key, text] of Object.entries(bundle.rules)) {
      try {
        this.checkRule(key, text);
      } catch (e) {
        errs.rules[key] = message(e);
      }
    }
    return errs;
  }

  /** A rule item's definition checks; the map key is the id when the JSON has none, and must match one it has. */
  private checkRule(key: string, text: string): void {
    const body = decodeRuleText(text);
    const id = body.id;
    if (typeof id === 'string' && id !== '' && id !== key)
      throw new RuleDefError('RuleId is not consistent with rule id.');
    parseRule(body, text, {
      defaults: this.deps.ruleDefaults,
      sql: { statementKind: sqlStatementKind },
      defaultId: key,
      timezone: this.deps.timezone,
    });
  }

  private async importFull(all: Bundle, ctl: ImportControl): Promise<ImportResult> {
    const { notes, installable: bundle } = notInstalled(all, this.deps);
    const checked = this.check(bundle);
    if (hasErrors(checked))
      return { status: mergeInto(notes, checked), failed: true, rolledBack: true, cancelled: false };
    if (ctl.cancelled) return { status: notes, failed: false, rolledBack: true, cancelled: true };
    const store = this.deps.store;
    if (!store.transaction) return this.replaceAll(bundle, ctl, notes);
    // crash atomicity: every store write of the import is one transaction, so a process killed at any moment leaves
    // the old data or the new, never a mix. The marker, written before it and deleted inside it, survives only a crash.
    await store.set(STATUS_NS, RUNNING_KEY, JSON.stringify({ startedAt: new Date().toISOString() }));
    try {
      return await store.transaction(async () => {
        const result = await this.replaceAll(bundle, ctl, notes);
        await store.delete(STATUS_NS, RUNNING_KEY);
        return result;
      });
    } finally {
      // the transaction failed and was rolled back with its deletion of the marker: no crash happened
      await store.delete(STATUS_NS, RUNNING_KEY);
    }
  }

  /** A full import's changes (reset, then every item), restoring the previous data when an item fails. */
  private async replaceAll(bundle: Bundle, ctl: ImportControl, notes: StatusDoc): Promise<ImportResult> {
    const before = await this.exportAll();
    const schemaSnap = await this.deps.schemas.snapshot();
    const uploadSnap = await this.deps.uploads.snapshot(
      Object.keys(bundle.uploads).map((k) => parseUploadRecord(k, bundle.uploads[k]).name),
    );
    const errs = emptyStatus();
    let cancelled = false;
    let failure: unknown;
    try {
      await this.reset();
      await this.apply(bundle, 'full', errs, ctl, notes);
    } catch (e) {
      if (e instanceof ImportCancelled) cancelled = true;
      else failure = e;
    }
    if (!cancelled && failure === undefined && !hasErrors(errs))
      return { status: notes, failed: false, rolledBack: false, cancelled: false };

    this.deps.logger.warn({ cancelled, errors: errs, err: failure }, 'data import failed; restoring the previous data');
    await this.reset();
    await this.deps.schemas.restore(schemaSnap);
    await this.deps.uploads.restore(uploadSnap);
    const restoreErrs = emptyStatus();
    await this.apply({ ...before, Schema: {}, uploads: {} }, 'restore', restoreErrs, NO_CONTROL);
    if (hasErrors(restoreErrs))
      this.deps.logger.error({ errors: restoreErrs }, 'some previous items could not be restored');
    // an unexpected failure (the store, the file system) is reported as such once the old data is back
    if (failure !== undefined) throw failure;
    return { status: mergeInto(notes, errs), failed: hasErrors(errs), rolledBack: true, cancelled };
  }

  private async importPartial(all: Bundle, ctl: ImportControl): Promise<ImportResult> {
    const errs = emptyStatus();
    const { notes, installable: bundle } = notInstalled(all, this.deps);
    let cancelled = false;
    try {
      await this.apply(bundle, 'partial', errs, ctl, notes);
    } catch (e) {
      if (!(e instanceof ImportCancelled)) throw e;
      cancelled = true;
    }
    return { status: mergeInto(notes, errs), failed: hasErrors(errs), rolledBack: false, cancelled };
  }

  /** Full-import reset (docs/runtime.md §9.2 step 1): rules, streams, tables, recorded schemas, user config keys, upload records. */
  private async reset(): Promise<void> {
    const { rules, catalog, confKeys } = this.deps;
    for (const id of rules.ids()) await rules.delete(id);
    await catalog.clear();
    await this.deps.schemas.removeAll();
    await this.deps.scripts.removeAll();
    for (const key of EXTENSION_SECTIONS) await this.deps.extensions?.[key]?.removeAll();
    for (const [, kind] of CONFIG_SECTIONS) await confKeys.clearUser(kind);
    await this.deps.uploads.clearRecords();
  }

  /**
   * Applies the sections in order, recording each failing item. `restore` re-creates a snapshot: rules that cannot
   * be planned are kept stopped, as they were. Extension items that fail to install are noted in `notes`, never
   * fatal. A rule that needs a missing extension is created stopped and noted there instead of failing: always in a
   * full import (eKuiper keeps the rules it cannot plan), in a partial one when some extension item was not installed
   * (eKuiper would have installed the bundle's plugins before creating its rules).
   */
  private async apply(
    b: Bundle,
    mode: 'full' | 'partial' | 'restore',
    errs: StatusDoc,
    ctl: ImportControl,
    notes: StatusDoc = emptyStatus(),
  ): Promise<void> {
    const { catalog, rules, confKeys } = this.deps;
    let lastYield = Date.now();
    const total =
      [b.uploads, b.Schema, b.scripts, b.streams, b.tables, b.rules].reduce(
        (n, sec) => n + Object.keys(sec).length,
        0,
      ) +
      EXTENSION_SECTIONS.reduce((n, key) => n + (this.deps.extensions?.[key] ? Object.keys(b[key]).length : 0), 0) +
      CONFIG_SECTIONS.reduce((n, [key]) => n + Object.keys(b[key]).length, 0);
    let done = 0;
    const step = async (key: BundleKey, name: string, fn: () => Promise<void>) => {
      // the SQLite store answers synchronously: without a turn of the event loop now and then, a large import would
      // keep the server from answering anything (task status, cancel) until it ends
      if (Date.now() - lastYield >= 5) {
        await new Promise<void>((r) => setImmediate(r));
        lastYield = Date.now();
      }
      if (ctl.cancelled) throw new ImportCancelled();
      try {
        await fn();
      } catch (e) {
        errs[key][name] = message(e);
      }
      ctl.progress?.(++done, total);
    };

    for (const [name, text] of Object.entries(b.uploads)) {
      await step('uploads', name, async () => {
        await this.deps.uploads.install(parseUploadRecord(name, text));
      });
    }
    for (const [name, text] of Object.entries(b.Schema)) {
      await step('Schema', name, async () => {
        const rec = parseSchemaRecord(name, text);
        const custom = this.deps.customSchemas;
        if (rec.type === 'custom' && custom) {
          // as plugin archives: not being able to fetch one does not stop the import
          await custom.install(rec.name, rec.soFile).catch((e: unknown) => (notes.Schema[name] = message(e)));
          return;
        }
        if (!isSchemaType(rec.type)) throw new Error(`schema type ${rec.type} is not supported`);
        if (mode !== 'partial') await this.deps.schemas.upsert(rec.type, rec);
        else if (!this.deps.schemas.exists(rec.type, rec.name)) await this.deps.schemas.create(rec.type, rec);
      });
    }
    for (const key of EXTENSION_SECTIONS) {
      const installer = this.deps.extensions?.[key];
      if (!installer) continue;
      for (const [name, text] of Object.entries(b[key])) {
        await step(key, name, async () => {
          try {
            await installer.importRecord(name, text);
          } catch (e) {
            // eKuiper bundles name plugin and service archives at the site that exported them: not being able to
            // fetch one does not stop the import
            notes[key][name] = message(e);
          }
        });
      }
    }
    for (const [name, text] of Object.entries(b.scripts)) {
      await step('scripts', name, () => this.deps.scripts.upsertText(name, text));
    }
    for (const [key, kind] of CONFIG_SECTIONS) {
      for (const [type, text] of Object.entries(b[key])) {
        await step(key, type, async () => {
          const map = parseConfMap(text);
          const validate = this.deps.propsValidator?.(kind, type);
          if (validate)
            for (const [k, props] of Object.entries(map)) {
              try {
                validate(props);
              } catch (e) {
                throw new Error(`config key ${k}: ${message(e)}`);
              }
            }
          await confKeys.setUser(kind, type, map, mode === 'partial');
        });
      }
    }
    for (const kind of ['stream', 'table'] as const) {
      const key = kind === 'stream' ? 'streams' : 'tables';
      for (const [name, sql] of Object.entries(b[key])) {
        await step(key, name, async () => {
          if (mode === 'partial') await catalog.replace(kind, name, sql);
          else await catalog.create(catalog.validate(sql, kind));
        });
      }
    }
    for (const [key, text] of Object.entries(b.rules)) {
      await step('rules', key, async () => {
        if (mode !== 'restore') this.checkRule(key, text);
        if (mode === 'restore') {
          await rules.create(text, { defaultId: key, keepUnplannable: true });
          return;
        }
        const exists = mode === 'partial' && rules.has(key);
        try {
          if (exists) await rules.update(key, text);
          else await rules.create(text, { defaultId: key });
        } catch (e) {
          const keepStopped =
            mode === 'full' ||
            EXTENSION_SECTIONS.some((k) => Object.keys(notes[k]).length > 0) ||
            Object.keys(notes.nativePlugins).length > 0;
          if (!keepStopped || !needsMissingExtension(e)) throw e;
          // the bundle's definition is what is kept (and exported), stopped until Eddy has what it needs
          if (exists) await rules.delete(key);
          await rules.create(text, { defaultId: key, keepUnplannable: true });
          notes.rules[key] = `${message(e).replace(/^Update rule error: /, '')}: the rule was imported stopped`;
        }
      });
    }
  }
}
