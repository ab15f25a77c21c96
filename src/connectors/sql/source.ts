/**
 * The sql source (docs/runtime.md §2.5 sql): every `interval` ms runs one query and emits each row as its own event.
 * The query is either generated from `internalSqlQueryCfg` (`select * from <table> [where <idx> > <last> AND …]
 * [order by <idx> ASC, …] [limit N]`) or rendered from `templateSqlQueryCfg.templateSql` with the current index
 * values. After each emitted row the index values advance to that row's values, so every poll reads only new rows.
 * A failed query travels as an error record and the next tick tries again (the pool reconnects).
 *
 * The index values are the source's offset: {@link SqlSource.offset} and {@link SqlSource.rewind} read and set
 * them, for a runtime that saves source offsets in checkpoints.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import { DateTime, type Value, type ValueObject } from '../../values/value.js';
import { ekuiperLayout, formatLayout, type Layout } from '../../values/datetime.js';
import { prop, propInt, propObject, propString } from '../props.js';
import { compileTemplate, renderTemplate } from '../../template/index.js';
import { transientError } from '../../contracts/failures.js';
import { checkIdent, parseSqlUrl, SqlDb, utcText, type SqlTarget } from './db.js';

/** One incremental index column. */
interface IndexCol {
  field: string;
  /** the last value read (or the configured start), null when none yet */
  value: Value;
  /** `DATETIME`: the value is a time, written with `dateTimeFormat` */
  datetime: boolean;
  layout: Layout | undefined;
}

type QueryCfg = { kind: 'internal'; table: string; limit: number } | { kind: 'template'; templateSql: string };

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

/** An index value from the config (JSON numbers: integral → bigint). */
function configValue(v: unknown): Value {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'bigint' || typeof v === 'boolean') return v;
  throw new Error(`indexValue must be a number or a string, got ${JSON.stringify(v)}`);
}

function indexCol(cfg: Record<string, unknown>, where: string): IndexCol | undefined {
  const field = propString(cfg, 'indexField', '');
  if (!field) return undefined;
  const type = propString(cfg, 'indexFieldType', '');
  const fmt = propString(cfg, 'dateTimeFormat', '');
  const datetime = type.toUpperCase() === 'DATETIME';
  let layout: Layout | undefined;
  if (datetime && fmt) {
    try {
      layout = ekuiperLayout(fmt);
    } catch (e) {
      throw new Error(`${where}: invalid dateTimeFormat ${JSON.stringify(fmt)}: ${(e as Error).message}`);
    }
  }
  return { field, value: configValue(prop(cfg, 'indexValue')), datetime, layout };
}

/** The validated settings of a sql source. */
export interface SqlSourceSettings {
  target: SqlTarget;
  interval: number;
  query: QueryCfg;
  indexes: IndexCol[];
}

export function sqlSourceSettings(props: Props): SqlSourceSettings {
  try {
    const target = parseSqlUrl(propString(props, 'url', ''));
    const interval = propInt(props, 'interval', 0);
    if (interval <= 0) throw new Error('property interval is required and must be greater than 0');
    const tpl = propObject(props, 'templateSqlQueryCfg');
    const internal = propObject(props, 'internalSqlQueryCfg');
    // both given: the template query is used
    if (tpl) {
      const templateSql = propString(tpl, 'templateSql', '');
      if (!templateSql) throw new Error('templateSqlQueryCfg.templateSql is required');
      try {
        compileTemplate(templateSql, 'templateSql');
      } catch (e) {
        throw new Error(`templateSqlQueryCfg.templateSql: ${(e as Error).message}`);
      }
      const idx = indexCol(tpl, 'templateSqlQueryCfg');
      return { target, interval, query: { kind: 'template', templateSql }, indexes: idx ? [idx] : [] };
    }
    if (internal) {
      const table = checkIdent(propString(internal, 'table', ''), 'table');
      const limit = propInt(internal, 'limit', 0);
      if (limit < 0) throw new Error('internalSqlQueryCfg.limit must not be negative');
      const indexes: IndexCol[] = [];
      const list = prop(internal, 'indexFields');
      if (Array.isArray(list)) {
        for (const c of list) {
          if (typeof c !== 'object' || c === null || Array.isArray(c))
            throw new Error('internalSqlQueryCfg.indexFields must be a list of objects');
          const idx = indexCol(c as Record<string, unknown>, 'internalSqlQueryCfg.indexFields');
          if (idx) indexes.push(idx);
        }
      } else {
        const idx = indexCol(internal, 'internalSqlQueryCfg');
        if (idx) indexes.push(idx);
      }
      for (const i of indexes) checkIdent(i.field, 'index field');
      return { target, interval, query: { kind: 'internal', table, limit }, indexes };
    }
    throw new Error('one of internalSqlQueryCfg and templateSqlQueryCfg is required');
  } catch (e) {
    throw e instanceof EddyError ? e : bad((e as Error).message);
  }
}

/**
 * An index value as the query needs it: a time in `dateTimeFormat` when given, else to the microsecond (so that a
 * template never reads the last row again because its time was rounded).
 */
function indexText(i: IndexCol): Value {
  const v = i.value;
  if (v instanceof DateTime) return i.layout ? formatLayout(v, i.layout) : utcText(v);
  return v;
}

export class SqlSource implements SourceConnector {
  private s!: SqlSourceSettings;
  private db: SqlDb | undefined;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private closed = false;

  provision(_ctx: ConnectorContext, _datasource: string, props: Props): void {
    this.s = sqlSourceSettings(props);
  }

  /** The statement of the next poll. */
  statement(): string {
    const q = this.s.query;
    if (q.kind === 'template') {
      const data: Record<string, Value> = {};
      for (const i of this.s.indexes) data[i.field] = indexText(i);
      return renderTemplate(q.templateSql, data);
    }
    const db = this.db!;
    const idx = this.s.indexes;
    let sql = `select * from ${q.table}`;
    // a time without dateTimeFormat stays a time, written as the dialect's timestamp literal
    const bound = (i: IndexCol): Value => (i.value instanceof DateTime && !i.layout ? i.value : indexText(i));
    const conds = idx
      .filter((i) => i.value !== null && i.value !== undefined)
      .map((i) => `${i.field} > ${db.literal(bound(i))}`);
    if (conds.length > 0) sql += ` where ${conds.join(' AND ')}`;
    if (idx.length > 0) sql += ` order by ${idx.map((i) => `${i.field} ASC`).join(', ')}`;
    if (q.limit > 0) sql += ` limit ${q.limit}`;
    return sql;
  }

  /** The current index values by field (the source's rewindable offset). */
  offset(): ValueObject {
    const o: ValueObject = {};
    for (const i of this.s.indexes) o[i.field] = i.value;
    return o;
  }

  /** Continues reading after the given index values (a restored offset). */
  rewind(offset: ValueObject): void {
    for (const i of this.s.indexes)
      if (Object.prototype.hasOwnProperty.call(offset, i.field)) i.value = offset[i.field];
  }

  /** Runs one poll and emits its rows; rejects with the query's error. */
  async poll(emit: (ev: SourceEvent) => void): Promise<void> {
    const sql = this.statement();
    const rows = await this.db!.query(sql);
    for (const row of rows) {
      if (this.closed) return;
      emit({ payload: row, meta: {}, timestamp: Date.now() });
      for (const i of this.s.indexes) {
        const v = row[i.field];
        if (v !== undefined && v !== null) i.value = v;
      }
    }
  }

  async connect(ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    this.closed = false;
    this.db = await SqlDb.open(this.s.target);
    const tick = async (): Promise<void> => {
      if (this.busy || this.closed) return;
      this.busy = true;
      try {
        await this.poll(emit);
      } catch (e) {
        if (!this.closed) {
          ctx.logger.warn('sql source %s: %s', this.s.target.display, (e as Error).message);
          onError(transientError(new Error(`sql source query failed: ${(e as Error).message}`)));
        }
      } finally {
        this.busy = false;
      }
    };
    void tick();
    this.timer = setInterval(() => void tick(), this.s.interval);
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.db?.close();
    this.db = undefined;
  }
}
