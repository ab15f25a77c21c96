/**
 * The sql lookup table (docs/runtime.md §2.5 sql, docs/runtime.md §2.6): DATASOURCE is the table; each probe runs
 * `SELECT <needed columns or *> FROM <table> WHERE <k1> = <v1> AND …`. The cache (`lookup.cache`…) is the
 * runtime's lookup node's.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, LookupConnector, Props } from '../../contracts/index.js';
import type { Value, ValueObject } from '../../values/value.js';
import { propString } from '../props.js';
import { checkIdent, isIdent, parseSqlUrl, SqlDb, type SqlTarget } from './db.js';

export class SqlLookup implements LookupConnector {
  private target!: SqlTarget;
  private table = '';
  private db: SqlDb | undefined;

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    try {
      this.target = parseSqlUrl(propString(props, 'url', ''));
      if (!datasource) throw new Error('sql lookup table needs the table name as DATASOURCE');
      this.table = checkIdent(datasource, 'table');
    } catch (e) {
      throw e instanceof EddyError ? e : new EddyError(ErrorCode.Executor, (e as Error).message);
    }
  }

  async connect(_ctx: ConnectorContext): Promise<void> {
    this.db = await SqlDb.open(this.target);
  }

  /** The probe statement. Columns that are not plain names make it read every column. */
  statement(fields: readonly string[], keys: readonly string[], values: readonly Value[]): string {
    const db = this.db!;
    const cols = fields.length > 0 && fields.every(isIdent) ? [...new Set(fields)].join(', ') : '*';
    const where = keys.map((k, i) => `${checkIdent(k, 'key column')} = ${db.literal(values[i])}`).join(' AND ');
    return `SELECT ${cols} FROM ${this.table}${where ? ` WHERE ${where}` : ''}`;
  }

  async lookup(
    _ctx: ConnectorContext,
    fields: readonly string[],
    keys: readonly string[],
    values: readonly Value[],
  ): Promise<ValueObject[]> {
    if (!this.db) throw new Error('sql lookup is not connected');
    return this.db.query(this.statement(fields, keys, values));
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    await this.db?.close();
    this.db = undefined;
  }
}
