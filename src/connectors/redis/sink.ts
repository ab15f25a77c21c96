/**
 * The redis sink (docs/runtime.md §3.6 redis). `keyType: single` writes each row under `key` (or the value of the
 * row's `field`) as its JSON text; `multiple` writes every field of the row as its own key. `dataType: string`
 * uses SET (with `expiration` seconds), `list` LPUSH. With `rowkindField`, a `delete` row removes the key (DEL, or
 * LPOP for lists). Connection failures are recoverable.
 */
import type { Redis } from 'ioredis';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props, SinkPayload } from '../../contracts/index.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { keyText, textOf } from '../../values/text.js';
import { encodeJson } from '../formats/jsonenc.js';
import { propInt, propString } from '../props.js';
import { RedisClientSink, redisSettings, type RedisSettings } from './common.js';
import { recoverable } from '../../contracts/failures.js';

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

const ROW_KINDS = new Set(['insert', 'update', 'upsert', 'delete']);

export function sinkSettings(props: Props): RedisSettings {
  return redisSettings(props, 'addr', 'redis', 'redisSink');
}

const decoder = new TextDecoder();

export class RedisSink extends RedisClientSink {
  private key = '';
  private field = '';
  private keyType: 'single' | 'multiple' = 'single';
  private dataType: 'string' | 'list' = 'string';
  private expiration = -1;
  private rowkindField = '';

  constructor() {
    super('redis');
  }

  protected configure(props: Props): void {
    this.settings = sinkSettings(props);
    this.key = propString(props, 'key', '');
    this.field = propString(props, 'field', '');
    const kt = propString(props, 'keyType', 'single');
    if (kt !== 'single' && kt !== 'multiple') throw bad(`keyType must be single or multiple, got ${kt}`);
    this.keyType = kt;
    const dt = propString(props, 'dataType', 'string');
    if (dt !== 'string' && dt !== 'list') throw bad(`dataType must be string or list, got ${dt}`);
    this.dataType = dt;
    this.expiration = propInt(props, 'expiration', -1);
    this.rowkindField = propString(props, 'rowkindField', '');
    if (this.keyType === 'single' && !this.key && !this.field)
      throw bad('redis sink must have key or field when KeyType is single');
  }

  protected async send(client: Redis, payload: SinkPayload): Promise<void> {
    const data = payload.data as Value;
    const single = !Array.isArray(data);
    const rows: ValueObject[] = Array.isArray(data) ? data.filter(isObject) : isObject(data) ? [data] : [];
    const pipe = client.multi();
    for (const row of rows) {
      let kind = 'upsert';
      if (this.rowkindField) {
        const k = row[this.rowkindField];
        if (k !== undefined && k !== null) {
          if (typeof k !== 'string' || !ROW_KINDS.has(k.toLowerCase())) throw new Error(`invalid rowkind ${textOf(k)}`);
          kind = k.toLowerCase();
        }
      }
      if (this.keyType === 'multiple') {
        for (const [k, v] of Object.entries(row)) this.write(pipe, k, textOf(v), kind);
        continue;
      }
      let key = this.key;
      if (this.field) {
        const fv = row[this.field];
        if (fv === undefined || fv === null) throw new Error(`field ${this.field} does not exist in the row`);
        key = keyText(fv);
      }
      // a single row keeps the pipeline's bytes (the dataTemplate output when set)
      const value = single ? decoder.decode(payload.bytes) : encodeJson(row);
      this.write(pipe, key, value, kind);
    }
    try {
      const results = await pipe.exec();
      const failed = results?.find(([err]) => err);
      if (failed) throw failed[0];
    } catch (e) {
      const msg = (e as Error).message ?? String(e);
      // command errors (WRONGTYPE…) will fail again; connection problems may not
      if (/WRONGTYPE|ERR /.test(msg)) throw e;
      throw recoverable(e);
    }
  }

  private write(pipe: ReturnType<Redis['multi']>, key: string, value: string, kind: string): void {
    if (this.dataType === 'string') {
      if (kind === 'delete') pipe.del(key);
      else if (this.expiration > 0) pipe.set(key, value, 'EX', this.expiration);
      else pipe.set(key, value);
    } else if (kind === 'delete') pipe.lpop(key);
    else pipe.lpush(key, value);
  }
}
