/**
 * The redisPub sink (docs/runtime.md §3.6 redis): publishes each encoded payload (optionally compressed) to `channel`
 * on `address`/`db`. A failed publish is recoverable, so the failure cache resends it.
 */
import type { Redis } from 'ioredis';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props, SinkPayload } from '../../contracts/index.js';
import { checkCompression, compress, type Compression } from '../../core/compression.js';
import { propString } from '../props.js';
import { RedisClientSink, redisSettings, type RedisSettings } from './common.js';
import { recoverable } from '../../contracts/failures.js';

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

export function pubSettings(props: Props): RedisSettings {
  return redisSettings(props, 'address', 'redisPub');
}

export class RedisPubSink extends RedisClientSink {
  private channel = '';
  /** channel of resent items (alternate resend queue); the channel when empty */
  private resendChannel = '';
  private compression: Compression | undefined;

  constructor() {
    super('redisPub');
  }

  protected configure(props: Props): void {
    this.settings = pubSettings(props);
    this.channel = propString(props, 'channel', '');
    if (!this.channel) throw bad('redisPub channel is required');
    this.resendChannel = propString(props, 'resendDestination', '');
    const c = propString(props, 'compression', '');
    this.compression = c ? checkCompression(c) : undefined;
  }

  protected async send(client: Redis, payload: SinkPayload): Promise<void> {
    const data = this.compression ? compress(this.compression, payload.bytes) : payload.bytes;
    try {
      const channel = payload.resend && this.resendChannel !== '' ? this.resendChannel : this.channel;
      await client.publish(channel, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    } catch (e) {
      throw recoverable(e);
    }
  }
}
