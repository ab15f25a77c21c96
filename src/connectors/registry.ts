/**
 * The connector registry: every source, lookup source, sink, format and shared connection type by name, each from its
 * declaration (declaration.ts). Built-ins are declared at start (builtins.ts) through the same `declare` that plugins
 * use; everything else here — the factories the runtime looks up, the connection checks, the config-key validators,
 * the defaults files, the `/metadata` lists and where a rule may run — reads the declarations.
 */
import type {
  ConnectionCheck,
  ConnectorRegistry,
  FormatFactory,
  LookupConnector,
  Props,
  SinkConnector,
  SourceConnector,
} from '../contracts/index.js';
import type { ConfKeys, ConfKind } from './confkeys.js';
import {
  declarationProblems,
  runsOnWorker,
  type ConnectionDeclaration,
  type ConnectorHost,
  type Declaration,
  type DeclarationKind,
  type FormatDeclaration,
  type LookupDeclaration,
  type SinkDeclaration,
  type SourceDeclaration,
} from './declaration.js';
import { pluginList, sourceAnswer, type PluginInfo, type SinkMeta, type SourceMeta } from './meta.js';

export type CheckKind = 'source' | 'sink' | 'lookup';

/** Validates properties written to a config key (`PUT .../confKeys/...`); throws with a message on failure. */
export type PropsValidator = (props: Props) => void;

/** Where a rule using a connector may run, and why not on a worker. */
export type Placement = { worker: true } | { worker: false; because: string };

export class Registry implements ConnectorRegistry {
  private readonly sources = new Map<string, SourceDeclaration>();
  private readonly lookups = new Map<string, LookupDeclaration>();
  private readonly sinks = new Map<string, SinkDeclaration>();
  private readonly formats = new Map<string, FormatDeclaration>();
  private readonly connections = new Map<string, ConnectionDeclaration>();
  /** factories made once per type: the runtime asks for one per rule instance */
  private readonly factories = new Map<object, () => unknown>();

  constructor(
    private readonly confKeys: ConfKeys,
    private readonly host: ConnectorHost,
  ) {}

  /**
   * Adds (or replaces) a connector, format or connection type. Throws when the declaration lacks a field, so that a
   * plugin's declaration is held to the same shape as a built-in's.
   */
  declare(d: Declaration): void {
    const problems = declarationProblems(d);
    if (problems.length > 0) throw new Error(`invalid connector declaration: ${problems.join('; ')}`);
    switch (d.kind) {
      case 'source':
        this.sources.set(d.type, d);
        break;
      case 'lookup':
        this.lookups.set(d.type, d);
        break;
      case 'sink':
        this.sinks.set(d.type, d);
        break;
      case 'format':
        // format names are case-insensitive (`FORMAT="JSON"`); stored lower-cased
        this.formats.set(d.type.toLowerCase(), d);
        break;
      case 'connection':
        this.connections.set(d.type, d);
        break;
    }
  }

  /** The declaration of a type: a test (or a plugin) may declare it again, changed. */
  declaration<K extends DeclarationKind>(kind: K, type: string): Extract<Declaration, { kind: K }> | undefined {
    const map = {
      source: this.sources,
      lookup: this.lookups,
      sink: this.sinks,
      format: this.formats,
      connection: this.connections,
    }[kind];
    return map.get(kind === 'format' ? type.toLowerCase() : type) as Extract<Declaration, { kind: K }> | undefined;
  }

  /** Every declaration, in the order declared (tests, docs). */
  declarations(): Declaration[] {
    return [
      ...this.sources.values(),
      ...this.lookups.values(),
      ...this.sinks.values(),
      ...this.formats.values(),
      ...this.connections.values(),
    ];
  }

  /**
   * Loads the implementation of a connector or format type (its declaration's `load`) so that its factory may be
   * called: a rule worker does so before it plans a rule using the type. An unknown type has nothing to load (the
   * planner answers that it is not found).
   */
  async prepare(kind: DeclarationKind, type: string): Promise<void> {
    const d = this.declaration(kind, type);
    if (d && 'load' in d && d.load) await d.load();
  }

  /** Loads every declared implementation: the main thread's registry, whose callers create connectors at once. */
  async prepareAll(): Promise<void> {
    await Promise.all(this.declarations().map((d) => ('load' in d && d.load ? d.load() : undefined)));
  }

  private factory<C>(d: { create: (host: ConnectorHost) => C }): () => C {
    let f = this.factories.get(d) as (() => C) | undefined;
    if (!f) {
      f = () => d.create(this.host);
      this.factories.set(d, f);
    }
    return f;
  }

  source(type: string): (() => SourceConnector) | undefined {
    const d = this.sources.get(type);
    if (!d) return undefined;
    const relay = this.host.mainRelay;
    if (d.instancesOnMain !== undefined && relay) return () => relay.source(type, d.create(this.host));
    return this.factory(d);
  }

  lookup(type: string): (() => LookupConnector) | undefined {
    const d = this.lookups.get(type);
    return d && this.factory(d);
  }

  sink(type: string): (() => SinkConnector) | undefined {
    const d = this.sinks.get(type);
    if (!d) return undefined;
    const relay = this.host.mainRelay;
    if (d.instancesOnMain !== undefined && relay) return () => relay.sink(type, d.create(this.host));
    return this.factory(d);
  }

  format(name: string): FormatFactory | undefined {
    return this.formats.get(name.toLowerCase())?.create;
  }

  /** The connection check of `POST /metadata/{sources|sinks|lookups}/connection/{type}`. */
  connectionCheck(kind: CheckKind, type: string): ConnectionCheck | undefined {
    const d =
      kind === 'source' ? this.sources.get(type) : kind === 'lookup' ? this.lookups.get(type) : this.sinks.get(type);
    const check = d?.check;
    if (!d || !check) return undefined;
    return async (props) => {
      await d.load?.();
      return check(props, this.host);
    };
  }

  /** Validation of `PUT /metadata/{sources|sinks|connections}/{type}/confKeys/{key}` bodies. */
  propsValidator(kind: ConfKind, type: string): PropsValidator | undefined {
    const d =
      kind === 'sources'
        ? this.sources.get(type)
        : kind === 'sinks'
          ? this.sinks.get(type)
          : this.connections.get(type);
    const validate = d?.validate;
    return validate ? (props) => validate(props, this.host) : undefined;
  }

  /** The etc file of the type's default config keys, when it declares one. */
  defaultsFile(type: string): string | null | undefined {
    return (this.sources.get(type) ?? this.lookups.get(type))?.defaults;
  }

  /**
   * Whether a rule using this source, lookup, sink or format with `props` may run on a worker thread
   * (docs/runtime.md §1.10); an unknown type cannot run anywhere, so it stays.
   */
  placement(kind: CheckKind | 'format', type: string, props: Props): Placement {
    const d =
      kind === 'format'
        ? this.formats.get(type.toLowerCase())
        : kind === 'source'
          ? this.sources.get(type)
          : kind === 'lookup'
            ? this.lookups.get(type)
            : this.sinks.get(type);
    if (!d) return { worker: false, because: `${kind} ${type} is not known` };
    if (runsOnWorker(d.threads, props)) return { worker: true };
    return { worker: false, because: d.threads.worker === true ? '' : d.threads.because };
  }

  sourceTypes(): string[] {
    return [...new Set([...this.sources.keys(), ...this.lookups.keys()])];
  }

  sinkTypes(): string[] {
    return [...this.sinks.keys()];
  }

  formatNames(): string[] {
    return [...this.formats.keys()];
  }

  sourceProps(type: string, confKey: string | undefined): Props {
    return this.confKeys.sourceProps(type, confKey);
  }

  sinkProps(type: string, resourceId: string | undefined): Props {
    return this.confKeys.sinkProps(type, resourceId);
  }

  // ------------------------------------------------------------------------------ /metadata (docs/rest-api.md §16.13)

  /** The metadata of a source type: the stream source's, else the lookup's. */
  private sourceMetaOf(type: string): SourceMeta | null {
    return this.sources.get(type)?.meta ?? this.lookups.get(type)?.meta ?? null;
  }

  /** `GET /metadata/sources?kind=`: sources with metadata; `scan`/`lookup` narrow it to streams or lookup tables. */
  sourceList(kind: string): PluginInfo[] {
    const out = new Map<string, SourceMeta>();
    for (const type of this.sourceTypes()) {
      const meta = this.sourceMetaOf(type);
      if (!meta) continue;
      const stream = this.sources.has(type);
      const lookup = this.lookups.has(type);
      if (kind === 'lookup' ? lookup : kind === 'scan' ? stream : stream || lookup) out.set(type, meta);
    }
    return pluginList(out);
  }

  /** `GET /metadata/sources/{type}` */
  sourceMeta(type: string): SourceMeta | undefined {
    const m = this.sourceMetaOf(type);
    return m ? sourceAnswer(m) : undefined;
  }

  /** `GET /metadata/sinks` */
  sinkList(): PluginInfo[] {
    return pluginList(
      [...this.sinks.values()].flatMap((d) => (d.meta ? [[d.type, d.meta] as [string, SinkMeta]] : [])),
    );
  }

  /** `GET /metadata/sinks/{type}` */
  sinkMeta(type: string): SinkMeta | undefined {
    return this.sinks.get(type)?.meta ?? undefined;
  }

  /** `GET /metadata/connections` */
  connectionList(): PluginInfo[] {
    return pluginList([...this.connections.values()].map((d) => [d.type, d.meta] as [string, SourceMeta]));
  }

  /** `GET /metadata/connections/{type}` */
  connectionMeta(type: string): SourceMeta | undefined {
    return this.connections.get(type)?.meta;
  }
}
