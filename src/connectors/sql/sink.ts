/**
 * The sql sink (docs/runtime.md §3.6 sql): writes the rows of each send into `table` (a template rendered on the first
 * untransformed row). Without row kinds the rows are one multi-row `INSERT INTO t (cols) values (…),(…)`; with
 * `rowkindField` each row is an insert, an update (`SET` every column `WHERE keyField = …`) or a delete, all in one
 * transaction. The columns are `fields` (in that order) or the union of the rows' keys; a missing value is NULL.
 * A lost or refused connection is recoverable (the failure cache resends); a statement the database rejects is not.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { textOf } from '../../values/text.js';
import { propString, propStringList } from '../props.js';
import { recoverable } from '../../contracts/failures.js';
import { checkIdent, parseSqlUrl, SqlDb, SqlError, type SqlTarget } from './db.js';

const ROW_KINDS = new Set(['insert', 'update', 'delete']);

export interface SqlSinkSettings {
  target: SqlTarget;
  table: string;
  fields: string[] | undefined;
  rowkindField: string;
  keyField: string;
}

export function sqlSinkSettings(props: Props): SqlSinkSettings {
  try {
    const target = parseSqlUrl(propString(props, 'url', ''));
    const table = propString(props, 'table', '');
    if (!table) throw new Error('property table is required');
    if (!table.includes('{{')) checkIdent(table, 'table');
    const fields = propStringList(props, 'fields');
    for (const f of fields ?? []) checkIdent(f, 'column');
    const rowkindField = propString(props, 'rowkindField', '');
    const keyField = propString(props, 'keyField', '');
    if (rowkindField && !keyField) throw new Error('keyField is required when rowkindField is set');
    if (keyField) checkIdent(keyField, 'key column');
    return { target, table, fields: fields && fields.length > 0 ? fields : undefined, rowkindField, keyField };
  } catch (e) {
    throw e instanceof EddyError ? e : new EddyError(ErrorCode.Executor, (e as Error).message);
  }
}

export class SqlSink implements SinkConnector {
  private s!: SqlSinkSettings;
  private db: SqlDb | undefined;

  provision(_ctx: SinkContext, props: Props): void {
    this.s = sqlSinkSettings(props);
  }

  async connect(_ctx: SinkContext): Promise<void> {
    this.db = await SqlDb.open(this.s.target);
  }

  /** The columns written for these rows. */
  private columns(rows: readonly ValueObject[]): string[] {
    if (this.s.fields) return this.s.fields;
    const keys = new Set<string>();
    for (const r of rows) for (const k of Object.keys(r)) if (k !== this.s.rowkindField) keys.add(k);
    return [...keys].sort().map((k) => checkIdent(k, 'column'));
  }

  /**
   * The statements of one send. `originals` are the rows before dataTemplate/fields: the table is rendered on the
   * first, and a row kind or key that `fields` left out is read from the row's original.
   */
  statements(ctx: SinkContext, rows: readonly ValueObject[], originals: readonly ValueObject[] = rows): string[] {
    const db = this.db!;
    const first = originals[0] ?? rows[0];
    const table = this.s.table.includes('{{') ? checkIdent(ctx.render(this.s.table, first), 'table') : this.s.table;
    const paired = originals.length === rows.length;
    const field = (i: number, name: string): Value => rows[i][name] ?? (paired ? originals[i][name] : undefined);
    const out: string[] = [];
    let inserts: ValueObject[] = [];
    const flush = () => {
      if (inserts.length === 0) return;
      const cols = this.columns(inserts);
      const tuples = inserts.map((r) => `(${cols.map((c) => db.literal(r[c])).join(',')})`);
      out.push(`INSERT INTO ${table} (${cols.join(',')}) values ${tuples.join(',')}`);
      inserts = [];
    };
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i];
      const kind = this.kindOf(this.s.rowkindField ? field(i, this.s.rowkindField) : undefined);
      if (kind === 'insert') {
        inserts.push(row);
        continue;
      }
      flush();
      const key = this.s.keyField;
      const kv = field(i, key);
      if (kv === undefined || kv === null) throw new Error(`field ${key} does not exist in the row`);
      const where = `${key} = ${db.literal(kv)}`;
      if (kind === 'delete') {
        out.push(`DELETE FROM ${table} WHERE ${where}`);
      } else {
        const sets = this.columns([row]).map((c) => `${c}=${db.literal(row[c])}`);
        out.push(`UPDATE ${table} SET ${sets.join(',')} WHERE ${where}`);
      }
    }
    flush();
    return out;
  }

  private kindOf(k: Value): string {
    if (k === undefined || k === null) return 'insert';
    const kind = typeof k === 'string' ? k.toLowerCase() : '';
    if (!ROW_KINDS.has(kind)) throw new Error(`invalid rowkind ${textOf(k)}`);
    return kind;
  }

  async collect(ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const db = this.db;
    if (!db) throw recoverable(new Error('sql sink is not connected'));
    const data = payload.data as Value;
    const rows: ValueObject[] = Array.isArray(data) ? data.filter(isObject) : isObject(data) ? [data] : [];
    if (rows.length === 0) return;
    const statements = this.statements(ctx, rows, payload.rows);
    try {
      await db.transaction(statements);
    } catch (e) {
      throw e instanceof SqlError && e.connection ? recoverable(e) : e;
    }
  }

  async close(_ctx: SinkContext): Promise<void> {
    await this.db?.close();
    this.db = undefined;
  }
}
