/**
 * The properties every sink understands (docs/runtime.md §3.2), read and checked once when the node is built: buffer,
 * transformation, format and failure-cache settings. A wrong value fails the rule's creation with eKuiper's texts.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { EddyConfig } from '../../config/index.js';
import type { Props } from '../../contracts/index.js';
import type { Registry } from '../registry.js';
import { propBool, propInt, propString, propStringList } from '../props.js';

/** Global `sink:` settings of kuiper.yaml: the defaults of the cache properties. */
export type SinkDefaults = EddyConfig['sink'];

export interface CacheSettings {
  enabled: boolean;
  memoryCacheThreshold: number;
  maxDiskCache: number;
  bufferPageSize: number;
  resendInterval: number;
  cleanCacheAtStop: boolean;
  /** failed items go to a separate resend queue; live items keep flowing */
  alterQueue: boolean;
  /** with the alternate queue: -1 live first, 0 alternate, 1 resend first */
  priority: number;
  /** field set to true on resent rows */
  indicatorField: string;
}

export interface SinkSettings {
  /** sends in flight at once on the live path of a connector that is not pipelined (sink property `concurrency`) */
  concurrency: number;
  bufferLength: number;
  omitIfEmpty: boolean;
  sendSingle: boolean;
  dataTemplate: string;
  dataField: string;
  fields: string[] | undefined;
  format: string;
  cache: CacheSettings;
}

export function executorError(message: string): EddyError {
  return new EddyError(ErrorCode.Executor, message);
}

export function readSinkSettings(props: Props, defaults: SinkDefaults, registry: Registry): SinkSettings {
  let settings: SinkSettings;
  try {
    const concurrency = propInt(props, 'concurrency', 1);
    if (concurrency <= 0) throw new Error('invalid type for concurrency property, should be positive integer');
    const bufferLength = propInt(props, 'bufferLength', 1024);
    if (bufferLength <= 0) throw new Error('invalid type for bufferLength property, should be positive integer');
    // batching itself is a runtime node ahead of the sink (runtime/batch.ts); its properties are checked here
    const batchSize = propInt(props, 'batchSize', 0);
    if (batchSize < 0) throw new Error('invalid batchSize, should be positive');
    const linger = propInt(props, 'lingerInterval', 0);
    if (linger < 0) throw new Error('invalid lingerInterval, should be positive');
    settings = {
      concurrency,
      bufferLength,
      omitIfEmpty: propBool(props, 'omitIfEmpty', false),
      sendSingle: propBool(props, 'sendSingle', false),
      dataTemplate: propString(props, 'dataTemplate', ''),
      dataField: propString(props, 'dataField') ?? propString(props, 'tableDataField', ''),
      fields: propStringList(props, 'fields'),
      format: propString(props, 'format', 'json').toLowerCase() || 'json',
      cache: {
        enabled: propBool(props, 'enableCache', defaults.enableCache ?? false),
        memoryCacheThreshold: propInt(props, 'memoryCacheThreshold', defaults.memoryCacheThreshold ?? 1024),
        maxDiskCache: propInt(props, 'maxDiskCache', defaults.maxDiskCache ?? 1024000),
        bufferPageSize: propInt(props, 'bufferPageSize', defaults.bufferPageSize ?? 256),
        resendInterval: propInt(props, 'resendInterval', defaults.resendInterval ?? 0),
        cleanCacheAtStop: propBool(props, 'cleanCacheAtStop', defaults.cleanCacheAtStop ?? false),
        alterQueue: propBool(props, 'resendAlterQueue', false),
        priority: propInt(props, 'resendPriority', 0),
        indicatorField: propString(props, 'resendIndicatorField', ''),
      },
    };
  } catch (err) {
    throw executorError(`fail to parse sink configuration: ${(err as Error).message}`);
  }
  const c = settings.cache;
  const priority = c.priority;
  if (
    c.memoryCacheThreshold < 0 ||
    c.maxDiskCache < 0 ||
    c.resendInterval < 0 ||
    c.bufferPageSize <= 0 ||
    c.memoryCacheThreshold < c.bufferPageSize ||
    c.memoryCacheThreshold % c.bufferPageSize !== 0 ||
    (c.maxDiskCache !== 0 && (c.maxDiskCache < c.bufferPageSize || c.maxDiskCache % c.bufferPageSize !== 0)) ||
    (priority !== -1 && priority !== 0 && priority !== 1)
  ) {
    throw executorError('invalid cache properties');
  }
  if (!registry.format(settings.format)) throw executorError(`invalid format ${settings.format}`);
  return settings;
}
