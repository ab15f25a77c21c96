/**
 * `PATCH /configs` (docs/rest-api.md §16.5): log level, debug, console/file logging and the time zone, changed at run
 * time without a restart. The whole body is checked before anything changes; success is 204 with no body.
 */
import type { FastifyInstance } from 'fastify';
import type { EddyConfig } from '../config/index.js';
import { applyLogSettings, checkLogLevel, type LogSettings, type Logger } from '../config/log.js';
import { setDefaultZone } from '../values/index.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import { field, readJsonObject, restated, rethrowing, sendEmpty } from './http.js';

export interface ConfigsDeps {
  config: EddyConfig;
  logger: Logger;
  /** told about a new zone once the engine's default zone is set (rules: cron, datetime ranges, status) */
  onTimezone?: (zone: string) => void;
}

const PREFIX = 'Invalid body: ';

function optional<T>(body: Record<string, unknown>, name: string, type: 'string' | 'boolean'): T | undefined {
  const v = field(body, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== type) throw new EddyError(ErrorCode.Undefined, `${PREFIX}${name} must be a ${type}`);
  return v as T;
}

export function registerConfigRoutes(http: FastifyInstance, deps: ConfigsDeps): void {
  http.patch('/configs', async (req, reply) => {
    const body = readJsonObject(req, PREFIX);
    const settings: LogSettings = {
      logLevel: optional<string>(body, 'logLevel', 'string'),
      debug: optional<boolean>(body, 'debug', 'boolean'),
      consoleLog: optional<boolean>(body, 'consoleLog', 'boolean'),
      fileLog: optional<boolean>(body, 'fileLog', 'boolean'),
    };
    let timezone = optional<string>(body, 'timezone', 'string');
    // Go loads the empty zone name as UTC
    if (timezone === '') timezone = 'UTC';
    const logLevel = settings.logLevel;
    if (logLevel !== undefined) rethrowing(() => checkLogLevel(logLevel), restated(''));
    if (timezone !== undefined) {
      const zone = timezone;
      rethrowing(() => setDefaultZone(zone), restated(''));
      deps.config.basic.timezone = timezone;
      deps.onTimezone?.(timezone);
    }
    applyLogSettings(deps.logger, settings);
    const basic = deps.config.basic;
    if (settings.logLevel !== undefined) basic.logLevel = settings.logLevel;
    if (settings.debug !== undefined) basic.debug = settings.debug;
    if (settings.consoleLog !== undefined) basic.consoleLog = settings.consoleLog;
    if (settings.fileLog !== undefined) basic.fileLog = settings.fileLog;
    return sendEmpty(reply, 204);
  });
}
