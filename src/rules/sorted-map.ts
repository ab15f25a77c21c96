/**
 * A map whose keys are also kept in sorted order, maintained as keys come and go: the rule registry lists its rules
 * by id for `GET /rules`, `GET /rules/status/all`, the metrics exporter and tag matches, and sorting thousands of ids
 * on every request made those listings grow as n·log n per call (docs/rest-api.md §4.2).
 */
export class SortedKeyMap<V> extends Map<string, V> {
  private sorted: string[] = [];

  /** `changed` hears of every key set or deleted (the rules listings, rules/listing.ts) */
  constructor(private readonly changed?: (key: string) => void) {
    super();
  }

  override set(key: string, value: V): this {
    if (!super.has(key)) this.sorted.splice(this.position(key), 0, key);
    super.set(key, value);
    this.changed?.(key);
    return this;
  }

  override delete(key: string): boolean {
    if (!super.delete(key)) return false;
    this.sorted.splice(this.position(key), 1);
    this.changed?.(key);
    return true;
  }

  override clear(): void {
    const keys = this.sorted;
    super.clear();
    this.sorted = [];
    if (this.changed) for (const key of keys) this.changed(key);
  }

  /** The keys in ascending code-unit order (a copy the caller may keep). */
  sortedKeys(): string[] {
    return this.sorted.slice();
  }

  /** Where `key` is or would be inserted (binary search). */
  private position(key: string): number {
    let lo = 0;
    let hi = this.sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sorted[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
