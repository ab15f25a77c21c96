/**
 * Time as the runtime sees it. Processing-time windows, session timeouts, sliding delays and checkpoint ticks all
 * go through a {@link Clock} so that tests can drive time by hand ({@link ManualClock}).
 */

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Unix ms */
  now(): number;
  /** runs `fn` once after `ms` (≥ 0) milliseconds */
  setTimeout(fn: () => void, ms: number): TimerHandle;
}

/** The wall clock with node's timers (unref'd: a running rule alone does not keep the process alive). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
};

interface ManualTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that only moves when told to. `advance`/`set` fire due timers in time order, setting `now()` to each
 * timer's due time while it runs, so a timer sees exactly its scheduled instant.
 */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: ManualTimer[] = [];

  constructor(start: number) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer: ManualTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  /** moves time to `to`, firing every timer due on the way (including timers those timers schedule) */
  set(to: number): void {
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      let next: ManualTimer | undefined;
      for (const t of this.timers) {
        if (t.at <= to && (next === undefined || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      }
      if (!next) break;
      next.cancelled = true;
      if (next.at > this.current) this.current = next.at;
      next.fn();
    }
    if (to > this.current) this.current = to;
  }

  advance(ms: number): void {
    this.set(this.current + ms);
  }

  /** number of timers still pending */
  pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }
}
