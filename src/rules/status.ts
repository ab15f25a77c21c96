/**
 * What the rules service answers about its rules' runs (docs/rest-api.md §4.10, §4.13, §16.8): listings, status texts
 * and objects, summaries and the metrics snapshot — from a run on this node, else from what the node running a rule
 * publishes (docs/cluster.md §5). Reads only; every change goes through the service.
 */
import type { RuleState } from './state.js';
import { formatInvocation } from './schedule.js';
import { summarize, type RuleSummary } from './summary.js';
import { ListingIndex, type RowRead } from './listing.js';
import type { RuleListEntry, RuleMetricsSnapshot, RulePlacement } from './service-types.js';
import {
  connectionOf,
  healthChangesAt,
  healthFields,
  isSourceOrSink,
  statusGauge,
  type RuleStateName,
} from './health.js';

/** What the status reader sees of the service. */
export interface StatusContext {
  readonly rules: ReadonlyMap<string, { state: RuleState }>;
  /** the rule with that id (404 otherwise) */
  entry(id: string): { state: RuleState };
  /** rule ids, sorted */
  ids(): string[];
  runsHere(id: string): boolean;
  readonly placement: RulePlacement | undefined;
  timezone(): string | undefined;
}

/** One rule of `GET /rules/status/all`. */
export interface StatusAllRow {
  status: string;
  last_exception: string;
  exceptions_total: number;
}

export class RuleStatusView {
  /** `GET /rules` and `GET /rules/status/all` kept as text, patched as rules change (rules/listing.ts) */
  private readonly listIndex = new ListingIndex('[', ']');
  private readonly statusIndex = new ListingIndex('{', '}');
  /**
   * The rules whose `GET /rules` rows were read while they ran on a worker thread, by worker, and whether it answered
   * its heartbeat then: a worker that stops or starts answering changes their state (degraded) with no word from them.
   */
  private readonly byWorker = new Map<number, { answering: boolean; ids: Set<string> }>();
  private readonly workerOf = new Map<string, number>();

  constructor(private readonly ctx: StatusContext) {}

  /** What rule `id`'s rows show may have changed, or the rule was created or deleted. */
  touch(id: string): void {
    this.listIndex.touch(id);
    this.statusIndex.touch(id);
  }

  list(): RuleListEntry[] {
    return this.ctx.ids().map((id) => this.listEntry(id));
  }

  private listEntry(id: string): RuleListEntry {
    const s = this.ctx.rules.get(id)!.state;
    if (!this.ctx.placement) return { id, name: s.def.name || id, status: s.statusText(), state: s.health().state };
    const remote = this.ctx.runsHere(id) ? undefined : this.ctx.placement.elsewhere(id);
    const status = this.statusTextOf(id, remote);
    return {
      id,
      name: s.def.name || id,
      status,
      state: this.stateOf(id, status),
      node: this.nodesOf(id, remote).join(','),
    };
  }

  /** {@link list} as UTF-8 JSON, from the rows kept since the last listing. */
  listJson(): Buffer {
    // cluster mode: where a rule runs changes with no sign here, so its row is built every time
    if (this.ctx.placement) return Buffer.from(JSON.stringify(this.list()));
    const now = Date.now();
    this.checkWorkers();
    return this.listIndex.json(
      now,
      () => this.ctx.ids(),
      (id) => this.listRow(id, now),
    );
  }

  /** {@link statusAll} as UTF-8 JSON, from the rows kept since the last listing. */
  statusAllJson(): Buffer {
    if (this.ctx.placement) return Buffer.from(JSON.stringify(this.statusAll()));
    return this.statusIndex.json(
      Date.now(),
      () => this.ctx.ids(),
      (id) => {
        const state = this.ctx.rules.get(id)?.state;
        if (!state) return undefined;
        const json = `${JSON.stringify(id)}:${JSON.stringify(this.statusAllRow(id))}`;
        return { json, volatile: state.phase === 'running' && !state.nodesTell(), changesAt: 0 };
      },
    );
  }

  /** Rule `id`'s row of `GET /rules` on a single node, or undefined when the rule is gone. */
  private listRow(id: string, now: number): RowRead | undefined {
    const state = this.ctx.rules.get(id)?.state;
    this.leaveWorker(id);
    if (!state) return undefined;
    const name = state.def.name || id;
    const status = state.statusText();
    const health = state.health(now).state;
    const json = JSON.stringify({ id, name, status, state: health });
    if (state.phase !== 'running') return { json, volatile: false, changesAt: 0 };
    const placement = state.placement();
    if (placement) this.joinWorker(id, placement.worker, placement.answering);
    return { json, volatile: !state.nodesTell(), changesAt: healthChangesAt(state.nodes(), now) };
  }

  private joinWorker(id: string, worker: number, answering: boolean): void {
    let w = this.byWorker.get(worker);
    if (!w) this.byWorker.set(worker, (w = { answering, ids: new Set() }));
    w.ids.add(id);
    this.workerOf.set(id, worker);
  }

  private leaveWorker(id: string): void {
    const worker = this.workerOf.get(id);
    if (worker === undefined) return;
    this.workerOf.delete(id);
    this.byWorker.get(worker)?.ids.delete(id);
  }

  /**
   * Reads the rows of a worker's rules again when it stopped or started answering its heartbeat since the last
   * listing: asked of one rule there, whatever the number of its rules.
   */
  private checkWorkers(): void {
    for (const [worker, w] of this.byWorker) {
      let answering: boolean | undefined;
      for (const id of w.ids) {
        const p = this.ctx.rules.get(id)?.state.placement();
        if (p?.worker === worker) {
          answering = p.answering;
          break;
        }
        // gone, moved or stopped: read again, which files it where it runs now
        this.listIndex.touch(id);
        this.leaveWorker(id);
      }
      if (answering === undefined) {
        if (w.ids.size === 0) this.byWorker.delete(worker);
        continue;
      }
      if (answering === w.answering) continue;
      w.answering = answering;
      for (const id of w.ids) this.listIndex.touch(id);
    }
  }

  statusText(id: string): string {
    this.ctx.entry(id);
    return this.statusTextOf(id);
  }

  /** The state beside the status text (rules/health.ts): a rule run elsewhere reads it from its published text. */
  private stateOf(id: string, status: string): RuleStateName {
    if (this.ctx.runsHere(id)) return this.ctx.rules.get(id)!.state.health().state;
    return status === 'Running' ? 'running' : 'stopped';
  }

  /**
   * The status text of a rule known to exist: its own run's here, else the one its node publishes (`remote`, when
   * the caller already has it).
   */
  statusTextOf(id: string, remote = this.ctx.runsHere(id) ? undefined : this.ctx.placement?.elsewhere(id)): string {
    const s = this.ctx.rules.get(id)!.state;
    if (this.ctx.runsHere(id)) return s.statusText();
    if (remote) return remote.status;
    if (s.def.triggered === false || (s.phase === 'stopped' && s.stopText !== 'canceled manually.'))
      return s.statusText();
    return 'Stopped: waiting for a node of the cluster to run it.';
  }

  /** Cluster mode: the nodes running the rule now (this one, or those publishing its status). */
  nodesOf(id: string, remote = this.ctx.placement?.elsewhere(id)): string[] {
    const p = this.ctx.placement;
    if (!p) return [];
    const elsewhere = remote?.nodes ?? [];
    return this.ctx.runsHere(id) ? [p.nodeId, ...elsewhere.filter((n) => n !== p.nodeId)] : elsewhere;
  }

  /** `GET /rules/{id}/status` (docs/rest-api.md §4.10, Project shape). */
  status(id: string): Record<string, unknown> {
    const s = this.ctx.entry(id).state;
    if (!this.ctx.runsHere(id)) return this.statusElsewhere(id);
    const now = Date.now();
    const health = healthFields(s.health(now));
    if (s.phase !== 'running') return this.withNode(id, { message: s.statusText(), status: 'stopped', ...health });
    const o: Record<string, unknown> = {
      status: 'running',
      lastStartTimestamp: s.lastStart,
      lastStopTimestamp: s.lastStop,
      nextStartTimestamp: s.nextStart(),
    };
    const tz = this.ctx.timezone();
    for (const n of s.nodes()) {
      const p = `${n.name}_0_`;
      const latency = Math.max(0, Math.round(n.processLatencyUs));
      o[`${p}records_in_total`] = n.recordsIn;
      o[`${p}records_out_total`] = n.recordsOut;
      o[`${p}messages_processed_total`] = n.messagesProcessed;
      o[`${p}process_latency_us`] = latency;
      o[`${p}process_latency_ms`] = Math.floor(latency / 1000);
      o[`${p}buffer_length`] = n.bufferLength;
      o[`${p}last_invocation`] = formatInvocation(n.lastInvocation, tz);
      o[`${p}exceptions_total`] = n.exceptions;
      o[`${p}last_exception`] = n.lastException;
      o[`${p}last_exception_time`] = n.lastExceptionTime;
    }
    // a rule on a worker thread says which one, after eKuiper's keys, and whether it answers (docs/runtime.md §1.10); the counters are then
    // the last the worker sent
    const placement = s.placement();
    if (placement) {
      o.worker = placement.worker;
      if (!placement.answering) o.workerStatus = `worker ${placement.worker} is not answering its heartbeat`;
    }
    // Eddy's rule state, after eKuiper's keys (docs/rest-api.md §4.10)
    Object.assign(o, health);
    for (const n of s.nodes()) if (isSourceOrSink(n.name)) o[`${n.name}_0_connection`] = connectionOf(n, now);
    return this.withNode(id, o);
  }

  /**
   * A rule's status in a few numbers (`GET /eddy/rules`, the console's list): from its run here, else from what the
   * node running it publishes.
   */
  summary(id: string): RuleSummary {
    const e = this.ctx.entry(id);
    const status = this.statusTextOf(id);
    const base: { id: string; name: string; status: string; state: string; node?: string } = {
      id,
      name: e.state.def.name || id,
      status,
      state: this.stateOf(id, status),
    };
    if (this.ctx.placement) base.node = this.nodesOf(id).join(',');
    if (this.ctx.runsHere(id)) return summarize(base, this.status(id));
    const remote = this.ctx.placement?.elsewhere(id);
    if (!remote) return summarize(base, {});
    const { recordsIn, recordsOut, exceptions, lastException } = remote;
    return { ...base, recordsIn, recordsOut, exceptions, lastException };
  }

  /** Cluster mode: a status document says which node(s) run the rule (docs/cluster.md §5). */
  private withNode(id: string, o: Record<string, unknown>): Record<string, unknown> {
    if (this.ctx.placement) o.node = this.nodesOf(id).join(',');
    return o;
  }

  /**
   * The status of a rule another node runs, from what that node publishes (a request for it is normally forwarded to
   * that node, docs/cluster.md §5; this answers when it cannot be).
   */
  private statusElsewhere(id: string): Record<string, unknown> {
    const text = this.statusTextOf(id);
    const remote = this.ctx.placement?.elsewhere(id);
    if (text !== 'Running' || !remote) return this.withNode(id, { message: text, status: 'stopped' });
    return this.withNode(id, {
      status: 'running',
      recordsIn: remote.recordsIn,
      recordsOut: remote.recordsOut,
      exceptions: remote.exceptions,
      lastException: remote.lastException,
    });
  }

  /**
   * Every rule's run state and, while it runs, its node metrics (the Prometheus exporter, docs/rest-api.md §16.8):
   * `status` 1 running, 2 degraded, 0 stopped, −1 stopped by an error (rules/health.ts).
   */
  metricsSnapshot(): RuleMetricsSnapshot[] {
    // in a cluster each node exports the rules it runs (its series carry its `node` label)
    return this.ctx
      .ids()
      .filter((id) => this.ctx.runsHere(id))
      .map((id) => {
        const s = this.ctx.rules.get(id)!.state;
        const state = s.health().state;
        return { id, status: statusGauge(state), state, nodes: s.phase === 'running' ? s.nodes() : [] };
      });
  }

  /** `GET /rules/status/all` (docs/rest-api.md §4.13). */
  statusAll(): Record<string, StatusAllRow> {
    const out: Record<string, StatusAllRow> = {};
    for (const id of this.ctx.ids()) out[id] = this.statusAllRow(id);
    return out;
  }

  private statusAllRow(id: string): StatusAllRow {
    const s = this.ctx.rules.get(id)!.state;
    let lastException = '';
    let total = 0;
    const remote = this.ctx.runsHere(id) ? undefined : this.ctx.placement?.elsewhere(id);
    if (remote) {
      lastException = remote.lastException;
      total = remote.exceptions;
    } else if (s.phase === 'running') {
      let best = -1;
      for (const n of s.nodes()) {
        if (n.lastExceptionTime > best) {
          best = n.lastExceptionTime;
          lastException = n.lastException;
          total = n.exceptions;
        }
      }
    }
    return { status: this.statusTextOf(id), last_exception: lastException, exceptions_total: total };
  }
}
