/**
 * The memory topic bus of one server (docs/runtime.md §2.5): process-local topics that memory sinks publish rows to and
 * memory sources and lookup tables subscribe to, with MQTT-style filters (`+` one level, `#` the rest).
 */
import type { Value, ValueObject } from '../../values/value.js';

export type RowKind = 'insert' | 'update' | 'upsert' | 'delete';

export interface MemoryMessage {
  topic: string;
  row: ValueObject;
  /** set by sinks with `rowkindField` */
  rowkind?: RowKind;
  /** the value of the sink's `keyField` */
  key?: Value;
}

type Listener = (msg: MemoryMessage) => void;

/** True when topic `topic` matches filter `filter` (`+` one level, `#` the remaining levels). */
export function topicMatches(filter: string, topic: string): boolean {
  if (filter === topic) return true;
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return i === f.length - 1;
    if (i >= t.length) return false;
    if (f[i] !== '+' && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

export function hasWildcard(topic: string): boolean {
  return topic.includes('+') || topic.includes('#');
}

/** The topic bus of one server. Delivery is synchronous; publishing without subscribers is a no-op. */
export class MemoryBus {
  private readonly exact = new Map<string, Set<Listener>>();
  private readonly wild = new Map<string, Set<Listener>>();

  subscribe(filter: string, listener: Listener): () => void {
    const map = hasWildcard(filter) ? this.wild : this.exact;
    let set = map.get(filter);
    if (!set) map.set(filter, (set = new Set()));
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0) map.delete(filter);
    };
  }

  publish(msg: MemoryMessage): void {
    const direct = this.exact.get(msg.topic);
    if (direct) for (const l of direct) l(msg);
    if (this.wild.size === 0) return;
    for (const [filter, set] of this.wild) {
      if (topicMatches(filter, msg.topic)) for (const l of set) l(msg);
    }
  }
}
