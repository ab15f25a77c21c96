/**
 * The one declaration of the rule options (docs/runtime.md §1.2): name, JSON kind, default, the check of a merged
 * value, and the meaning documented for it. The `RuleOptions` type, the built-in defaults, decoding of a rule's
 * `options` (rules/definition.ts), their validation, the fully filled options written back on start and stop, and the
 * option table of docs/runtime.md §1.2 (test/core/rule-options.test.ts) all derive from it.
 */

/** JSON kinds of option values, named after the Go types eKuiper decodes them into. */
export type OptionKind = 'bool' | 'string' | 'int' | 'float';
type KindValue = { bool: boolean; string: string; int: number; float: number };

/** Go's type name of a kind, as decoding errors word it. */
export const GO_TYPE: Readonly<Record<OptionKind, string>> = {
  bool: 'bool',
  string: 'string',
  int: 'int',
  float: 'float64',
};

/** One scalar option (or sub-field of a nested option). */
export interface ScalarOption<K extends OptionKind = OptionKind> {
  readonly kind: K;
  readonly default: KindValue[K];
  /** the problem of a merged value, worded as validation reports it (`name` is the option's), or undefined */
  check?(value: KindValue[K], name: string): string | undefined;
  /** the meaning column of docs/runtime.md §1.2 (which cites without the docs/ folder, and its own sections bare) */
  readonly doc: string;
  /**
   * Eddy's own option, not eKuiper's: written back on start and stop only when it differs from its default, so that
   * a rule not using it keeps eKuiper's shape
   */
  readonly own?: boolean;
}

function option<K extends OptionKind>(
  kind: K,
  value: KindValue[K],
  doc: string,
  check?: ScalarOption<K>['check'],
): ScalarOption<K> {
  return check ? { kind, default: value, check, doc } : { kind, default: value, doc };
}

function ownOption<K extends OptionKind>(
  kind: K,
  value: KindValue[K],
  doc: string,
  check?: ScalarOption<K>['check'],
): ScalarOption<K> {
  return { ...option(kind, value, doc, check), own: true };
}

const notNegative = (v: number, name: string): string | undefined =>
  v < 0 ? `${name} must be greater than or equal to 0, got ${v}` : undefined;
const restartPositive = (v: number, name: string): string | undefined =>
  v > 0 ? undefined : `restart ${name} must be greater than 0, got ${v}`;

/**
 * The scalar rule options in the order a decoded `options` object keeps its keys (so that a stored rule survives
 * export and import unchanged). `cron`, `duration` and the `cronDatetimeRange` items are read by the schedule grammar
 * of rules/schedule.ts, which rules/definition.ts applies when it validates.
 */
export const SCALAR_RULE_OPTIONS = {
  debug: option('bool', false, "this rule's logger at debug level"),
  logFilename: option('string', '', 'log this rule into its own file of that name in the log folder'),
  isEventTime: option(
    'bool',
    false,
    "event time from the streams' `TIMESTAMP` field (docs/sql.md §5.2); adds a watermark node",
  ),
  lateTolerance: option('int', 1000, 'watermark lag in ms (docs/sql.md §5.10)', notNegative),
  concurrency: option('int', 1, 'validated (≥ 0); every node runs as one instance', notNegative),
  bufferLength: option('int', 1024, "capacity of every node's input queue", notNegative),
  sendMetaToSink: option(
    'bool',
    false,
    'add the source metadata to each row under `__meta`; refused for rules reading several streams or grouping',
  ),
  sendError: option(
    'bool',
    true,
    'errors reach sinks as `{"error": "<message>"}` rows; otherwise only logged and counted',
  ),
  qos: option('int', 0, '0 at-most-once; 1 and 2 take checkpoints (docs/runtime.md §1.9)', (v, name) =>
    [0, 1, 2].includes(v) ? undefined : `${name} must be 0, 1 or 2, got ${v}`,
  ),
  checkpointInterval: option(
    'int',
    300000,
    'ms between checkpoints when qos ≥ 1 (≤ 0 at run time means 300000)',
    notNegative,
  ),
  cron: option('string', '', 'periodic rule: cron expression (5 fields, or `@every 1m` style descriptors)'),
  duration: option('string', '', 'periodic rule: run length per firing, Go duration (`30s`, `1h30m`)'),
  evalLimit: ownOption(
    'int',
    0,
    'ms one record may keep the worker thread of this rule busy before the rule is stopped ' +
      '(docs/runtime.md §1.10); 0 = `basic.ruleEvalLimit`',
    notNegative,
  ),
  memoryLimit: ownOption(
    'int',
    268435456,
    'bytes (estimated) the windows of this rule may hold before the rule is stopped with a status saying so ' +
      '(docs/runtime.md §1.10); 0 = no bound',
    notNegative,
  ),
  node: ownOption(
    'string',
    '',
    'cluster mode: the id of the only node that runs this rule (docs/cluster.md §3.1); `""` = placed by the cluster',
  ),
  parallelism: ownOption(
    'int',
    1,
    'instances of a stateless rule reading MQTT streams, sharing the topics through an MQTT shared subscription ' +
      '(`$share/<rule id>/<topic>`): in cluster mode each on its own node (docs/cluster.md §6), on a single server ' +
      'each on the next worker thread (docs/runtime.md §1.10)',
    (v, name) => (v >= 1 ? undefined : `${name} must be greater than or equal to 1, got ${v}`),
  ),
} as const;

/** `restartStrategy`'s fields (docs/runtime.md §1.3), in decoded key order. */
export const RESTART_STRATEGY_OPTIONS = {
  attempts: option('int', 0, 'restarts after a run-time error; 0 = stop at once', (v, name) =>
    v < 0 ? `restart ${name} must be greater than or equal to 0, got ${v}` : undefined,
  ),
  delay: option('int', 1000, 'first delay, ms', restartPositive),
  multiplier: option('float', 2, 'delay growth: `delay × multiplier^n`', restartPositive),
  maxDelay: option('int', 30000, 'cap on the delay', restartPositive),
  jitterFactor: option('float', 0.1, '± random fraction of each delay', (v, name) =>
    v > 0 && v < 1 ? undefined : `restart ${name} must be between 0 and 1, got ${v}`,
  ),
} as const;

/** The fields of one `cronDatetimeRange` item, in decoded key order. */
export const DATETIME_RANGE_FIELDS = {
  begin: 'string',
  end: 'string',
  beginTimestamp: 'int',
  endTimestamp: 'int',
} as const satisfies Record<string, OptionKind>;

/** The nested options, with the Go types their decoding errors name. */
export const NESTED_RULE_OPTIONS = {
  restartStrategy: { goType: 'api.RestartStrategy' },
  cronDatetimeRange: {
    goType: '[]api.DatetimeRange',
    itemGoType: 'api.DatetimeRange',
    doc:
      'allowed periods: `{"begin":"YYYY-MM-DD hh:mm:ss","end":…}` (configured zone) or ' +
      '`{"beginTimestamp":ms,"endTimestamp":ms}`',
  },
} as const;

/**
 * The order in which validation reports problems (eKuiper's), which is not the decoded key order; every option with a
 * check is listed once (test/core/rule-options.test.ts).
 */
export const CHECK_ORDER = [
  'checkpointInterval',
  'concurrency',
  'bufferLength',
  'lateTolerance',
  'qos',
  'evalLimit',
  'memoryLimit',
  'parallelism',
] as const satisfies readonly (keyof typeof SCALAR_RULE_OPTIONS)[];
export const RESTART_CHECK_ORDER = [
  'multiplier',
  'attempts',
  'delay',
  'maxDelay',
  'jitterFactor',
] as const satisfies readonly (keyof typeof RESTART_STRATEGY_OPTIONS)[];

type Values<T extends Record<string, { kind: OptionKind }>> = { -readonly [K in keyof T]: KindValue[T[K]['kind']] };

export type RestartStrategy = Values<typeof RESTART_STRATEGY_OPTIONS>;
export type DatetimeRange = {
  -readonly [K in keyof typeof DATETIME_RANGE_FIELDS]?: KindValue[(typeof DATETIME_RANGE_FIELDS)[K]];
};

/** Rule options (docs/runtime.md §1.2), already merged over the server's `rule:` defaults. */
export type RuleOptions = Values<typeof SCALAR_RULE_OPTIONS> & {
  restartStrategy: RestartStrategy;
  cronDatetimeRange: DatetimeRange[];
};

function defaultsOf<T extends Record<string, ScalarOption>>(fields: T): Values<T> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(fields)) out[name] = spec.default;
  return out as Values<T>;
}

/** The built-in defaults of every option, fresh (the `rule:` section of etc/kuiper.yaml overrides them). */
export function builtInRuleOptions(): RuleOptions {
  return {
    ...defaultsOf(SCALAR_RULE_OPTIONS),
    restartStrategy: defaultsOf(RESTART_STRATEGY_OPTIONS),
    cronDatetimeRange: [],
  };
}

/**
 * Every declared option of `o` in decoded key order, Eddy's own only when not at their default: what start and stop
 * write back (docs/rest-api.md §4.4).
 */
export function everyOption(o: RuleOptions): RuleOptions {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(SCALAR_RULE_OPTIONS) as [keyof RuleOptions, ScalarOption][]) {
    if (!spec.own || o[name] !== spec.default) out[name] = o[name];
  }
  out.restartStrategy = { ...o.restartStrategy };
  out.cronDatetimeRange = [...(o.cronDatetimeRange ?? [])];
  return out as RuleOptions;
}

/** The problems of the scalar and restart-strategy values of merged options, in {@link CHECK_ORDER}. */
export function optionValueProblems(o: RuleOptions): string[] {
  const problems: string[] = [];
  const report = (problem: string | undefined): void => {
    if (problem !== undefined) problems.push(problem);
  };
  for (const name of CHECK_ORDER) {
    const spec: ScalarOption<'int'> = SCALAR_RULE_OPTIONS[name];
    report(spec.check?.(o[name], name));
  }
  for (const name of RESTART_CHECK_ORDER) {
    const spec: ScalarOption<'int' | 'float'> = RESTART_STRATEGY_OPTIONS[name];
    report(spec.check?.(o.restartStrategy[name], name));
  }
  return problems;
}
