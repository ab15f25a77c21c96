/**
 * `eddy/plugin`: the contract between Eddy and a native plugin (an ES module installed with
 * `POST /plugins/sources|sinks|functions` or `POST /schemas/custom`). Version 1; docs/plugins.md is the guide.
 *
 * Values a plugin sees are plain JSON values: numbers (SQL ints and floats alike), strings, booleans, null, arrays
 * and objects. Numbers a plugin hands back that are whole numbers become SQL ints when they came from a source or a
 * format; a function's whole-number result is an int when every numeric argument was an int.
 */

/** The contract version this package describes; a manifest's `apiVersion` must have the same major number. */
export declare const PLUGIN_API_VERSION: string;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type Row = { [key: string]: JsonValue };
/** Properties of a stream's config key or a rule action, as configured (yaml or JSON values). */
export type Props = { [key: string]: unknown };

/** What every plugin instance can reach. */
export interface PluginContext {
  /** the rule running the instance (`$shared` for a shared stream's source) */
  readonly ruleId: string;
  /** the home's data folder, absolute */
  readonly dataDir: string;
  readonly logger: {
    info(msg: string): void;
    warn(msg: string): void;
    error(msg: string): void;
    debug(msg: string): void;
  };
}

export interface SourceContext extends PluginContext {
  /**
   * Hands rows to the rule: an object or an array of objects (already decoded), or bytes / text to be decoded with
   * the stream's FORMAT. `meta` is what `meta(key)` reads.
   */
  emit(data: Row | Row[] | Uint8Array | string, meta?: Row): void;
  /** Reports a failure the rule should see (its status shows it; the rule restarts by its strategy). */
  error(err: Error | string): void;
  /** A bounded source says it has delivered everything. */
  end(): void;
}

/** A stream source. One instance per rule using the stream (or per shared stream). */
export interface SourcePlugin {
  /** Checks and keeps the properties (the config key's, with `datasource`); throw to refuse them. */
  configure(datasource: string, props: Props): void;
  /** Starts delivering through `ctx.emit`. */
  open(ctx: SourceContext): void | Promise<void>;
  close(ctx: PluginContext): void | Promise<void>;
  /** Optional: where the source is, saved in checkpoints at qos ≥ 1. */
  offset?(): Row;
  /** Optional: resume from a saved offset (called after configure, before open). */
  rewind?(offset: Row): void;
}

/** A lookup table (`CREATE TABLE … KIND="lookup"`). */
export interface LookupPlugin {
  configure(datasource: string, props: Props): void;
  open(ctx: PluginContext): void | Promise<void>;
  /** The rows whose `keys[i]` equals `values[i]` for every i. */
  lookup(fields: readonly string[], keys: readonly string[], values: readonly JsonValue[]): Row[] | Promise<Row[]>;
  close(ctx: PluginContext): void | Promise<void>;
}

/** A rule action. */
export interface SinkPlugin {
  configure(props: Props): void;
  open(ctx: PluginContext): void | Promise<void>;
  /**
   * One send: `rows` are the rows of one trigger (one row with `sendSingle`), `bytes` the encoded payload (the
   * `format` or `dataTemplate` of the action). A rejection is an exception of the sink node.
   */
  collect(ctx: PluginContext, rows: Row[], bytes: Uint8Array): void | Promise<void>;
  close(ctx: PluginContext): void | Promise<void>;
}

/** UI metadata of `GET /metadata/sources|sinks/{type}` (eKuiper's shape); usually given as `<name>.json`. */
export interface ConnectorMeta {
  about?: { trial?: boolean; author?: Row; helpUrl?: Row; description?: Row };
  libs?: string[];
  properties?: Row[] | Row;
  node?: Row;
}

/** How a connector runs. */
export interface ConnectorOptions {
  /**
   * Set when a rule using the connector must stay on the main thread, saying why. By default the module is loaded
   * on every rule worker too, and rules run where they are placed.
   */
  mainThreadOnly?: string;
  /** `POST /metadata/{sources|sinks}/connection/{type}`: reject with why the connection fails. */
  check?(props: Props): Promise<void>;
  /** `PUT /metadata/{sources|sinks}/{type}/confKeys/{key}`: throw with what is wrong. */
  validate?(props: Props): void;
}

/** The export of a source plugin module `Name.mjs` (the plugin `name`): a factory or a declaration. */
export type SourceExport =
  | (() => SourcePlugin)
  | (ConnectorOptions & { source: () => SourcePlugin; lookup?: () => LookupPlugin; version?: string });
export type SinkExport = (() => SinkPlugin) | (ConnectorOptions & { sink: () => SinkPlugin; version?: string });

/** How an argument is written in the SQL, for `validate`. */
export interface ArgInfo {
  readonly kind: 'int' | 'float' | 'string' | 'bool' | 'boolExpr' | 'unit' | 'field' | 'wildcard' | 'other';
  /** the value of a literal argument */
  readonly literal?: JsonValue;
  /** the text of a column reference */
  readonly name?: string;
}

/** One SQL function. */
export interface FunctionPlugin {
  /** Checked when a rule is created: a text says what is wrong with the arguments. */
  validate?(args: readonly ArgInfo[]): string | undefined;
  /**
   * One call: the argument values, or for an aggregate the values of each argument over the group's rows
   * (`args[i]` is then an array). Throw to fail the call (an exception of the node). `args` is valid during the call
   * only: copy what you keep.
   */
  exec(args: JsonValue[], ctx: { ruleId: string }): JsonValue | Promise<JsonValue>;
  /** An aggregate function (GROUP BY, windows). */
  aggregate?: boolean;
  /** `exec` returns a promise: the call runs in an asynchronous stage with this time limit (ms). */
  async?: { timeoutMs: number };
}

/** The export of a function plugin module `Name.mjs`: its functions by SQL name. */
export interface FunctionsExport {
  version?: string;
  functions: { [name: string]: FunctionPlugin | FunctionPlugin['exec'] };
}

/** A payload codec (`FORMAT="custom" SCHEMAID="<name>[.<message>]"`, sink `format: custom`). */
export interface FormatPlugin {
  decode(data: Uint8Array): Row | Row[];
  encode(data: Row | Row[]): Uint8Array | string;
}

/** The export of a format plugin module `Name.mjs`: a factory given the SCHEMAID's message part. */
export type FormatExport =
  ((message: string) => FormatPlugin) | { format: (message: string) => FormatPlugin; version?: string };
