/**
 * Rule tracing (docs/runtime.md §1.11, eKuiper 2.x's API): while a rule's tracing is on, every node a record passes
 * through records a span — its input, what it emitted, when — linked to the span of the node that emitted the record.
 * Off by default; the runtime's only cost when off is one null check per item per node (runtime/node.ts `take`).
 *
 * A span's parent travels beside the item, in a WeakMap keyed by the item object (nodes that pass an item on unchanged
 * keep its identity), set by {@link TracingReceiver} wrappers that replace a node's outputs while tracing is on: the
 * nodes' own emit path is untouched.
 */
import { randomBytes } from 'node:crypto';
import type { TraceSpan, TraceStrategy } from '../contracts/index.js';
import type { Item } from './items.js';
import { toJsonData } from '../values/json.js';
import type { Value } from '../values/value.js';

/** A node's output (runtime/node.ts `Receiver`, restated here so that the two files do not import each other). */
interface Receiver {
  readonly name: string;
  accept(item: Item): boolean;
}

/** Longest JSON text of one recorded value; longer ones are cut (bounded memory). */
const MAX_VALUE_CHARS = 2048;
/** Most outputs recorded per span (a window emission may hold many rows). */
const MAX_OUTPUTS = 16;
/** Most spans of one trace (a record fanning out to many rows). */
export const MAX_SPANS_PER_TRACE = 64;

/** A record's value as JSON data, cut when long. */
export function traceValue(item: unknown): unknown {
  let data: unknown;
  try {
    data = toJsonData(plainOf(item) as Value);
  } catch {
    data = String(item);
  }
  const text = JSON.stringify(data) ?? 'null';
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : data;
}

/** The values an item carries, without the runtime's wrappers. */
function plainOf(item: unknown): unknown {
  if (item === null || typeof item !== 'object') return item;
  const o = item as Record<string, unknown> & { kind?: string };
  switch (o.kind) {
    case 'tuple':
      return o.message;
    case 'join':
      return (o.tuples as unknown[]).map(plainOf);
    case 'rows':
      return (o.rows as unknown[]).map(plainOf);
    case 'units':
      return (o.units as unknown[]).length;
    case 'output':
      return o.rows;
    case 'error':
      return { error: o.message };
    case 'raw': {
      const decoded = o.decoded;
      if (Array.isArray(decoded)) return decoded;
      return payloadOf((o.ev as { payload: unknown }).payload);
    }
    default:
      // a connector's event queued as it is
      if ('payload' in o && 'meta' in o) return payloadOf(o.payload);
      return o;
  }
}

function payloadOf(p: unknown): unknown {
  if (p instanceof Uint8Array) return Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('utf8');
  return p;
}

/**
 * Ids are a random prefix drawn once per thread and a counter: unique within the server (each worker thread draws its
 * own prefix) and far cheaper than random bytes per span.
 */
const ID_PREFIX = randomBytes(8).toString('hex');
let idCounter = 0;
function newId(bytes: 8 | 16): string {
  const n = (++idCounter).toString(16).padStart(bytes === 16 ? 16 : 8, '0');
  return bytes === 16 ? `${ID_PREFIX}${n.slice(-16)}` : `${ID_PREFIX.slice(0, 8)}${n.slice(-8)}`;
}

/** A W3C `traceparent` (`00-<trace id>-<span id>-<flags>`) carried by a source event, for the `head` strategy. */
function incomingContext(item: Item): { traceID: string; spanID: string } | undefined {
  const o = item as unknown as { ev?: { meta?: Record<string, unknown> }; meta?: Record<string, unknown> };
  const meta = o.ev?.meta ?? o.meta;
  const tp = meta?.traceparent;
  if (typeof tp !== 'string') return undefined;
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(tp);
  return m ? { traceID: m[1], spanID: m[2] } : undefined;
}

/** One rule's tracing: opened by `trace/start`, dropped by `trace/stop` (or when the run ends). */
export class RuleTracer {
  /** the parent span of each traced item */
  private readonly parents = new WeakMap<object, TraceSpan>();
  /** the span being processed (nodes nest when one runs inside another: direct and fused nodes) */
  active: TraceSpan | undefined;
  private readonly spansPerTrace = new Map<string, number>();

  constructor(
    readonly ruleId: string,
    readonly strategy: TraceStrategy,
    /** where finished spans go (the trace store, or the worker's batch to the main thread) */
    private readonly emit: (span: TraceSpan) => void,
  ) {}

  /**
   * The span of `node` for `item`, or undefined when the item is not traced: a source starts a trace for every
   * record (`always`) or only for records that carry a trace context (`head`); other nodes trace what a traced node
   * emitted.
   */
  begin(node: string, item: Item, isSource: boolean): TraceSpan | undefined {
    if (item.kind === 'watermark') return undefined;
    const parent = this.parents.get(item);
    let traceID: string;
    let parentSpanID: string | undefined;
    if (parent !== undefined) {
      traceID = parent.traceID;
      parentSpanID = parent.spanID;
    } else if (isSource) {
      const incoming = incomingContext(item);
      if (incoming) {
        traceID = incoming.traceID;
        parentSpanID = incoming.spanID;
      } else if (this.strategy === 'always') traceID = newId(16);
      else return undefined;
    } else return undefined;
    const count = this.spansPerTrace.get(traceID) ?? 0;
    if (count >= MAX_SPANS_PER_TRACE) return undefined;
    this.spansPerTrace.set(traceID, count + 1);
    // the per-trace counts only bound runaway traces: forgotten once many traces went by
    if (this.spansPerTrace.size > 4096) this.spansPerTrace.clear();
    const span: TraceSpan = {
      name: node,
      traceID,
      spanID: newId(8),
      attribute: { input: traceValue(item) },
      startTime: Date.now(),
      endTime: 0,
      ruleID: this.ruleId,
    };
    if (parentSpanID !== undefined) span.parentSpanID = parentSpanID;
    return span;
  }

  end(span: TraceSpan, err?: unknown): void {
    span.endTime = Date.now();
    if (err !== undefined) span.attribute.error = err instanceof Error ? err.message : String(err);
    this.emit(span);
  }

  /** `from` emitted `item` while processing the active span: recorded there and linked as the item's parent. */
  emitted(item: Item, to: Receiver): void {
    const span = this.active;
    if (span === undefined || item.kind === 'watermark') return;
    const outputs = (span.attribute.output ??= []);
    if (outputs.length < MAX_OUTPUTS) outputs.push(traceValue(item));
    this.parents.set(item, span);
    // a sink has no queue of its own: its span is the hand-over of the rows
    if (to.name.startsWith('sink_')) {
      const sink = this.begin(to.name, item, false);
      if (sink) this.end(sink);
    }
  }
}

/** An output of a traced node: records what the node emitted, then hands it on. */
export class TracingReceiver implements Receiver {
  readonly name: string;
  constructor(
    readonly inner: Receiver,
    private readonly tracer: RuleTracer,
  ) {
    this.name = inner.name;
  }
  accept(item: Item): boolean {
    this.tracer.emitted(item, this.inner);
    return this.inner.accept(item);
  }
}
