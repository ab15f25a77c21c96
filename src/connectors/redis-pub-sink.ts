/**
 * The redisPub sink (docs/runtime.md §3.6 redis): publishes each encoded payload (optionally compressed) to `channel`
 * on `address`/`db`. A failed publish is recoverable, so the failure cache resends it.
 */
import type { Redis } from 'ioredis';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../contracts/index.js';
import type { Registry } from './registry.js';
import { checkCompression, compress, type Compression } from '../core/compression.js';
import { propInt, propString } from './props.js';
import { openRedis, pingRedis, type RedisSettings } from './redis-common.js';
import { recoverable } from './sinknode.js';

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

function pubSettings(props: Props): RedisSettings {
  const address = propString(props, 'address', '');
  if (!address) throw bad('redisPub address is required');
  const db = propInt(props, 'db', 0);
  if (db < 0 || db > 15) throw bad(`redisPub db should be in range 0-15, got ${db}`);
  return { addr: address, db, username: propString(props, 'username'), password: propString(props, 'password') };
}

export class RedisPubSink implements SinkConnector {
  private settings!: RedisSettings;
  private channel = '';
  /** channel of resent items (alternate resend queue); the channel when empty */
  private resendChannel = '';
  private compression: Compression | undefined;
  private client: Redis | undefined;

  provision(_ctx: SinkContext, props: Props): void {
    try {
      this.settings = pubSettings(props);
      this.channel = propString(props, 'channel', '');
      if (!this.channel) throw bad('redisPub channel is required');
      this.resendChannel = propString(props, 'resendDestination', '');
      const c = propString(props, 'compression', '');
      this.compression = c ? checkCompression(c) : undefined;
    } catch (e) {
      throw e instanceof EddyError ? e : bad((e as Error).message);
    }
  }

  async connect(_ctx: SinkContext): Promise<void> {
    this.client = await openRedis(this.settings);
  }

  async collect(_ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const client = this.client;
    if (!client) throw recoverable(new Error('redisPub sink is not connected'));
    const data = this.compression ? compress(this.compression, payload.bytes) : payload.bytes;
    try {
      const channel = payload.resend && this.resendChannel !== '' ? this.resendChannel : this.channel;
      await client.publish(channel, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    } catch (e) {
      throw recoverable(e);
    }
  }

  async close(_ctx: SinkContext): Promise<void> {
    this.client?.disconnect();
    this.client = undefined;
  }
}

export function registerRedisPub(registry: Registry): void {
  registry.registerSink('redisPub', () => new RedisPubSink());
  registry.registerConnectionCheck('sink', 'redisPub', async (props) => pingRedis(pubSettings(props)));
}
