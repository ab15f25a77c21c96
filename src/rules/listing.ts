/**
 * The JSON text of `GET /rules` and `GET /rules/status/all` (docs/rest-api.md §4.2, §4.13), kept as one serialised
 * row per rule and rebuilt only for rules whose shown fields changed since the last listing: with thousands of rules
 * most rows are the same from one poll to the next, and building and serialising every row on every poll was the
 * bulk of those requests.
 */

interface CachedRow {
  /** the fields the row shows: the row is rebuilt when one differs */
  a: string;
  b: string | number;
  c: string;
  json: string;
}

export class RowCache {
  private readonly rows = new Map<string, CachedRow>();

  /** The JSON text of rule `id`'s row: the cached one while the shown fields `a`, `b`, `c` are unchanged, else `text()`. */
  row(id: string, a: string, b: string | number, c: string, text: () => string): string {
    const cached = this.rows.get(id);
    if (cached !== undefined && cached.a === a && cached.b === b && cached.c === c) return cached.json;
    const json = text();
    this.rows.set(id, { a, b, c, json });
    return json;
  }

  /** Drops the rows of rules not in `ids` (deleted since). */
  keepOnly(ids: readonly string[]): void {
    if (this.rows.size <= ids.length) return;
    const live = new Set(ids);
    for (const id of this.rows.keys()) if (!live.has(id)) this.rows.delete(id);
  }
}

/** The rows of rules `ids` in order, joined between `open` and `close`. */
export function joinRows(open: string, ids: readonly string[], rowOf: (id: string) => string, close: string): string {
  const parts = new Array<string>(ids.length);
  for (let i = 0; i < ids.length; i++) parts[i] = rowOf(ids[i]);
  return open + parts.join(',') + close;
}
