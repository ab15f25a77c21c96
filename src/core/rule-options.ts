/** Rule options (docs/runtime.md §1.2), already merged over the server's `rule:` defaults. */
export interface RuleOptions {
  debug: boolean;
  logFilename: string;
  isEventTime: boolean;
  lateTolerance: number;
  concurrency: number;
  bufferLength: number;
  sendMetaToSink: boolean;
  sendError: boolean;
  qos: number;
  checkpointInterval: number;
  restartStrategy: {
    attempts: number;
    delay: number;
    multiplier: number;
    maxDelay: number;
    jitterFactor: number;
  };
  cron: string;
  duration: string;
  cronDatetimeRange: Array<{ begin?: string; end?: string; beginTimestamp?: number; endTimestamp?: number }>;
}
