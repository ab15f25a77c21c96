/**
 * The JSON text of `GET /rules` and `GET /rules/status/all` (docs/rest-api.md §4.2, §4.13), kept as one serialised
 * row per rule and rebuilt only for rules whose shown fields changed since the last listing: with thousands of rules
 * most rows are the same from one poll to the next, and building and serialising every row on every poll was the
 * bulk of those requests.
 */

interface CachedRow {
  /** the fields the row shows, joined: the row is rebuilt when they differ */
  key: string;
  json: string;
}

export class RowCache {
  private readonly rows = new Map<string, CachedRow>();

  /** The JSON text of rule `id`'s row: the cached one while `key` is unchanged, else `make()` serialised. */
  row(id: string, key: string, make: () => unknown): string {
    const cached = this.rows.get(id);
    if (cached !== undefined && cached.key === key) return cached.json;
    const json = JSON.stringify(make());
    this.rows.set(id, { key, json });
    return json;
  }

  /** Drops the rows of rules not in `ids` (deleted since). */
  keepOnly(ids: readonly string[]): void {
    if (this.rows.size <= ids.length) return;
    const live = new Set(ids);
    for (const id of this.rows.keys()) if (!live.has(id)) this.rows.delete(id);
  }
}

/** `[row,row,…]` of rules `ids` in order. */
export function jsonArray(ids: readonly string[], rowOf: (id: string) => string): string {
  let out = '[';
  for (let i = 0; i < ids.length; i++) out += (i === 0 ? '' : ',') + rowOf(ids[i]);
  return out + ']';
}

/** `{"id":row,…}` of rules `ids` in order. */
export function jsonObject(ids: readonly string[], rowOf: (id: string) => string): string {
  let out = '{';
  for (let i = 0; i < ids.length; i++) out += (i === 0 ? '' : ',') + JSON.stringify(ids[i]) + ':' + rowOf(ids[i]);
  return out + '}';
}
