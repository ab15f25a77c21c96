import type { StreamField } from '../sql/schema.js';

/** Options of a CREATE STREAM/TABLE statement, keys upper-case as written in `WITH (...)` (docs/sql.md §3.3). */
export interface StreamOptions {
  DATASOURCE?: string;
  FORMAT?: string;
  KEY?: string;
  CONF_KEY?: string;
  TYPE?: string;
  STRICT_VALIDATION?: boolean;
  TIMESTAMP?: string;
  TIMESTAMP_FORMAT?: string;
  RETAIN_SIZE?: number;
  SHARED?: boolean;
  SCHEMAID?: string;
  KIND?: 'scan' | 'lookup';
  DELIMITER?: string;
}

export type StreamKind = 'stream' | 'table';

/** A stored stream or table definition, as the catalog hands it to the planner and the runtime. */
export interface StreamDef {
  readonly name: string;
  readonly kind: StreamKind;
  /** null for a schemaless stream (`CREATE STREAM s () ...`) */
  readonly fields: readonly StreamField[] | null;
  readonly options: Readonly<StreamOptions>;
  /** the exact CREATE statement text */
  readonly sql: string;
}

/** Read access to streams and tables, used by the planner, rules and bundle import. */
export interface StreamCatalog {
  get(name: string): StreamDef | undefined;
  list(kind: StreamKind): StreamDef[];
}
