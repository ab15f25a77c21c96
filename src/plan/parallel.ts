/**
 * Whether a planned rule may run as several instances at once (the rule option `parallelism`, docs/cluster.md §6):
 * each instance sees only a share of the messages, so the rule must keep no state across records, and its streams
 * must be MQTT topics that a broker can share between subscribers (`$share/<group>/<topic>`). The one place both
 * questions are answered, for cluster placement and for any executor that spreads instances.
 */
import type { QueryPlan } from './plan.js';

/** Why a plan keeps state across records (then its instances would each see only part of it); undefined if none. */
export function statefulReason(plan: QueryPlan): string | undefined {
  if (plan.window) return 'it has a window';
  if (plan.joins.length > 0) return 'it joins streams';
  if (plan.isAggregate) return 'it aggregates';
  if (plan.analytic) return 'it calls analytic functions';
  if (plan.isEventTime) return 'it runs on event time';
  if (plan.usesHits || plan.usesAggHits) return 'it reads last_hit_count() or last_hit_time()';
  if (plan.sources.some((s) => s.role === 'table')) return 'it reads a scan table';
  return undefined;
}

/**
 * What keeps a plan from running as `parallelism` instances sharing its topics; undefined when it can (or when
 * `parallelism` is 1). The text completes "cannot run with parallelism N: …".
 */
export function parallelismProblem(plan: QueryPlan, parallelism: number): string | undefined {
  if (parallelism <= 1) return undefined;
  const stateful = statefulReason(plan);
  if (stateful) return `${stateful}; only a stateless rule (filter, projection) can run as several instances`;
  for (const s of plan.sources) {
    if (s.role !== 'stream') continue;
    const type = (s.def.options.TYPE || 'mqtt').toLowerCase();
    if (type !== 'mqtt') return `stream ${s.name} is of type ${type}; instances share MQTT topics only`;
    if (s.def.options.SHARED === true) return `stream ${s.name} is SHARED; instances need a subscription of their own`;
  }
  return undefined;
}
