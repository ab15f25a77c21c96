/**
 * The redisSub source (docs/runtime.md §2.5 redis): pattern-subscribes to `channels` on `address`/`db`; each message
 * (optionally decompressed) is decoded with the stream's FORMAT, with metadata `channel`. The client resubscribes
 * by itself after a lost connection; the loss is reported to the rule as a transient error.
 */
import type { Redis } from 'ioredis';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import { checkCompression, decompress, type Compression } from '../../core/compression.js';
import { propString, propStringList } from '../props.js';
import { openRedis, redisSettings, type RedisSettings } from './common.js';
import { transientError } from '../../contracts/failures.js';

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

export function subSettings(props: Props): {
  settings: RedisSettings;
  channels: string[];
  decompression: Compression | undefined;
} {
  try {
    const settings = redisSettings(props, 'address', 'redisSub');
    const channels = propStringList(props, 'channels') ?? [];
    const dc = propString(props, 'decompression', '');
    return {
      settings,
      channels,
      decompression: dc ? checkCompression(dc) : undefined,
    };
  } catch (e) {
    throw e instanceof EddyError ? e : bad((e as Error).message);
  }
}

export class RedisSubSource implements SourceConnector {
  private settings!: RedisSettings;
  private channels: string[] = [];
  private decompression: Compression | undefined;
  private client: Redis | undefined;

  provision(_ctx: ConnectorContext, _datasource: string, props: Props): void {
    const s = subSettings(props);
    if (s.channels.length === 0) throw bad('redisSub channels are required');
    this.settings = s.settings;
    this.channels = s.channels;
    this.decompression = s.decompression;
  }

  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    const client = await openRedis(this.settings);
    this.client = client;
    let ready = true;
    client.on('close', () => {
      if (ready && this.client === client)
        onError(transientError(new Error(`redis ${this.settings.addr}: connection lost`)));
      ready = false;
    });
    client.on('ready', () => (ready = true));
    client.on('pmessageBuffer', (_pattern: Buffer, channel: Buffer, message: Buffer) => {
      let payload: Uint8Array = message;
      if (this.decompression) {
        try {
          payload = decompress(this.decompression, message);
        } catch (e) {
          onError(transientError(new Error(`decompress error: ${(e as Error).message}`)));
          return;
        }
      }
      emit({ payload: new Uint8Array(payload), meta: { channel: channel.toString('utf8') }, timestamp: Date.now() });
    });
    await client.psubscribe(...this.channels);
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    const c = this.client;
    this.client = undefined;
    c?.disconnect();
  }
}
