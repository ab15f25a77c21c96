/**
 * The `log` sink (logs every payload through the rule's logger) and the `nop` sink (discards everything, optionally
 * logging it), docs/runtime.md §3.6.
 */
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { propBool } from '../props.js';

const textDecoder = new TextDecoder();

export class LogSink implements SinkConnector {
  provision(): void {}
  async connect(): Promise<void> {}
  async collect(ctx: SinkContext, payload: SinkPayload): Promise<void> {
    ctx.logger.info('sink result for rule %s: %s', ctx.ruleId, textDecoder.decode(payload.bytes));
  }
  async close(): Promise<void> {}
}

export class NopSink implements SinkConnector {
  private log = false;
  provision(_ctx: SinkContext, props: Props): void {
    this.log = propBool(props, 'log', false);
  }
  async connect(): Promise<void> {}
  async collect(ctx: SinkContext, payload: SinkPayload): Promise<void> {
    if (this.log) ctx.logger.info('%s', textDecoder.decode(payload.bytes));
  }
  async close(): Promise<void> {}
}
