/**
 * A rule's status in a few numbers: what the console's rules list shows (`GET /eddy/rules`) and what a cluster node
 * publishes every second about the rules it runs (docs/cluster.md §5).
 */

/** A rule with its totals summed over its source and sink nodes (one row of `GET /eddy/rules`). */
export interface RuleSummary {
  id: string;
  name: string;
  status: string;
  /** the state beside the status text (rules/health.ts) */
  state?: string;
  recordsIn: number;
  recordsOut: number;
  exceptions: number;
  lastException: string;
  /** cluster mode: the node(s) running it */
  node?: string;
}

export function summarize(
  rule: { id: string; name: string; status: string; state?: string },
  st: Record<string, unknown>,
): RuleSummary {
  let recordsIn = 0;
  let recordsOut = 0;
  let exceptions = 0;
  let lastException = '';
  for (const [k, v] of Object.entries(st)) {
    if (k.startsWith('source_') && k.endsWith('_records_in_total')) recordsIn += Number(v) || 0;
    else if (k.startsWith('sink_') && k.endsWith('_records_out_total')) recordsOut += Number(v) || 0;
    else if (k.endsWith('_exceptions_total')) exceptions += Number(v) || 0;
    else if (k.endsWith('_last_exception') && typeof v === 'string' && v !== '') lastException = v;
  }
  return { ...rule, recordsIn, recordsOut, exceptions, lastException };
}
