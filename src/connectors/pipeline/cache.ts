/**
 * The failure cache of a sink (docs/runtime.md §3.5): items wait here until they are sent. Up to
 * `memoryCacheThreshold` items stay in memory; beyond that they are collected into pages of `bufferPageSize` and
 * written to the metadata store (namespace `sink/<ruleId><sinkName><instance>`), at most `maxDiskCache` items; when
 * the disk is full the oldest page is dropped. The memory part is saved at stop and reloaded at the next start.
 */
import { Serial } from '../../core/serial.js';
import type { KVStore } from '../../store/kv.js';
import { DateTime, type Value, type ValueObject } from '../../values/value.js';

/** One unit the sink sends: a single row (sendSingle) or the rows of one trigger. */
export type SinkUnit = ValueObject | ValueObject[];

export interface CacheLimits {
  memoryCacheThreshold: number;
  maxDiskCache: number;
  bufferPageSize: number;
}

const TAG = '\u0000t';

/** JSON with bigint, datetime and bytes kept (tagged), so that cached rows come back exactly. */
export function serializeUnits(units: readonly SinkUnit[]): string {
  return JSON.stringify(units, function (this: Record<string, unknown>, k: string, v: unknown) {
    const raw = this[k];
    if (typeof raw === 'bigint') return { [TAG]: 'i', v: raw.toString() };
    if (raw instanceof DateTime) return { [TAG]: 'd', v: [raw.ms, raw.zone, raw.nanos] };
    if (raw instanceof Uint8Array) return { [TAG]: 'b', v: Buffer.from(raw).toString('base64') };
    return v;
  });
}

export function deserializeUnits(text: string): SinkUnit[] {
  return JSON.parse(text, (_k, v: unknown) => {
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && TAG in v) {
      const t = v as { [TAG]: string; v: unknown };
      if (t[TAG] === 'i') return BigInt(t.v as string);
      if (t[TAG] === 'd') {
        const [ms, zone, nanos] = t.v as [number, string, number];
        return new DateTime(ms, zone, nanos);
      }
      if (t[TAG] === 'b') return new Uint8Array(Buffer.from(t.v as string, 'base64'));
    }
    return v as Value;
  }) as SinkUnit[];
}

export class SinkCache {
  private mem: SinkUnit[] = [];
  /** ids of the pages on disk, oldest first */
  private pages: number[] = [];
  private nextPage = 0;
  /** items beyond the memory threshold, not yet a full page */
  private tail: SinkUnit[] = [];
  /** items dropped because the disk part was full */
  dropped = 0;
  /** store writes, in order */
  private readonly writes = new Serial();

  constructor(
    private readonly store: KVStore,
    private readonly ns: string,
    private readonly limits: CacheLimits,
  ) {}

  get size(): number {
    return this.mem.length + this.pages.length * this.limits.bufferPageSize + this.tail.length;
  }

  /** Reloads what a previous run saved. */
  async load(): Promise<void> {
    const mem = await this.store.get(this.ns, 'memcache');
    const pages = await this.store.get(this.ns, 'pages');
    const tail = await this.store.get(this.ns, 'tail');
    this.mem = mem ? deserializeUnits(mem) : [];
    this.pages = pages ? (JSON.parse(pages) as number[]) : [];
    this.tail = tail ? deserializeUnits(tail) : [];
    this.nextPage = this.pages.length > 0 ? Math.max(...this.pages) + 1 : 0;
  }

  push(unit: SinkUnit): void {
    if (this.pages.length === 0 && this.tail.length === 0 && this.mem.length < this.limits.memoryCacheThreshold) {
      this.mem.push(unit);
      return;
    }
    this.tail.push(unit);
    if (this.tail.length >= this.limits.bufferPageSize) this.flushTail();
  }

  private flushTail(): void {
    const id = this.nextPage++;
    const page = this.tail;
    this.tail = [];
    this.pages.push(id);
    const maxPages = Math.max(1, Math.floor(this.limits.maxDiskCache / this.limits.bufferPageSize));
    const evicted: number[] = [];
    while (this.pages.length > maxPages) {
      evicted.push(this.pages.shift()!);
      this.dropped += this.limits.bufferPageSize;
    }
    const pages = JSON.stringify(this.pages);
    this.chain(() =>
      this.store.batch([
        { ns: this.ns, key: `page${id}`, value: serializeUnits(page) },
        ...evicted.map((p) => ({ ns: this.ns, key: `page${p}`, value: null })),
        { ns: this.ns, key: 'pages', value: pages },
      ]),
    );
  }

  private chain(fn: () => Promise<void>): void {
    // a failed write is the store's to report; the next write and the readers go on
    this.writes.run(fn).catch(() => undefined);
  }

  /** The oldest item, loading the oldest disk page into memory when needed. */
  async head(): Promise<SinkUnit | undefined> {
    if (this.mem.length > 0) return this.mem[0];
    if (this.pages.length > 0) {
      await this.writes.settled();
      const id = this.pages.shift()!;
      const text = await this.store.get(this.ns, `page${id}`);
      this.mem = text ? deserializeUnits(text) : [];
      const pages = JSON.stringify(this.pages);
      this.chain(() =>
        this.store.batch([
          { ns: this.ns, key: `page${id}`, value: null },
          { ns: this.ns, key: 'pages', value: pages },
        ]),
      );
      return this.head();
    }
    if (this.tail.length > 0) {
      this.mem = this.tail;
      this.tail = [];
      return this.mem[0];
    }
    return undefined;
  }

  /** Removes the oldest item (after it was sent or given up). */
  shift(): void {
    this.mem.shift();
  }

  /** Saves the memory part so that the next start resumes with it. */
  async save(): Promise<void> {
    await this.writes.settled();
    await this.store.batch([
      { ns: this.ns, key: 'memcache', value: serializeUnits(this.mem) },
      { ns: this.ns, key: 'tail', value: serializeUnits(this.tail) },
      { ns: this.ns, key: 'pages', value: JSON.stringify(this.pages) },
    ]);
  }

  /** Forgets everything, in memory and in the store. */
  async drop(): Promise<void> {
    await this.writes.settled();
    this.mem = [];
    this.tail = [];
    this.pages = [];
    await this.store.clear(this.ns);
  }
}
