/**
 * The two outcomes a topology reports to the rule's state machine — a fatal error, and the end of its bounded
 * sources — each delivered once, whether the listener registers before or after it happens.
 */
export class TopologySignals {
  private fatalCb: ((err: Error) => void) | null = null;
  private fatalErr: Error | null = null;
  private endCb: (() => void) | null = null;
  private endPending = false;

  onFatal(cb: (err: Error) => void): void {
    this.fatalCb = cb;
    if (this.fatalErr) {
      const e = this.fatalErr;
      this.fatalErr = null;
      cb(e);
    }
  }

  onEnd(cb: () => void): void {
    this.endCb = cb;
    if (this.endPending) {
      this.endPending = false;
      this.endCb = null;
      cb();
    }
  }

  /** Reports a fatal error; only the first one is kept while nobody listens. */
  fail(err: Error): void {
    if (this.fatalCb) {
      const cb = this.fatalCb;
      this.fatalCb = null;
      cb(err);
    } else if (!this.fatalErr) {
      this.fatalErr = err;
    }
  }

  /** Reports that every bounded source ended and what they read was handed on. */
  end(): void {
    if (this.endCb) {
      const cb = this.endCb;
      this.endCb = null;
      cb();
    } else {
      this.endPending = true;
    }
  }
}
