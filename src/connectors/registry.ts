/**
 * The connector registry: every source, lookup source, sink, format and connection check by name. Built-ins are
 * registered at start through the same `register*` calls that plugins and other modules use.
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

export type CheckKind = 'source' | 'sink' | 'lookup';

/** Validates properties written to a config key (`PUT .../confKeys/...`); throws with a message on failure. */
export type PropsValidator = (props: Props) => void;

export class Registry implements ConnectorRegistry {
  private readonly sources = new Map<string, () => SourceConnector>();
  private readonly lookups = new Map<string, () => LookupConnector>();
  private readonly sinks = new Map<string, () => SinkConnector>();
  private readonly formats = new Map<string, FormatFactory>();
  private readonly checks = new Map<string, ConnectionCheck>();
  private readonly validators = new Map<string, PropsValidator>();

  constructor(private readonly confKeys: ConfKeys) {}

  registerSource(type: string, factory: () => SourceConnector): void {
    this.sources.set(type, factory);
  }

  registerLookup(type: string, factory: () => LookupConnector): void {
    this.lookups.set(type, factory);
  }

  registerSink(type: string, factory: () => SinkConnector): void {
    this.sinks.set(type, factory);
  }

  /** Format names are case-insensitive (`FORMAT="JSON"`); stored lower-cased. */
  registerFormat(name: string, factory: FormatFactory): void {
    this.formats.set(name.toLowerCase(), factory);
  }

  /** The connection check of `POST /metadata/{sources|sinks|lookups}/connection/{type}`. */
  registerConnectionCheck(kind: CheckKind, type: string, check: ConnectionCheck): void {
    this.checks.set(`${kind}/${type}`, check);
  }

  /** Validation of `PUT /metadata/{sources|sinks|connections}/{type}/confKeys/{key}` bodies. */
  registerPropsValidator(kind: ConfKind, type: string, validate: PropsValidator): void {
    this.validators.set(`${kind}/${type}`, validate);
  }

  source(type: string): (() => SourceConnector) | undefined {
    return this.sources.get(type);
  }

  lookup(type: string): (() => LookupConnector) | undefined {
    return this.lookups.get(type);
  }

  sink(type: string): (() => SinkConnector) | undefined {
    return this.sinks.get(type);
  }

  format(name: string): FormatFactory | undefined {
    return this.formats.get(name.toLowerCase());
  }

  connectionCheck(kind: CheckKind, type: string): ConnectionCheck | undefined {
    return this.checks.get(`${kind}/${type}`);
  }

  propsValidator(kind: ConfKind, type: string): PropsValidator | undefined {
    return this.validators.get(`${kind}/${type}`);
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
}
