/**
 * The simulator source (docs/runtime.md §2.5 simulator): replays `data`, a non-empty list of objects, one row every
 * `interval` ms, the first one at once; with `loop` it starts over after the last row, otherwise the source ends
 * (a bounded source: the rule finishes normally). With the default JSON format the rows go through the stream's
 * decoder like any JSON payload (so a declared schema types them); FORMAT is otherwise ignored and the rows are
 * handed over decoded as schemaless JSON.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { ValueObject } from '../../values/value.js';
import { JsonFormat } from '../formats/json.js';
import { prop, propBool, propInt } from '../props.js';

const SHIPPED: { data: unknown[]; interval: number; loop: boolean } = {
  data: [{ temperature: 22.5, humidity: 50 }],
  interval: 1000,
  loop: true,
};

function bad(message: string): EddyError {
  return new EddyError(ErrorCode.Executor, message);
}

export class SimulatorSource implements SourceConnector {
  /** each row as JSON text, decoded afresh for every emission so rules never share a row object */
  private rows: Uint8Array[] = [];
  private interval = SHIPPED.interval;
  private loop = SHIPPED.loop;
  private asBytes = true;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly json = new JsonFormat({ schema: null });

  provision(_ctx: ConnectorContext, _datasource: string, props: Props): void {
    const data = prop(props, 'data') ?? SHIPPED.data;
    if (!Array.isArray(data) || data.length === 0)
      throw bad('simulator property data must be a non-empty list of objects');
    const enc = new TextEncoder();
    this.rows = data.map((row) => {
      if (typeof row !== 'object' || row === null || Array.isArray(row))
        throw bad('simulator property data must be a non-empty list of objects');
      return enc.encode(JSON.stringify(row));
    });
    try {
      this.interval = propInt(props, 'interval', SHIPPED.interval);
      this.loop = propBool(props, 'loop', SHIPPED.loop);
    } catch (e) {
      throw bad((e as Error).message);
    }
    if (this.interval < 1) throw bad('simulator property interval must be at least 1');
    const format = prop(props, 'format');
    this.asBytes = format === undefined || format === 'json';
  }

  async connect(
    _ctx: ConnectorContext,
    emit: (ev: SourceEvent) => void,
    _onError: (err: Error) => void,
    onEnd?: () => void,
  ): Promise<void> {
    this.closed = false;
    let next = 0;
    const tick = (): void => {
      this.timer = undefined;
      if (this.closed) return;
      const row = this.rows[next];
      emit({
        payload: this.asBytes ? row.slice() : (this.json.decode(row) as ValueObject),
        meta: {},
        timestamp: Date.now(),
      });
      next++;
      if (next === this.rows.length) {
        if (!this.loop) {
          onEnd?.();
          return;
        }
        next = 0;
      }
      this.timer = setTimeout(tick, this.interval);
    };
    tick();
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
