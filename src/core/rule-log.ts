/**
 * A rule's own logger (rule options `debug` and `logFilename`, docs/runtime.md §1.2), made alike on the main thread and
 * on the rule worker that runs the rule (docs/runtime.md §1.10): both append to the same file, as the server's own log
 * lines of every thread reach one `stream.log`.
 */
import { basename, join } from 'node:path';
import pino, { type Logger } from 'pino';
import type { RuleOptions } from './rule-options.js';

export type LogDestination = ReturnType<typeof pino.destination>;

/**
 * The rule's child logger (`debug` lowers its level); with `logFilename` and a log folder the rule logs into its own
 * file there instead (`dest`, which the caller keeps and closes with {@link endLog}).
 */
export function ruleLogger(
  ruleId: string,
  options: Pick<RuleOptions, 'debug' | 'logFilename'>,
  server: Logger,
  logDir: string | undefined,
): { logger: Logger; dest?: LogDestination } {
  if (options.logFilename && logDir) {
    const level = options.debug ? 'debug' : server.level;
    // opened to append: the main thread and the rule's worker each write whole lines to it
    const dest = pino.destination({ dest: join(logDir, basename(options.logFilename)), mkdir: true, sync: false });
    return { logger: pino({ level: level === 'silent' ? 'info' : level, base: { rule: ruleId } }, dest), dest };
  }
  const logger = server.child({ rule: ruleId });
  if (options.debug) logger.level = 'debug';
  return { logger };
}

export function endLog(dest: LogDestination | undefined): void {
  try {
    dest?.end();
  } catch {
    // a log file that cannot be flushed must not fail the rule operation
  }
}
