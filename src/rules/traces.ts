/**
 * The spans of traced records (docs/runtime.md §1.11), kept in memory with fixed bounds: the most recent traces of
 * each rule, and a cap on all of them; the oldest go first. `GET /trace/rule/{id}` lists a rule's trace ids,
 * `GET /trace/{traceId}` answers one trace as a tree of spans (eKuiper 2.x's `ChildSpan`).
 */
import { MAX_SPANS_PER_TRACE } from '../runtime/trace.js';
import type { TraceSpan } from '../contracts/index.js';

/** Most traces kept per rule. */
export const TRACES_PER_RULE = 100;
/** Most traces kept in all. */
export const TRACES_IN_ALL = 1000;

/** A span with the spans of the nodes its record went on to. */
export type SpanTree = TraceSpan & { ChildSpan?: SpanTree[] };

interface Trace {
  ruleID: string;
  spans: TraceSpan[];
}

export class TraceStore {
  /** insertion order is age order: the first entry is the oldest trace */
  private readonly traces = new Map<string, Trace>();
  private readonly byRule = new Map<string, string[]>();

  add(span: TraceSpan): void {
    let t = this.traces.get(span.traceID);
    if (!t) {
      t = { ruleID: span.ruleID, spans: [] };
      this.traces.set(span.traceID, t);
      const ids = this.byRule.get(span.ruleID) ?? [];
      ids.push(span.traceID);
      this.byRule.set(span.ruleID, ids);
      if (ids.length > TRACES_PER_RULE) this.traces.delete(ids.shift() as string);
      if (this.traces.size > TRACES_IN_ALL) this.dropOldest();
    }
    if (t.spans.length < MAX_SPANS_PER_TRACE) t.spans.push(span);
  }

  private dropOldest(): void {
    const [id, t] = this.traces.entries().next().value as [string, Trace];
    this.traces.delete(id);
    const ids = this.byRule.get(t.ruleID);
    const at = ids?.indexOf(id) ?? -1;
    if (ids && at >= 0) ids.splice(at, 1);
  }

  /** The rule's trace ids, newest first. */
  ruleTraces(ruleId: string): string[] {
    return [...(this.byRule.get(ruleId) ?? [])].reverse();
  }

  /** One trace as a tree from its first span (the source's); undefined when unknown. */
  trace(traceId: string): SpanTree | undefined {
    const t = this.traces.get(traceId);
    if (!t || t.spans.length === 0) return undefined;
    const nodes = new Map<string, SpanTree>();
    for (const s of t.spans) nodes.set(s.spanID, { ...s });
    let root: SpanTree | undefined;
    for (const s of t.spans) {
      const node = nodes.get(s.spanID) as SpanTree;
      const parent = s.parentSpanID === undefined ? undefined : nodes.get(s.parentSpanID);
      if (parent) (parent.ChildSpan ??= []).push(node);
      else root ??= node;
    }
    return root;
  }

  /** Forgets a deleted rule's traces. */
  forget(ruleId: string): void {
    for (const id of this.byRule.get(ruleId) ?? []) this.traces.delete(id);
    this.byRule.delete(ruleId);
  }
}
