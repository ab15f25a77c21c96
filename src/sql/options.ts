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
