/**
 * Which `kuiper.yaml` settings Eddy knows (docs/rest-api.md §17.1): the start-up warns about every key of the home's
 * kuiper.yaml and every `KUIPER__…` variable that names a setting Eddy does not know (a misspelt key such as
 * `KUIPER__BASIC__RESTPROT`), or one of eKuiper's that Eddy does not implement set to anything but its inert value.
 * Keys match case-insensitively, as the environment overrides do.
 */
import { RESTART_STRATEGY_OPTIONS, SCALAR_RULE_OPTIONS, DATETIME_RANGE_FIELDS } from '../core/rule-options.js';
import type { ConfigTree } from './env.js';

/** A setting Eddy reads. */
const USED = 'used';
/** One of eKuiper's settings Eddy does not implement: a value other than `inert` earns a warning (`ANY`: never). */
interface Ignored {
  inert: unknown;
  why: string;
}
const ANY = Symbol('any value');
type Known = typeof USED | Ignored;

const ignored = (inert: unknown, why: string): Ignored => ({ inert, why });
const NO_CLI_RPC = 'the eddy command uses the REST API, there is no CLI port';

/** Every setting by its dotted path; a path that only groups others (`basic.syslog`) is implied by them. */
const KNOWN: Record<string, Known> = {
  ...Object.fromEntries(
    [
      'logLevel',
      'debug',
      'consoleLog',
      'fileLog',
      'rotateTime',
      'maxAge',
      'rotateSize',
      'rotateCount',
      'timezone',
      'restIp',
      'restPort',
      'restTls',
      'restTls.certfile',
      'restTls.keyfile',
      'prometheus',
      'prometheusPort',
      'pluginHosts',
      'authentication',
      'ignoreCase',
      'rulePatrolInterval',
      'cfgStorageType',
      'maxBodySize',
      'fileAccessRoots',
      'workers',
      'ruleEvalLimit',
      'workerMemoryLimit',
    ].map((k) => [`basic.${k}`, USED]),
  ),
  'basic.ip': ignored(ANY, NO_CLI_RPC),
  'basic.port': ignored(ANY, NO_CLI_RPC),
  'basic.logDisableTimestamp': ignored(false, 'log lines always carry their time'),
  'basic.syslog.enable': ignored(false, 'there is no syslog output; use the console log and the service manager'),
  'basic.syslog.network': ignored(ANY, ''),
  'basic.syslog.address': ignored(ANY, ''),
  'basic.syslog.level': ignored(ANY, ''),
  'basic.syslog.tag': ignored(ANY, ''),
  'basic.pprof': ignored(false, 'there is no Go profiler'),
  'basic.pprofIp': ignored(ANY, ''),
  'basic.pprofPort': ignored(ANY, ''),
  'basic.sql.maxConnections': ignored(0, 'each sql connector keeps its own small pool'),
  'basic.enableOpenZiti': ignored(false, 'OpenZiti is not supported'),
  'basic.aesKey': ignored(ANY, ''),
  'basic.gracefulShutdownTimeout': ignored(ANY, ''),
  'basic.connection.backoffMaxElapsedDuration': ignored(ANY, ''),
  'basic.ResourceProfileConfig.enable': ignored(false, 'rule CPU time is always counted (GET /rules/usage/cpu)'),
  'basic.ResourceProfileConfig.interval': ignored(ANY, ''),
  'basic.metricsDumpConfig.enable': ignored(false, 'metrics are not dumped to files'),
  'basic.metricsDumpConfig.retainedDuration': ignored(ANY, ''),
  'basic.enableRestAuditLog': ignored(false, 'there is no REST audit log'),
  ...Object.fromEntries(Object.keys(SCALAR_RULE_OPTIONS).map((k) => [`rule.${k}`, USED])),
  ...Object.fromEntries(Object.keys(RESTART_STRATEGY_OPTIONS).map((k) => [`rule.restartStrategy.${k}`, USED])),
  ...Object.fromEntries(Object.keys(DATETIME_RANGE_FIELDS).map((k) => [`rule.cronDatetimeRange.${k}`, USED])),
  'rule.cronDatetimeRange': USED,
  ...Object.fromEntries(
    ['enableCache', 'memoryCacheThreshold', 'maxDiskCache', 'bufferPageSize', 'resendInterval', 'cleanCacheAtStop'].map(
      (k) => [`sink.${k}`, USED],
    ),
  ),
  'sink.resendAlterQueue': ignored(false, 'set it on the sink of a rule'),
  'sink.resendPriority': ignored(0, 'set it on the sink of a rule'),
  'sink.resendIndicatorField': ignored('', 'set it on the sink of a rule'),
  'source.httpServerIp': USED,
  'source.httpServerPort': USED,
  'source.httpServerTls': USED,
  'source.httpServerTls.certfile': USED,
  'source.httpServerTls.keyfile': USED,
  // cluster mode (docs/cluster.md §1): read by cluster/config.ts
  ...Object.fromEntries(
    ['backend', 'name', 'nodeId', 'rest', 'leaseTimeout', 'nats.servers', 'nats.replicas'].map((k) => [
      `cluster.${k}`,
      USED,
    ]),
  ),
  'store.type': USED,
  'store.extStateType': ignored('sqlite', 'keyed state lives in the metadata store'),
  'store.redis.host': USED,
  'store.redis.port': USED,
  'store.redis.password': USED,
  'store.redis.timeout': USED,
  'store.redis.db': USED,
  'store.redis.connectionSelector': ignored('', 'give store.redis.host, port and password'),
  'store.sqlite.name': USED,
  'portable.pythonBin': USED,
  'portable.initTimeout': USED,
  'portable.sendTimeout': ignored(ANY, ''),
  'portable.recvTimeout': ignored(ANY, ''),
  'openTelemetry.serviceName': ignored(ANY, ''),
  'openTelemetry.enableRemoteCollector': ignored(false, 'there is no OpenTelemetry export'),
  'openTelemetry.remoteEndpoint': ignored(ANY, ''),
  'openTelemetry.localTraceCapacity': ignored(ANY, ''),
  'openTelemetry.enableLocalStorage': ignored(false, 'there is no OpenTelemetry export'),
};

/** lower-cased path → its spelling in KNOWN */
const BY_LOWER = new Map(Object.keys(KNOWN).map((k) => [k.toLowerCase(), k]));
/** lower-cased paths that group settings (`basic`, `basic.syslog`, `rule.restartStrategy`) */
const GROUPS = new Set(
  Object.keys(KNOWN).flatMap((k) => {
    const parts = k.toLowerCase().split('.');
    return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('.'));
  }),
);

const isTree = (v: unknown): v is ConfigTree => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The known setting closest to an unknown path (one edit or a swap away), to suggest it. */
function nearest(path: string): string | undefined {
  const lower = path.toLowerCase();
  let best: string | undefined;
  let bestDistance = 3;
  for (const [k, spelt] of BY_LOWER) {
    const d = distance(lower, k);
    if (d < bestDistance) {
      bestDistance = d;
      best = spelt;
    }
  }
  return best;
}

/** Damerau-Levenshtein distance (adjacent swaps count one), small strings only. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === null || a === undefined || a === '') return b === null || b === undefined || b === '';
  return String(a) === String(b);
}

/** The warning for one setting at `path` with `value`, from `origin`; undefined when there is nothing to say. */
function judge(origin: string, path: string, value: unknown): string | undefined {
  const spelt = BY_LOWER.get(path.toLowerCase());
  if (spelt === undefined) {
    if (GROUPS.has(path.toLowerCase())) return undefined;
    const near = nearest(path);
    return `${origin}: unknown setting ${path}${near ? ` (did you mean ${near}?)` : ''}; it is ignored`;
  }
  const known = KNOWN[spelt];
  if (known === USED || known.inert === ANY || sameValue(value, known.inert)) return undefined;
  return `${origin}: ${spelt} is not supported by Eddy${known.why ? ` (${known.why})` : ''}; it is ignored`;
}

/** Walks a kuiper.yaml tree: a known group is entered, anything else judged whole. */
function walk(tree: ConfigTree, prefix: string, origin: string, out: string[]): void {
  for (const [k, v] of Object.entries(tree)) {
    const path = prefix ? `${prefix}.${k}` : k;
    const lower = path.toLowerCase();
    if (isTree(v) && GROUPS.has(lower)) {
      walk(v, path, origin, out);
      continue;
    }
    const w = judge(origin, path, v);
    if (w) out.push(w);
  }
}

/**
 * Warnings about the settings of a home's own `etc/kuiper.yaml` (`ownTree`, as read, before defaults and overrides)
 * and of the `KUIPER__…` variables of `env`.
 */
export function settingWarnings(ownTree: ConfigTree, env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  walk(ownTree, '', 'etc/kuiper.yaml', out);
  for (const [name, raw] of Object.entries(env)) {
    if (raw === undefined || !name.toUpperCase().startsWith('KUIPER__')) continue;
    const parts = name
      .slice('KUIPER__'.length)
      .split('__')
      .filter((p) => p !== '');
    if (parts.length === 0) continue;
    const path = parts.join('.').toLowerCase();
    const w = judge(name, path, raw);
    if (w) out.push(w);
  }
  return out;
}
