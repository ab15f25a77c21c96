/**
 * The JSON text of `GET /rules` and `GET /rules/status/all` (docs/rest-api.md §4.2, §4.13), kept whole between
 * listings and patched as rules change. A rule's row is read again only when the rule said that something its row
 * shows may have changed (it was created or deleted, its state moved, its worker reported other exceptions or
 * connections), when the row can change by itself at a known time (a sink failing for long enough), or at every
 * listing when its counters live on this thread and change without telling (`basic.workers` 1). The body is joined
 * again only when a row changed: with thousands of rules on the workers, a listing that finds nothing changed costs
 * no work per rule, where building and serialising every row was the bulk of those requests (issue 22).
 */

/** One rule's row as its reader built it. */
export interface RowRead {
  /** the row's JSON text */
  json: string;
  /** the row may change without the rule saying so: it is read at every listing */
  volatile: boolean;
  /** Unix ms from which the row may read differently with nothing changed (0: never) */
  changesAt: number;
}

export class ListingIndex {
  private readonly rows = new Map<string, string>();
  /** rules whose rows must be read before the next listing */
  private readonly dirty = new Set<string>();
  private readonly volatile = new Set<string>();
  private readonly timed = new Map<string, number>();
  /** the listing as sent: encoded once per change, not once per request */
  private body: Buffer | undefined;

  constructor(
    private readonly open: string,
    private readonly close: string,
  ) {}

  /** What rule `id`'s row shows may have changed (or the rule was created or deleted). */
  touch(id: string): void {
    this.dirty.add(id);
  }

  /**
   * The listing's JSON, UTF-8 encoded. `ids` gives the rules' ids in listing order (asked only when the body is joined again);
   * `read` builds a rule's row, or answers undefined for a rule that is gone.
   */
  json(now: number, ids: () => readonly string[], read: (id: string) => RowRead | undefined): Buffer {
    for (const [id, at] of this.timed) if (at <= now) this.dirty.add(id);
    for (const id of this.volatile) this.dirty.add(id);
    let changed = this.body === undefined;
    for (const id of this.dirty) if (this.readRow(id, read)) changed = true;
    this.dirty.clear();
    if (changed) this.body = this.join(ids(), read);
    return this.body!;
  }

  /** Reads rule `id`'s row again; true when its text changed. */
  private readRow(id: string, read: (id: string) => RowRead | undefined): boolean {
    this.volatile.delete(id);
    this.timed.delete(id);
    const row = read(id);
    if (row === undefined) return this.rows.delete(id);
    if (row.volatile) this.volatile.add(id);
    if (row.changesAt > 0) this.timed.set(id, row.changesAt);
    if (this.rows.get(id) === row.json) return false;
    this.rows.set(id, row.json);
    return true;
  }

  private join(ids: readonly string[], read: (id: string) => RowRead | undefined): Buffer {
    // a rule nobody announced is read now: the listing never misses a rule the registry has
    const parts: string[] = [];
    for (const id of ids) {
      if (!this.rows.has(id)) this.readRow(id, read);
      const row = this.rows.get(id);
      if (row !== undefined) parts.push(row);
    }
    if (this.rows.size > ids.length) {
      const live = new Set(ids);
      for (const id of this.rows.keys()) if (!live.has(id)) this.rows.delete(id);
    }
    return Buffer.from(this.open + parts.join(',') + this.close);
  }
}
