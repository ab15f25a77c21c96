/**
 * Per-rule CPU usage over a sliding window (docs/rest-api.md §4.15): the nodes' cumulative `busyUs` is sampled every few
 * seconds into a ring per rule; usage = growth between the oldest sample inside the window and now.
 */
export class CpuMeter {
  private readonly samples = new Map<string, Array<{ t: number; us: number }>>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly periodMs: number,
    private readonly windowMs: number,
    /** cumulative busy µs of every rule, now */
    private readonly read: () => Map<string, number>,
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
    const current = this.read();
    for (const [id, us] of current) {
      let ring = this.samples.get(id);
      if (!ring) {
        ring = [];
        this.samples.set(id, ring);
      }
      ring.push({ t: now, us });
      // keep one sample at or before the window start as the baseline
      while (ring.length > 1 && ring[1].t <= now - this.windowMs) ring.shift();
    }
  }

  /** CPU ms of rule `id` over the last window (0 when unknown). */
  usageMs(id: string, current: number | undefined = this.read().get(id), now = Date.now()): number {
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
