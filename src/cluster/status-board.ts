/**
 * The status of rules as the nodes running them publish it (docs/cluster.md §5). Every second, each node writes one
 * entry in the `status` table — the status text and totals of every rule it runs — when it changed; every node
 * watches the table. `GET /rules`, `GET /rules/status/all`, the CPU usage and the console's list are answered from it
 * by any node without asking another, at most a second behind; the full status of one rule is forwarded to the node
 * running it (api/cluster.ts), where it is exact.
 */
import type { Logger } from 'pino';
import type { RemoteRuleStatus } from '../rules/service.js';
import { keyOf, partsOf, type Change, type Table, type Watch } from './backend.js';

/** One rule in a node's entry: status text, records in, records out, exceptions, last exception, CPU ms (30 s). */
export type PublishedRule = [string, number, number, number, string, number];

/** What the rules service says about the rules running here. */
export interface LocalRules {
  /** the rules this node runs, with their published form */
  published(): Record<string, PublishedRule>;
}

const PUBLISH_EVERY_MS = 1000;

export class StatusBoard {
  private readonly docs = new Map<string, Record<string, PublishedRule>>();
  private watch: Watch | undefined;
  private timer: NodeJS.Timeout | undefined;
  private last = '';
  private publishing = false;

  constructor(
    private readonly table: Table,
    private readonly nodeId: string,
    private readonly local: LocalRules,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.watch = this.table.watch('', (c) => this.onChange(c), { initial: true });
    await this.watch.ready;
    this.timer = setInterval(() => void this.publish(), PUBLISH_EVERY_MS);
    this.timer.unref();
  }

  private onChange(c: Change): void {
    const node = partsOf(c.key)[0];
    if (c.value === undefined) {
      this.docs.delete(node);
      return;
    }
    try {
      this.docs.set(node, JSON.parse(c.value) as Record<string, PublishedRule>);
    } catch {
      this.docs.delete(node);
    }
  }

  /** Writes this node's entry when it changed since the last write. */
  async publish(): Promise<void> {
    if (this.publishing) return;
    this.publishing = true;
    try {
      const text = JSON.stringify(this.local.published());
      if (text === this.last) return;
      await this.table.put(keyOf(this.nodeId), text);
      this.last = text;
    } catch (err) {
      this.logger.debug({ err }, 'cannot publish the status of the rules of this node');
    } finally {
      this.publishing = false;
    }
  }

  /**
   * Rule `id` as the given nodes (those running it) published it, combined for a parallel rule: running when any
   * instance runs, totals summed. Before a node's first publication the rule reads as starting there.
   */
  combine(id: string, nodes: readonly string[]): RemoteRuleStatus {
    const out: RemoteRuleStatus = {
      nodes: [...nodes],
      status: '',
      recordsIn: 0,
      recordsOut: 0,
      exceptions: 0,
      lastException: '',
      cpuMs: 0,
    };
    const texts: string[] = [];
    for (const n of nodes) {
      const r = this.docs.get(n)?.[id];
      if (!r) continue;
      texts.push(r[0]);
      out.recordsIn += r[1];
      out.recordsOut += r[2];
      out.exceptions += r[3];
      if (r[4]) out.lastException = r[4];
      out.cpuMs += r[5];
    }
    out.status = texts.includes('Running') ? 'Running' : (texts[0] ?? `Stopped: starting on ${nodes.join(', ')}.`);
    return out;
  }

  async stop(leave: boolean): Promise<void> {
    clearInterval(this.timer);
    await this.watch?.stop();
    if (leave) await this.table.delete(keyOf(this.nodeId)).catch(() => 0);
  }
}
