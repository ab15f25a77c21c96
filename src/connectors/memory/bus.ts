/**
 * The memory topic bus of one server (docs/runtime.md §2.5): process-local topics that memory sinks publish rows to and
 * memory sources and lookup tables subscribe to, with MQTT-style filters (`+` one level, `#` the rest).
 *
 * One server runs rules on several threads (docs/runtime.md §1.10): each thread has a bus, and the buses of one server
 * meet on a BroadcastChannel named after the server's home. Each announces the filters it has listeners for; a row is
 * delivered on its own thread at once and posted to the channel only when another thread has a matching filter.
 *
 * The keyed tables behind memory lookup tables live on the bus of each thread that joins them. The main thread's are
 * opened by CREATE TABLE and hold every row published since; a table opened on a worker (by the first rule there
 * joining it) starts from the main thread's rows, asked for over the channel once its own subscription is announced.
 */
import { BroadcastChannel, isMainThread, threadId } from 'node:worker_threads';
import type { Value, ValueObject } from '../../values/value.js';
import { decodeValue, encodeValue, type Json } from '../../runtime/checkpoint.js';

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

/** The latest row per key value of one topic, shared by every memory lookup of the same topic and key on a thread. */
export class MemoryTable {
  readonly rows = new Map<string, ValueObject>();
  refs = 0;
  unsubscribe: (() => void) | undefined;
  /** resolved once the table holds the main thread's rows */
  ready: Promise<void> = Promise.resolve();
}

/** How long a worker's new table waits for the main thread's rows before it starts from its own. */
const TABLE_ROWS_WAIT_MS = 5000;

/** What the buses of one server say to each other. */
type BusNote =
  | { k: 'hello'; from: number }
  | { k: 'bye'; from: number }
  | { k: 'sub' | 'unsub'; from: number; filter: string }
  | { k: 'pub'; topic: string; row: Json; rowkind?: RowKind; key?: Json }
  /** a worker asks the main thread for the rows of table `table` (tableId) */
  | { k: 'rows?'; from: number; id: number; table: string }
  /** the main thread's answer: key text and row, in the table's order */
  | { k: 'rows'; to: number; id: number; rows: Array<[string, Json]> };

/** The id of the table of one topic and key. */
export function tableId(topic: string, key: string): string {
  return `${topic}\u0000${key}`;
}

/**
 * The topic bus of one server on this thread. Delivery on this thread is synchronous, to the other threads of the
 * server asynchronous; publishing without subscribers is a no-op.
 */
export class MemoryBus {
  private readonly exact = new Map<string, Set<Listener>>();
  private readonly wild = new Map<string, Set<Listener>>();
  private readonly channel: BroadcastChannel | undefined;
  /** the filters the other threads listen to, by thread */
  private readonly remote = new Map<number, Set<string>>();
  /** the memory lookup tables open on this thread, by {@link tableId} */
  readonly tables = new Map<string, MemoryTable>();
  private nextRequest = 1;
  private readonly asked = new Map<number, (rows: Array<[string, Json]>) => void>();

  /** `channel`: the name the buses of one server share (absent: this thread only) */
  constructor(channel?: string) {
    if (channel === undefined) return;
    this.channel = new BroadcastChannel(channel);
    // a thread's bus must not keep it alive
    this.channel.unref();
    this.channel.onmessage = (ev) => this.onNote((ev as { data: BusNote }).data);
    this.note({ k: 'hello', from: threadId });
  }

  subscribe(filter: string, listener: Listener): () => void {
    const map = hasWildcard(filter) ? this.wild : this.exact;
    let set = map.get(filter);
    if (!set) {
      map.set(filter, (set = new Set()));
      this.note({ k: 'sub', from: threadId, filter });
    }
    set.add(listener);
    return () => {
      set!.delete(listener);
      if (set!.size === 0 && map.get(filter) === set) {
        map.delete(filter);
        this.note({ k: 'unsub', from: threadId, filter });
      }
    };
  }

  /**
   * The main thread's rows of table `table` (key text and row), asked for by a worker whose own table subscribed
   * already: the main thread sees the subscription before the question, so every row it publishes after its answer
   * reaches the worker too. Empty on the main thread, without a channel, or when the main thread does not answer.
   */
  mainTableRows(table: string): Promise<Array<[string, ValueObject]>> {
    if (isMainThread || !this.channel) return Promise.resolve([]);
    const id = this.nextRequest++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.asked.delete(id);
        resolve([]);
      }, TABLE_ROWS_WAIT_MS);
      timer.unref();
      this.asked.set(id, (rows) => {
        clearTimeout(timer);
        resolve(rows.map(([k, row]) => [k, decodeValue(row) as ValueObject]));
      });
      this.note({ k: 'rows?', from: threadId, id, table });
    });
  }

  /** Leaves the other threads' buses (server shutdown). */
  close(): void {
    if (!this.channel) return;
    this.note({ k: 'bye', from: threadId });
    this.channel.close();
  }

  publish(msg: MemoryMessage): void {
    this.deliver(msg);
    if (this.remote.size > 0 && this.wantedElsewhere(msg.topic)) {
      const note: BusNote = { k: 'pub', topic: msg.topic, row: encodeValue(msg.row) };
      if (msg.rowkind !== undefined) note.rowkind = msg.rowkind;
      if (msg.key !== undefined) note.key = encodeValue(msg.key);
      this.note(note);
    }
  }

  private wantedElsewhere(topic: string): boolean {
    for (const filters of this.remote.values())
      for (const f of filters) if (f === topic || topicMatches(f, topic)) return true;
    return false;
  }

  private note(n: BusNote): void {
    try {
      this.channel?.postMessage(n);
    } catch {
      // a closed channel (shutdown): nothing to tell
    }
  }

  private onNote(n: BusNote): void {
    switch (n.k) {
      case 'hello':
        // a thread that just started learns what this one listens to
        for (const f of [...this.exact.keys(), ...this.wild.keys()]) this.note({ k: 'sub', from: threadId, filter: f });
        return;
      case 'bye':
        this.remote.delete(n.from);
        return;
      case 'sub': {
        let set = this.remote.get(n.from);
        if (!set) this.remote.set(n.from, (set = new Set()));
        set.add(n.filter);
        return;
      }
      case 'unsub':
        this.remote.get(n.from)?.delete(n.filter);
        return;
      case 'pub': {
        const msg: MemoryMessage = { topic: n.topic, row: decodeValue(n.row) as ValueObject };
        if (n.rowkind !== undefined) msg.rowkind = n.rowkind;
        if (n.key !== undefined) msg.key = decodeValue(n.key);
        this.deliver(msg);
        return;
      }
      case 'rows?': {
        if (!isMainThread) return;
        const t = this.tables.get(n.table);
        const rows: Array<[string, Json]> = t ? [...t.rows].map(([k, row]) => [k, encodeValue(row)]) : [];
        this.note({ k: 'rows', to: n.from, id: n.id, rows });
        return;
      }
      case 'rows':
        if (n.to !== threadId) return;
        this.asked.get(n.id)?.(n.rows);
        this.asked.delete(n.id);
        return;
    }
  }

  private deliver(msg: MemoryMessage): void {
    const direct = this.exact.get(msg.topic);
    if (direct) for (const l of direct) l(msg);
    if (this.wild.size === 0) return;
    for (const [filter, set] of this.wild) {
      if (topicMatches(filter, msg.topic)) for (const l of set) l(msg);
    }
  }
}
