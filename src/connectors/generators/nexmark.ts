/**
 * The nexmark source (docs/connectors.md nexmark): generates the Nexmark event sequence in-process at `qps` events
 * per second, emitting the kinds not excluded (`excludePerson`, `excludeAuction`, `excludeBid`) as decoded rows.
 * `qps` paces the whole sequence, excluded events included, so two nexmark streams started together stay on the
 * same event numbers and their ids join. At most `bufferSize` events are generated per turn of the event loop;
 * when the rule cannot keep up the sequence falls behind its schedule instead of dropping events.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { ValueObject } from '../../values/value.js';
import { propBool, propInt } from '../props.js';
import { nexmarkEvent, nexmarkKind, type NexmarkKind } from './nexmark-gen.js';

const EMPTY_META: ValueObject = Object.freeze({}) as ValueObject;

interface NexmarkSettings {
  qps: number;
  bufferSize: number;
  include: Record<NexmarkKind, boolean>;
}

function nexmarkSettings(props: Props): NexmarkSettings {
  try {
    const qps = propInt(props, 'qps', 1000);
    const bufferSize = propInt(props, 'bufferSize', 1024);
    if (qps <= 0) throw new Error(`nexmark qps must be a positive integer, got ${qps}`);
    if (bufferSize <= 0) throw new Error(`nexmark bufferSize must be a positive integer, got ${bufferSize}`);
    const include = {
      person: !propBool(props, 'excludePerson', false),
      auction: !propBool(props, 'excludeAuction', false),
      bid: !propBool(props, 'excludeBid', false),
    };
    if (!include.person && !include.auction && !include.bid) throw new Error('nexmark excludes every event kind');
    return { qps, bufferSize, include };
  } catch (e) {
    throw new EddyError(ErrorCode.Executor, (e as Error).message);
  }
}

export class NexmarkSource implements SourceConnector {
  private s!: NexmarkSettings;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private closed = false;
  /** the next event number */
  private n = 0;

  provision(_ctx: ConnectorContext, _datasource: string, props: Props): void {
    this.s = nexmarkSettings(props);
  }

  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void): Promise<void> {
    this.closed = false;
    this.n = 0;
    const { qps, bufferSize, include } = this.s;
    const start = Date.now();
    const tick = (): void => {
      this.timer = undefined;
      this.immediate = undefined;
      if (this.closed) return;
      const now = Date.now();
      const due = Math.floor(((now - start) * qps) / 1000) + 1;
      const until = Math.min(due, this.n + bufferSize);
      for (let n = this.n; n < until; n++) {
        if (include[nexmarkKind(n)]) emit({ payload: nexmarkEvent(n, now), meta: EMPTY_META, timestamp: now });
      }
      this.n = until;
      if (this.closed) return;
      if (this.n < due) this.immediate = setImmediate(tick);
      else this.timer = setTimeout(tick, Math.max(1, Math.ceil(((this.n - due + 1) * 1000) / qps)));
    };
    tick();
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }
}
