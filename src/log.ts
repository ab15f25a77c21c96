import { join } from 'node:path';
import pino, { type Logger, type DestinationStream } from 'pino';
import type { EddyConfig, Home } from './config/index.js';

export type { Logger } from 'pino';

/**
 * The server logger: to the console and/or `log/stream.log` per `basic.consoleLog` / `basic.fileLog`.
 * Rules log through child loggers (`logger.child({rule: id})`).
 */
export function createLogger(config: EddyConfig, home: Home): Logger {
  const level = config.basic.debug ? 'debug' : (config.basic.logLevel || 'info').toLowerCase();
  const streams: Array<{ stream: DestinationStream; level: string }> = [];
  if (config.basic.consoleLog) streams.push({ stream: pino.destination(1), level });
  if (config.basic.fileLog) {
    streams.push({ stream: pino.destination({ dest: join(home.log, 'stream.log'), mkdir: true, sync: false }), level });
  }
  if (streams.length === 0) return pino({ level: 'silent' });
  return pino({ level, base: undefined }, pino.multistream(streams));
}
