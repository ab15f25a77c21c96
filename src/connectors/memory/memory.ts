/**
 * The memory connectors (docs/runtime.md §2.5, §3.6): process-local topics. Memory sinks publish every row to a topic;
 * memory sources subscribe with MQTT-style filters (`+` one level, `#` the rest); memory lookup tables keep the
 * latest row per key value of the topic and honour the row kinds published by sinks with `rowkindField`.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, LookupConnector, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { keyText } from '../../values/text.js';
import { prop, propString } from '../props.js';
import { hasWildcard, MemoryTable, tableId, type MemoryBus, type MemoryMessage, type RowKind } from './bus.js';

function checkTopic(topic: string, what: string): void {
  if (topic === '') throw new EddyError(ErrorCode.Executor, `${what} is required`);
}

export class MemorySource implements SourceConnector {
  private topic = '';
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly bus: MemoryBus) {}

  provision(_ctx: ConnectorContext, datasource: string): void {
    checkTopic(datasource, 'topic');
    if (datasource.includes('#') && !datasource.endsWith('#'))
      throw new Error(`invalid memory topic ${datasource}: # must be the last level`);
    this.topic = datasource;
  }

  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void): Promise<void> {
    this.unsubscribe = this.bus.subscribe(this.topic, (msg) => {
      emit({ payload: msg.row, meta: { topic: msg.topic }, timestamp: Date.now() });
    });
  }

  async close(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }
}

const ROW_KINDS = new Set(['insert', 'update', 'upsert', 'delete']);

export class MemorySink implements SinkConnector {
  private topic = '';
  private resendTopic = '';
  private rowkindField: string | undefined;
  private keyField: string | undefined;

  constructor(private readonly bus: MemoryBus) {}

  provision(_ctx: SinkContext, props: Props): void {
    this.topic = propString(props, 'topic', '');
    if (this.topic === '') throw new EddyError(ErrorCode.Executor, 'topic is required');
    if (hasWildcard(this.topic))
      throw new EddyError(ErrorCode.Executor, `invalid memory topic ${this.topic}: wildcard found`);
    this.resendTopic = propString(props, 'resendDestination', '');
    this.rowkindField = propString(props, 'rowkindField') || undefined;
    this.keyField = propString(props, 'keyField') || undefined;
    if (this.rowkindField && !this.keyField) {
      throw new EddyError(ErrorCode.Executor, 'keyField is required when rowkindField is set');
    }
  }

  async connect(): Promise<void> {}

  async collect(ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const data = payload.data;
    const rows: ValueObject[] = Array.isArray(data)
      ? (data.filter((r) => isObject(r)) as ValueObject[])
      : isObject(data)
        ? [data]
        : [];
    if (rows.length === 0 && data !== null && !Array.isArray(data) && !isObject(data)) {
      throw new Error(`memory sink requires map data, got ${typeof data}`);
    }
    const target = payload.resend && this.resendTopic !== '' ? this.resendTopic : this.topic;
    const dynamic = target.includes('{{');
    for (const row of rows) {
      const topic = dynamic ? ctx.render(target, row) : target;
      const msg: MemoryMessage = { topic, row };
      if (this.rowkindField) {
        const kind = row[this.rowkindField];
        if (kind === undefined || kind === null) msg.rowkind = 'upsert';
        else if (typeof kind === 'string' && ROW_KINDS.has(kind)) msg.rowkind = kind as RowKind;
        else throw new Error(`invalid rowkind ${String(kind)}`);
        const key = row[this.keyField!];
        if (key === undefined || key === null) throw new Error(`key field ${this.keyField} not found in data`);
        msg.key = key;
      }
      this.bus.publish(msg);
    }
  }

  async close(): Promise<void> {}
}

export class MemoryLookup implements LookupConnector {
  private topic = '';
  private key = '';
  private table: MemoryTable | undefined;

  constructor(private readonly bus: MemoryBus) {}

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    checkTopic(datasource, 'topic');
    this.topic = datasource;
    const key = prop(props, 'key');
    if (typeof key !== 'string' || key === '')
      throw new EddyError(ErrorCode.Executor, 'Option "key" is required for memory lookup table.');
    this.key = key;
  }

  async connect(): Promise<void> {
    const id = tableId(this.topic, this.key);
    const tables = this.bus.tables;
    let table = tables.get(id);
    if (!table) {
      const t = new MemoryTable();
      const key = this.key;
      // the keys changed here while the main thread's rows are on their way: those rows are older
      let changed: Set<string> | undefined = new Set();
      t.unsubscribe = this.bus.subscribe(this.topic, (msg) => {
        const kv = msg.row[key] ?? msg.key;
        if (kv === undefined || kv === null) return;
        const k = keyText(kv);
        changed?.add(k);
        if (msg.rowkind === 'delete') t.rows.delete(k);
        else t.rows.set(k, msg.row);
      });
      t.ready = this.bus.mainTableRows(id).then((rows) => {
        for (const [k, row] of rows) if (!changed!.has(k)) t.rows.set(k, row);
        changed = undefined;
      });
      tables.set(id, (table = t));
    }
    table.refs++;
    this.table = table;
    await table.ready;
  }

  async lookup(
    _ctx: ConnectorContext,
    _fields: readonly string[],
    keys: readonly string[],
    values: readonly Value[],
  ): Promise<ValueObject[]> {
    const t = this.table;
    if (!t) return [];
    if (keys.length === 1 && keys[0] === this.key) {
      if (values[0] === null || values[0] === undefined) return [];
      const hit = t.rows.get(keyText(values[0]));
      return hit ? [hit] : [];
    }
    const out: ValueObject[] = [];
    for (const row of t.rows.values()) {
      let ok = true;
      for (let i = 0; i < keys.length && ok; i++) {
        const v = row[keys[i]];
        ok = v !== undefined && v !== null && keyText(v) === keyText(values[i]);
      }
      if (ok) out.push(row);
    }
    return out;
  }

  async close(): Promise<void> {
    const t = this.table;
    this.table = undefined;
    if (!t) return;
    t.refs--;
    if (t.refs <= 0) {
      t.unsubscribe?.();
      for (const [id, v] of this.bus.tables) if (v === t) this.bus.tables.delete(id);
    }
  }
}
