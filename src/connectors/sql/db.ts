/**
 * Database access of the sql source, lookup table and sink (docs/runtime.md §2.5, §3.6 sql): eKuiper's DSN URLs
 * (`postgres://user:pass@host:port/db?sslmode=disable`, `mysql://user:pass@host:port/db`), one connection pool
 * per database shared by the connectors using it (as eKuiper shares them per driver + DSN), and the conversion between database values and Eddy values (integers as bigint, DECIMAL as
 * float, DATE/DATETIME/TIMESTAMP as datetime, binary as bytes). Only PostgreSQL and MySQL/MariaDB are available;
 * any other scheme is refused with a clear "unsupported driver" error.
 */
import type pg from 'pg';
import type mysql from 'mysql2/promise';
import type { FieldPacket, Pool as MysqlPool, PoolOptions, RowDataPacket } from 'mysql2/promise';
import { lazy } from '../../core/lazy.js';
import { DateTime, type Value, type ValueObject } from '../../values/value.js';
import { toJson } from '../../values/json.js';
import { maskUrl } from '../secrets.js';

export type SqlDriver = 'postgres' | 'mysql';

/** the drivers, imported when the first database of their kind is opened */
const drivers: { pg?: typeof pg; mysql?: typeof mysql } = {};
const loadPg = lazy(async () => (drivers.pg = (await import('pg')).default));
const loadMysql = lazy(async () => (drivers.mysql = (await import('mysql2/promise')).default));

function loadDriver(driver: SqlDriver): Promise<unknown> {
  return driver === 'postgres' ? loadPg() : loadMysql();
}

/** A driver already imported by the {@link SqlDb} that needs it. */
function loaded<K extends keyof typeof drivers>(name: K): NonNullable<(typeof drivers)[K]> {
  const d = drivers[name];
  if (d === undefined) throw new Error(`the ${name} driver is not loaded`);
  return d as NonNullable<(typeof drivers)[K]>;
}

/** The connection settings of one sql URL. */
export interface SqlTarget {
  driver: SqlDriver;
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** TLS: false (none), or whether the server certificate is verified */
  tls: false | { verify: boolean };
  /** the URL with its password masked, for messages */
  display: string;
}

/** URL schemes per driver, with the aliases eKuiper's URL parser accepts. */
const SCHEMES: Record<string, SqlDriver> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  pg: 'postgres',
  pgsql: 'postgres',
  mysql: 'mysql',
  my: 'mysql',
  mariadb: 'mysql',
  maria: 'mysql',
  aurora: 'mysql',
  percona: 'mysql',
};

const DEFAULT_PORTS: Record<SqlDriver, number> = { postgres: 5432, mysql: 3306 };

function decoded(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Parses an eKuiper sql URL; throws a clear Error for a malformed URL or a driver Eddy does not have. */
export function parseSqlUrl(url: string): SqlTarget {
  if (typeof url !== 'string' || url === '') throw new Error('sql url is required');
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url);
  if (!m)
    throw new Error(`invalid sql url ${maskUrl(url)}: missing the driver scheme (such as mysql:// or postgres://)`);
  const scheme = m[1].toLowerCase();
  const driver = SCHEMES[scheme];
  if (!driver)
    throw new Error(`unsupported driver ${scheme}: the sql connector supports mysql (mariadb) and postgres urls`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`invalid sql url ${maskUrl(url)}`);
  }
  const port = u.port === '' ? DEFAULT_PORTS[driver] : Number(u.port);
  const q = u.searchParams;
  let tls: SqlTarget['tls'] = false;
  if (driver === 'postgres') {
    const mode = (q.get('sslmode') ?? 'disable').toLowerCase();
    if (mode === 'require') tls = { verify: false };
    else if (mode === 'verify-ca' || mode === 'verify-full') tls = { verify: true };
  } else {
    const t = (q.get('tls') ?? 'false').toLowerCase();
    if (t === 'true') tls = { verify: true };
    else if (t === 'skip-verify' || t === 'preferred') tls = { verify: false };
  }
  return {
    driver,
    host: (u.hostname || '127.0.0.1').replace(/^\[|\]$/g, ''),
    port,
    user: decoded(u.username) || (driver === 'postgres' ? 'postgres' : 'root'),
    password: decoded(u.password),
    database: decoded(u.pathname.replace(/^\//, '')),
    tls,
    display: u.password ? `${scheme}://${u.username}:******@${u.host}${u.pathname}${u.search}` : url,
  };
}

// ------------------------------------------------------------------------------------------------ identifiers

const IDENT_PART = '(?:[A-Za-z_][A-Za-z0-9_$]*|"[^"]+"|`[^`]+`)';
const IDENT_RE = new RegExp(`^${IDENT_PART}(?:\\.${IDENT_PART})*$`);

/**
 * Table and column names are written into statements unquoted, as eKuiper does (so PostgreSQL folds them to lower
 * case); anything but plain or already-quoted identifiers is refused so data can never inject SQL.
 */
export function checkIdent(name: string, what: string): string {
  if (!IDENT_RE.test(name)) throw new Error(`invalid ${what} name ${JSON.stringify(name)}`);
  return name;
}

export function isIdent(name: string): boolean {
  return IDENT_RE.test(name);
}

// ------------------------------------------------------------------------------------------------ values

/** A database value as an Eddy value. */
function toValue(v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
    case 'bigint':
      return v;
    case 'number':
      return v;
    case 'object':
      break;
    default:
      return String(v);
  }
  if (v instanceof DateTime) return v;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : new DateTime(v.getTime(), 'UTC');
  if (v instanceof Uint8Array) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (Array.isArray(v)) return v.map(toValue);
  const out: ValueObject = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = toValue(x);
  return out;
}

function toRow(r: Record<string, unknown>): ValueObject {
  const out: ValueObject = {};
  for (const k of Object.keys(r)) out[k] = toValue(r[k]);
  return out;
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

/** `YYYY-MM-DD HH:MM:SS.ffffff` in UTC: a time as both databases read it, to the microsecond. */
export function utcText(dt: DateTime): string {
  const d = new Date(dt.ms);
  const micros = d.getUTCMilliseconds() * 1000 + Math.floor(dt.nanos / 1000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(micros, 6)}`;
}

/**
 * An Eddy value as a SQL literal of the dialect. Values are written into statements as eKuiper does (so a float
 * key compares with an integer column the way the database compares literals), with strings properly escaped.
 */
export function sqlLiteral(v: Value, driver: SqlDriver): string {
  if (v === undefined || v === null) return 'NULL';
  switch (typeof v) {
    case 'boolean':
      return v ? 'TRUE' : 'FALSE';
    case 'bigint':
      return v.toString();
    case 'number':
      return Number.isFinite(v) ? String(v) : 'NULL';
    case 'string':
      return quote(v, driver);
    default:
      break;
  }
  if (v instanceof DateTime) return quote(driver === 'postgres' ? utcText(v) + '+00' : utcText(v), driver);
  if (v instanceof Uint8Array) {
    const hex = Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex');
    return driver === 'postgres' ? `'\\x${hex}'::bytea` : `X'${hex}'`;
  }
  return quote(toJson(v), driver);
}

function quote(s: string, driver: SqlDriver): string {
  if (driver === 'mysql') return loaded('mysql').escape(s);
  // an E'' literal means the same whatever standard_conforming_strings is set to
  return s.includes('\\') ? `E'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'` : `'${s.replace(/'/g, "''")}'`;
}

/** `YYYY-MM-DD[ HH:MM:SS[.ffffff]]` read as UTC (a column without a zone); the text itself when unparsable. */
function utcDateTime(s: string): DateTime | string {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?$/.exec(s);
  if (!m) return s;
  const frac = (m[7] ?? '').padEnd(9, '0');
  const ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +(m[4] ?? 0), +(m[5] ?? 0), +(m[6] ?? 0), +frac.slice(0, 3));
  return new DateTime(ms, 'UTC', +frac.slice(3));
}

// PostgreSQL type oids
const PG_INTS = new Set([20, 21, 23, 26]);
const PG_NUMERIC = 1700;
const PG_DATE = 1082;
const PG_TIMESTAMP = 1114;

const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (s: string) => unknown {
    if (format === 'binary') return loaded('pg').types.getTypeParser(oid, 'binary') as (s: string) => unknown;
    if (PG_INTS.has(oid)) return (s: string) => BigInt(s);
    if (oid === PG_NUMERIC) return (s: string) => Number(s);
    if (oid === PG_DATE || oid === PG_TIMESTAMP) return utcDateTime;
    return loaded('pg').types.getTypeParser(oid, 'text') as (s: string) => unknown;
  },
};

const MYSQL_INTS = new Set(['TINY', 'SHORT', 'LONG', 'INT24', 'LONGLONG', 'YEAR']);
const MYSQL_TIMES = new Set(['DATE', 'DATETIME', 'TIMESTAMP', 'NEWDATE']);

type TypeCastFn = Extract<NonNullable<PoolOptions['typeCast']>, (...args: never[]) => unknown>;

function mysqlTypeCast(field: Parameters<TypeCastFn>[0], next: () => unknown): unknown {
  if (MYSQL_INTS.has(field.type)) {
    const s = field.string();
    return s === null ? null : BigInt(s);
  }
  if (field.type === 'NEWDECIMAL' || field.type === 'DECIMAL') {
    const s = field.string();
    return s === null ? null : Number(s);
  }
  if (MYSQL_TIMES.has(field.type)) {
    const s = field.string();
    return s === null ? null : utcDateTime(s);
  }
  return next();
}

// ------------------------------------------------------------------------------------------------ connections

/** The first useful message of a driver error (a refused dual-stack connect is an AggregateError with none). */
function reason(e: unknown): string {
  if (e instanceof AggregateError && !e.message && e.errors.length > 0) return reason(e.errors[0]);
  if (e instanceof Error) return e.message || (e as Error & { code?: string }).code || e.name;
  return String(e);
}

const CONNECT_TIMEOUT_MS = 5000;
/** An unused connection is closed after this long. */
const IDLE_TIMEOUT_MS = 10000;

/** Connections per database (driver + DSN), shared by every source, lookup table and sink that use it. */
const MAX_CONNECTIONS = 8;

interface SharedPool {
  key: string;
  pg?: pg.Pool;
  my?: MysqlPool;
  refs: number;
}

const pools = new Map<string, SharedPool>();

function createPool(t: SqlTarget, key: string): SharedPool {
  const server = { host: t.host, port: t.port, user: t.user, password: t.password, database: t.database || undefined };
  const ssl = t.tls ? { rejectUnauthorized: t.tls.verify } : undefined;
  if (t.driver === 'postgres') {
    const p = new (loaded('pg').Pool)({
      ...server,
      ssl: ssl ?? false,
      max: MAX_CONNECTIONS,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: IDLE_TIMEOUT_MS,
      types: pgTypes,
    });
    // an idle connection dropped by the server must not crash the process; the next query reconnects
    p.on('error', () => {});
    return { key, pg: p, refs: 0 };
  }
  const p = loaded('mysql').createPool({
    ...server,
    ssl,
    connectionLimit: MAX_CONNECTIONS,
    maxIdle: MAX_CONNECTIONS,
    idleTimeout: IDLE_TIMEOUT_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    timezone: 'Z',
    supportBigNumbers: true,
    bigNumberStrings: true,
    typeCast: mysqlTypeCast,
  });
  p.on('connection', (c) => c.on('error', () => {}));
  return { key, my: p, refs: 0 };
}

function acquirePool(t: SqlTarget): SharedPool {
  const key = JSON.stringify([t.driver, t.host, t.port, t.user, t.password, t.database, t.tls]);
  let p = pools.get(key);
  if (!p) {
    p = createPool(t, key);
    pools.set(key, p);
  }
  p.refs++;
  return p;
}

async function releasePool(p: SharedPool): Promise<void> {
  if (--p.refs > 0) return;
  if (pools.get(p.key) === p) pools.delete(p.key);
  await (p.pg?.end() ?? p.my?.end())?.catch(() => {});
}

/** One user's handle on the shared pool of a database, with statements written for its dialect. */
export class SqlDb {
  private readonly pool: SharedPool;
  private readonly pgPool: pg.Pool | undefined;
  private readonly myPool: MysqlPool | undefined;
  private closed = false;

  private constructor(readonly target: SqlTarget) {
    this.pool = acquirePool(target);
    this.pgPool = this.pool.pg;
    this.myPool = this.pool.my;
  }

  get driver(): SqlDriver {
    return this.target.driver;
  }

  /** A value as a literal of this database's dialect. */
  literal(v: Value): string {
    return sqlLiteral(v, this.target.driver);
  }

  /** Runs a statement and returns its rows (none for writes) as Eddy values; errors carry the driver's reason. */
  async query(sql: string): Promise<ValueObject[]> {
    if (this.closed) throw new Error('sql connection is closed');
    try {
      if (this.pgPool) {
        const res = await this.pgPool.query(sql);
        return Array.isArray(res.rows) ? res.rows.map(toRow) : [];
      }
      const [rows] = (await this.myPool!.query(sql)) as [RowDataPacket[] | unknown, FieldPacket[]];
      return Array.isArray(rows) ? (rows as Record<string, unknown>[]).map(toRow) : [];
    } catch (e) {
      throw new SqlError(reason(e), e);
    }
  }

  /** Runs statements in one transaction (all or none), so a retried batch never writes twice. */
  async transaction(statements: readonly string[]): Promise<void> {
    if (statements.length === 1) {
      await this.query(statements[0]);
      return;
    }
    if (this.closed) throw new Error('sql connection is closed');
    try {
      if (this.pgPool) {
        const client = await this.pgPool.connect();
        let broken: unknown;
        try {
          await client.query('BEGIN');
          for (const s of statements) await client.query(s);
          await client.query('COMMIT');
        } catch (e) {
          broken = e;
          await client.query('ROLLBACK').catch(() => {});
          throw e;
        } finally {
          client.release(broken instanceof Error && /terminat|ECONN/i.test(broken.message) ? broken : undefined);
        }
        return;
      }
      const conn = await this.myPool!.getConnection();
      try {
        await conn.beginTransaction();
        for (const s of statements) await conn.query(s);
        await conn.commit();
      } catch (e) {
        await conn.rollback().catch(() => {});
        throw e;
      } finally {
        conn.release();
      }
    } catch (e) {
      throw e instanceof SqlError ? e : new SqlError(reason(e), e);
    }
  }

  /** Checks that the database answers. */
  /** A pooled client whose database answered a ping; nothing stays open when it does not. */
  static async open(target: SqlTarget): Promise<SqlDb> {
    const db = await SqlDb.create(target);
    try {
      await db.ping();
    } catch (e) {
      await db.close();
      throw e;
    }
    return db;
  }

  /** A client without the ping (its pool connects on the first statement). */
  static async create(target: SqlTarget): Promise<SqlDb> {
    await loadDriver(target.driver);
    return new SqlDb(target);
  }

  async ping(): Promise<void> {
    try {
      await this.query('SELECT 1');
    } catch (e) {
      throw new Error(`cannot connect to ${this.target.display}: ${(e as Error).message}`);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await releasePool(this.pool);
  }
}

/**
 * A failed statement. `connection` tells a lost or refused connection (worth retrying) from a statement the
 * database rejected (wrong column, duplicate key...).
 */
export class SqlError extends Error {
  readonly connection: boolean;
  constructor(message: string, cause: unknown) {
    super(message);
    this.name = 'SqlError';
    const c = cause as { code?: unknown; fatal?: unknown; errno?: unknown };
    const code = typeof c?.code === 'string' ? c.code : '';
    // Node socket errors, mysql2's fatal errors, PostgreSQL classes 08 (connection) and 57P (shutdown), timeouts
    this.connection =
      /^(E[A-Z]+|PROTOCOL_CONNECTION_LOST|08...|57P0[1-3])$/.test(code) ||
      c?.fatal === true ||
      /timeout|terminat|closed|connection|ECONN|EPIPE|socket/i.test(message) ||
      cause instanceof AggregateError;
  }
}

/** Connection check: open, ping, close. */
export async function pingSql(url: string): Promise<void> {
  const db = await SqlDb.create(parseSqlUrl(url));
  try {
    await db.ping();
  } finally {
    await db.close();
  }
}
