/**
 * The redis lookup table (docs/runtime.md §2.5 redis): DATASOURCE is the database number; one join key whose value
 * (as text) is the Redis key. `dataType: string` reads GET (a JSON object → one row), `list` reads LRANGE 0 -1
 * (each element a JSON object → one row). A missing key gives no rows.
 */
import type { Redis } from 'ioredis';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, LookupConnector, Props } from '../../contracts/index.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { keyText } from '../../values/text.js';
import { parseJsonExact } from '../formats/jsonparse.js';
import { propString } from '../props.js';
import { openRedis, type RedisSettings } from './common.js';

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

export function parseDb(datasource: string): number {
  const db = datasource === '' ? 0 : Number(datasource);
  if (!Number.isInteger(db) || db < 0 || db > 15)
    throw bad(`redis db should be in range 0-15, got ${JSON.stringify(datasource)}`);
  return db;
}

export function lookupSettings(
  datasource: string,
  props: Props,
): { settings: RedisSettings; dataType: 'string' | 'list' } {
  const addr = propString(props, 'addr', '');
  if (!addr) throw bad('redis addr is null');
  const dataType = propString(props, 'dataType', '');
  if (dataType !== 'string' && dataType !== 'list')
    throw bad(`redis dataType must be string or list, got ${JSON.stringify(dataType)}`);
  return {
    settings: {
      addr,
      username: propString(props, 'username'),
      password: propString(props, 'password'),
      db: parseDb(datasource),
    },
    dataType,
  };
}

function parseRow(text: string): ValueObject {
  const v = parseJsonExact(text) as Value;
  if (!isObject(v)) throw new Error(`redis value is not a JSON object: ${text}`);
  return v;
}

export class RedisLookup implements LookupConnector {
  private settings!: RedisSettings;
  private dataType: 'string' | 'list' = 'string';
  private client: Redis | undefined;

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    const s = lookupSettings(datasource, props);
    this.settings = s.settings;
    this.dataType = s.dataType;
  }

  async connect(_ctx: ConnectorContext): Promise<void> {
    this.client = await openRedis(this.settings);
  }

  async lookup(
    _ctx: ConnectorContext,
    _fields: readonly string[],
    keys: readonly string[],
    values: readonly Value[],
  ): Promise<ValueObject[]> {
    if (keys.length !== 1) throw new Error('redis lookup only supports one key');
    const client = this.client;
    if (!client) throw new Error('redis lookup is not connected');
    const key = keyText(values[0]);
    if (this.dataType === 'string') {
      const v = await client.get(key);
      return v === null ? [] : [parseRow(v)];
    }
    const list = await client.lrange(key, 0, -1);
    return list.map(parseRow);
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.client?.disconnect();
    this.client = undefined;
  }
}
