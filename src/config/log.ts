import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import pino, { type Logger, type DestinationStream } from 'pino';
import { byteSize, type EddyConfig, type Home } from './index.js';
import { RotatingLogFile, type RotationSettings } from './log-file.js';

export type { Logger } from 'pino';

/** The server's log outputs, switchable at run time (`PATCH /configs`, docs/rest-api.md §16.5). */
export interface LogSettings {
  logLevel?: string;
  debug?: boolean;
  consoleLog?: boolean;
  fileLog?: boolean;
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
};

/**
 * One pino JSON line as a person reads it on a console: `time LEVEL [context] message key=value…`, the error's stack
 * indented below. The file keeps pino's JSON (tools parse it); a line that is not JSON passes through unchanged.
 */
export function readableLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { level, time, msg, err, rule, component, ...rest } = rec;
  const when = typeof time === 'number' ? new Date(time).toISOString() : '';
  const ctx = [rule !== undefined ? `rule=${String(rule)}` : '', component !== undefined ? String(component) : '']
    .filter((c) => c !== '')
    .join(' ');
  const extras = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  let line = `${when} ${LEVEL_NAMES[Number(level)] ?? String(level)} ${ctx ? `[${ctx}] ` : ''}${String(msg ?? '')}${extras ? ` ${extras}` : ''}`;
  if (err && typeof err === 'object') {
    const e = err as { message?: string; stack?: string };
    line += e.stack ? `\n    ${e.stack.split('\n').join('\n    ')}` : ` error=${e.message ?? JSON.stringify(err)}`;
  } else if (err !== undefined && err !== null && err !== '') {
    // a cause logged as its message text (`{err: e.message}`) is the reason the line exists: never drop it
    line += `: ${typeof err === 'string' ? err : JSON.stringify(err)}`;
  }
  return `${line}\n`;
}

/** Console and/or file output; each destination is opened on first use and kept for later switches. */
class SwitchableOutput implements DestinationStream {
  consoleOn = false;
  fileOn = false;
  private console?: DestinationStream;
  private readonly file: RotatingLogFile;

  constructor(filePath: string, rotation: RotationSettings) {
    // worker threads write the same file; the main thread alone rotates it (log-file.ts)
    this.file = new RotatingLogFile(filePath, rotation, isMainThread);
  }

  write(msg: string): void {
    if (this.consoleOn) (this.console ??= pino.destination(1)).write(readableLine(msg));
    if (this.fileOn) this.file.write(msg);
  }

  /** at shutdown: the file's pending lines are written out (pino passes a callback) */
  flush(cb?: (err?: Error) => void): void {
    this.file.flush(cb);
  }

  close(): Promise<void> {
    return this.file.close();
  }

  get any(): boolean {
    return this.consoleOn || this.fileOn;
  }
}

interface LogControl {
  output: SwitchableOutput;
  level: string;
  debug: boolean;
}

const controls = new WeakMap<Logger, LogControl>();

function effectiveLevel(c: LogControl): string {
  if (!c.output.any) return 'silent';
  return c.debug ? 'debug' : c.level;
}

/**
 * The server logger: to the console and/or `log/stream.log` per `basic.consoleLog` / `basic.fileLog`.
 * Rules log through child loggers (`logger.child({rule: id})`).
 */
export function createLogger(config: EddyConfig, home: Home): Logger {
  const output = new SwitchableOutput(join(home.log, 'stream.log'), rotationSettings(config));
  output.consoleOn = Boolean(config.basic.consoleLog);
  output.fileOn = Boolean(config.basic.fileLog);
  let level = 'info';
  try {
    level = checkLogLevel(config.basic.logLevel || 'info');
  } catch {
    // an unknown configured level logs at info
  }
  const control: LogControl = { output, level, debug: Boolean(config.basic.debug) };
  const logger = pino({ level: effectiveLevel(control), base: undefined }, output);
  controls.set(logger, control);
  return logger;
}

/** A non-negative number of a config key, or its default when absent or unusable. */
function hours(v: unknown, fallback: number): number {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : fallback;
}

/** eKuiper's log rotation keys (`basic.rotateTime`, `maxAge`, `rotateSize`, `rotateCount`), defaults as shipped. */
export function rotationSettings(config: EddyConfig): RotationSettings {
  const b = config.basic;
  return {
    rotateTimeHours: hours(b.rotateTime, 24),
    maxAgeHours: hours(b.maxAge, 72),
    rotateSizeBytes: b.rotateSize === 0 || b.rotateSize === '0' ? 0 : byteSize(b.rotateSize, 0),
    rotateCount: Math.floor(hours(b.rotateCount, 3)),
  };
}

/** eKuiper's (logrus) level names that pino spells differently */
const LEVEL_ALIASES: Record<string, string> = { warning: 'warn', panic: 'fatal' };

/** The pino level of a configured level name; throws `invalid log level X` for an unknown one. */
export function checkLogLevel(level: string): string {
  const l = LEVEL_ALIASES[level.toLowerCase()] ?? level.toLowerCase();
  if (!Object.hasOwn(pino.levels.values, l)) throw new Error(`invalid log level ${level}`);
  return l;
}

/**
 * Applies run-time log settings to a logger made by {@link createLogger} (child loggers created before keep their
 * level). Unknown loggers are left alone.
 */
export function applyLogSettings(logger: Logger, s: LogSettings): void {
  const c = controls.get(logger);
  if (!c) return;
  if (s.logLevel !== undefined) c.level = checkLogLevel(s.logLevel);
  if (s.debug !== undefined) c.debug = s.debug;
  if (s.consoleLog !== undefined) c.output.consoleOn = s.consoleLog;
  if (s.fileLog !== undefined) c.output.fileOn = s.fileLog;
  logger.level = effectiveLevel(c);
}

/** At shutdown: writes out the file's pending lines and releases it (and its rotation timer). */
export async function closeLogger(logger: Logger): Promise<void> {
  const c = controls.get(logger);
  if (c) await c.output.close();
  else logger.flush?.();
}
