/**
 * What the data import and export (`bundle/service.ts`) needs of the services owning the data, and what it gives
 * back: the ports, the dependencies, the control and result of one import.
 */
import type { Logger } from 'pino';
import type { FileRoots } from '../core/files.js';
import type { KVStore } from '../store/kv.js';
import type { Catalog } from '../catalog/catalog.js';
import type { UploadsService } from '../catalog/uploads.js';
import type { SchemaRegistry } from '../catalog/schemas.js';
import type { RuleDef, RuleOptions } from '../contracts/index.js';
import type { ConfKind, ConfMap } from '../connectors/confkeys.js';
import type { BundleKey, StatusDoc } from './bundle.js';

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

/** The config-key sections of a bundle and the kind of config key each holds. */
export const CONFIG_SECTIONS: ReadonlyArray<[BundleKey, ConfKind]> = [
  ['sourceConfig', 'sources'],
  ['sinkConfig', 'sinks'],
  ['connectionConfig', 'connections'],
];
