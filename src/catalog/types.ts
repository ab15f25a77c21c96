import type { StreamField } from '../sql/schema.js';
import type { StreamOptions } from '../sql/options.js';

export type { StreamOptions };

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
  /** Changes whenever a definition is added, replaced or dropped (rule workers copy only what changed). */
  readonly revision?: number;
  /**
   * The names added, replaced or dropped since `revision` (a name may come more than once), or undefined when that
   * revision is too old to tell: then the whole catalog is compared.
   */
  changedSince?(revision: number): readonly string[] | undefined;
}
