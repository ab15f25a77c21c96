/**
 * The instances of a rule with `parallelism` > 1 run as one topology (docs/cluster.md §6, docs/runtime.md §1.10): each
 * instance is a topology of its own (its MQTT sources share the topics through `$share/<rule id>/…`, its state is its
 * own), and the rules service sees one topology whose metrics are their sums. The cluster builds those of a node;
 * the worker pool of a single server builds all of them, each on a worker.
 */
import type { ValueObject } from '../values/value.js';
import { NodeMetrics, type PrintableTopo, type Topology } from '../contracts/index.js';

/** Several instances of one rule run as one topology. */
export class InstancesTopology implements Topology {
  constructor(readonly parts: readonly Topology[]) {}

  /** Instances placed on worker threads are planned there (docs/runtime.md §1.6). */
  async prepare(): Promise<void> {
    await Promise.all(this.parts.map((p) => p.prepare?.()));
  }

  release(): void {
    for (const p of this.parts) p.release?.();
  }

  plannedReads(): readonly string[] | undefined {
    return this.parts[0].plannedReads?.();
  }

  async open(): Promise<void> {
    try {
      await Promise.all(this.parts.map((p) => p.open()));
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.parts.map((p) => p.close().catch(() => undefined)));
  }

  onFatal(cb: (err: Error) => void): void {
    let reported = false;
    for (const p of this.parts)
      p.onFatal((err) => {
        if (!reported) {
          reported = true;
          cb(err);
        }
      });
  }

  onEnd(cb: () => void): void {
    let ended = 0;
    for (const p of this.parts) p.onEnd?.(() => ++ended === this.parts.length && cb());
  }

  /** The instances' node metrics summed position by position (all instances have the same nodes). */
  nodes(): readonly NodeMetrics[] {
    const lists = this.parts.map((p) => p.nodes());
    return lists[0].map((first, i) => {
      const sum = new NodeMetrics(first.name);
      for (const list of lists) {
        const n = list[i];
        if (!n) continue;
        sum.recordsIn += n.recordsIn;
        sum.recordsOut += n.recordsOut;
        sum.messagesProcessed += n.messagesProcessed;
        sum.bufferLength += n.bufferLength;
        sum.busyUs += n.busyUs;
        sum.exceptions += n.exceptions;
        sum.latencySumUs += n.latencySumUs;
        if (n.lastInvocation > sum.lastInvocation) sum.lastInvocation = n.lastInvocation;
        if (n.lastExceptionTime > sum.lastExceptionTime) {
          sum.lastExceptionTime = n.lastExceptionTime;
          sum.lastException = n.lastException;
        }
        if (n.latencyCounts) {
          const counts = (sum.latencyCounts ??= new Float64Array(n.latencyCounts.length));
          n.latencyCounts.forEach((c, k) => (counts[k] += c));
        }
      }
      return sum;
    });
  }

  printable(): PrintableTopo {
    return this.parts[0].printable();
  }

  async resetOffset(streamName: string, input: ValueObject): Promise<void> {
    for (const p of this.parts) {
      if (!p.resetOffset) throw new Error('the instances of this rule cannot reset the offset of their sources');
      await p.resetOffset(streamName, input);
    }
  }

  startsCold(): boolean {
    return this.parts.some((p) => p.startsCold?.() === true);
  }

  /** The worker of the first instance (each instance says its own in the logs). */
  placement(): { worker: number; answering: boolean } | undefined {
    return this.parts[0].placement?.();
  }
}
