/**
 * A rule's state as an operator needs it (docs/runtime.md §1.5): not only whether it was asked to run, but whether
 * it does — a rule whose source has not connected, or whose sink has failed every send for a while, is `degraded`.
 * The status text stays eKuiper 1.14's (`Running`, `Stopped: <reason>`); the state, its reason and the last error
 * are read beside it from the run's phase and its nodes' metrics (which a worker thread sends with its counters).
 */
import type { NodeMetrics } from '../contracts/index.js';

export type RuleStateName = 'starting' | 'running' | 'degraded' | 'stopping' | 'stopped' | 'stoppedByError';

/** A sink whose sends have all failed for this long makes its rule degraded. */
export const SINK_FAILING_MS = 5000;

/** What the rule's state machine knows of its run (rules/state.ts). */
export interface RunFacts {
  /** `running` while asked to run (also while opening or waiting to restart) */
  phase: 'stopped' | 'running' | 'waiting' | 'terminated';
  /** the run is opening, closing on a user stop, or waiting for a restart after an error */
  activity: 'starting' | 'stopping' | 'restarting' | undefined;
  /** the reason of `Stopped: <reason>` */
  stopText: string;
  /** the last error of a run (open failure, fatal error) and its Unix ms */
  lastError: string;
  lastErrorTime: number;
  /** a rule on a worker thread that does not answer its heartbeat: why (docs/runtime.md §1.10) */
  stuck?: string;
}

export interface RuleHealth {
  state: RuleStateName;
  /** why the rule is degraded or stopped by an error; empty otherwise */
  reason: string;
  /** the latest of the run's errors and its nodes' exceptions */
  lastError: string;
  lastErrorTime: number;
}

/** Stop reasons that are not errors: a user stop, a bounded source that ended (rules/state.ts). */
const CLEAN_STOPS = new Set(['canceled manually.', 'finished, its source ended and every record was delivered.']);

export function isSourceOrSink(name: string): boolean {
  return name.startsWith('source_') || name.startsWith('sink_');
}

/**
 * The connection of a source or sink node as shown: a sink failing every send for {@link SINK_FAILING_MS} is
 * disconnected whatever its connector said last.
 */
export function connectionOf(n: NodeMetrics, now: number): string {
  if (n.failingSince > 0 && now - n.failingSince >= SINK_FAILING_MS && !n.connection.startsWith('disconnected')) {
    return `disconnected: every send failed for ${Math.round((now - n.failingSince) / 1000)} s: ${n.lastException}`;
  }
  return n.connection;
}

/**
 * The Unix ms from which a running rule's health may read differently though nothing changed (a sink failing since
 * `failingSince` counts as disconnected {@link SINK_FAILING_MS} later), or 0 when it cannot: the listings read such a
 * rule again then (rules/listing.ts).
 */
export function healthChangesAt(nodes: readonly NodeMetrics[], now: number): number {
  let at = 0;
  for (const n of nodes) {
    if (!isSourceOrSink(n.name) || n.failingSince <= 0) continue;
    const due = n.failingSince + SINK_FAILING_MS;
    if (due > now && (at === 0 || due < at)) at = due;
  }
  return at;
}

/** Why a running rule does not work as it should, or '' when it does. */
function degradation(nodes: readonly NodeMetrics[], now: number, opening: boolean): string {
  for (const n of nodes) {
    if (!isSourceOrSink(n.name)) continue;
    const c = connectionOf(n, now);
    if (c.startsWith('disconnected')) return `${n.name}: ${c}`;
    if (c === 'connecting' && !opening) return `${n.name}: not connected yet`;
  }
  return '';
}

export function ruleHealth(run: RunFacts, nodes: readonly NodeMetrics[], now = Date.now()): RuleHealth {
  let lastError = run.lastError;
  let lastErrorTime = run.lastErrorTime;
  for (const n of nodes) {
    if (n.lastExceptionTime > lastErrorTime && n.lastException !== '') {
      lastError = n.lastException;
      lastErrorTime = n.lastExceptionTime;
    }
  }
  const out = (state: RuleStateName, reason = ''): RuleHealth => ({ state, reason, lastError, lastErrorTime });
  if (run.activity === 'stopping') return out('stopping');
  if (run.phase === 'waiting' || run.phase === 'terminated') return out('stopped');
  if (run.phase === 'stopped') {
    return CLEAN_STOPS.has(run.stopText) ? out('stopped') : out('stoppedByError', run.stopText);
  }
  if (run.activity === 'restarting') return out('degraded', `restarting after an error: ${run.lastError}`);
  if (run.stuck) return out('degraded', run.stuck);
  const why = degradation(nodes, now, run.activity === 'starting');
  if (why !== '') return out('degraded', why);
  return out(run.activity === 'starting' ? 'starting' : 'running');
}

/** `kuiper_rule_status`: 1 running (or starting), 2 degraded, 0 stopped (or stopping), −1 stopped by an error. */
export function statusGauge(state: RuleStateName): 1 | 2 | 0 | -1 {
  switch (state) {
    case 'running':
    case 'starting':
      return 1;
    case 'degraded':
      return 2;
    case 'stoppedByError':
      return -1;
    default:
      return 0;
  }
}

/** The fields a status object gains (`GET /rules/{id}/status`, docs/rest-api.md §4.10). */
export function healthFields(h: RuleHealth): Record<string, unknown> {
  const o: Record<string, unknown> = { state: h.state };
  if (h.reason !== '') o.stateReason = h.reason;
  o.lastError = h.lastError;
  o.lastErrorTime = h.lastErrorTime;
  return o;
}
