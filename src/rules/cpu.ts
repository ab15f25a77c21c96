/**
 * Per-rule CPU usage over a sliding window (docs/rest-api.md §4.15): the nodes' cumulative `busyUs` is sampled every few
 * seconds into a ring per rule; usage = growth between the oldest sample inside the window and now. A rule whose value
 * has not moved since its last sample gets no new one (that sample still tells its value), so thousands of idle rules
 * cost a look each, nothing kept.
 */
export class CpuMeter {
  private readonly samples = new Map<string, Array<{ t: number; us: number }>>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly periodMs: number,
    private readonly windowMs: number,
    /** visits every rule with its cumulative busy µs, now */
    private readonly each: (visit: (id: string, us: number) => void) => void,
  ) {
    this.timer = setInterval(() => this.sample(), periodMs);
    this.timer.unref();
  }

  /** Starts the ring of a new rule with its current value (read by the caller: reading every rule here made creating n rules O(n²)). */
  track(id: string, currentUs: number): void {
    this.samples.set(id, [{ t: Date.now(), us: currentUs }]);
  }

  forget(id: string): void {
    this.samples.delete(id);
  }

  sample(now = Date.now()): void {
    this.each((id, us) => {
      const ring = this.samples.get(id);
      if (!ring) {
        this.samples.set(id, [{ t: now, us }]);
        return;
      }
      if (ring[ring.length - 1].us === us) return;
      ring.push({ t: now, us });
      // keep one sample at or before the window start as the baseline
      while (ring.length > 1 && ring[1].t <= now - this.windowMs) ring.shift();
    });
  }

  /** CPU ms of rule `id` over the last window (0 when unknown); `current` is its cumulative busy µs now. */
  usageMs(id: string, current: number | undefined, now = Date.now()): number {
    const ring = this.samples.get(id);
    if (!ring || ring.length === 0 || current === undefined) return 0;
    let base = ring[0];
    for (const s of ring) {
      if (s.t <= now - this.windowMs) base = s;
      else break;
    }
    return Math.max(0, Math.round((current - base.us) / 1000));
  }

  close(): void {
    clearInterval(this.timer);
  }
}
