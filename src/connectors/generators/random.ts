/**
 * The random source (docs/runtime.md §2.5 random): every `interval` ms it emits one row holding, for each integer
 * field of `pattern`, that value plus a random integer in [0, `seed`). With `deduplicate` N > 0 a row equal to one
 * of the last N emitted is skipped; with N < 0 a row equal to any row emitted since the rule started is skipped.
 * Rows are handed over decoded (integers stay integers), so FORMAT must be json.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { ValueObject } from '../../values/value.js';
import { propInt, propObject, propString } from '../props.js';

function bad(message: string): EddyError {
  return new EddyError(ErrorCode.Executor, message);
}

interface RandomSettings {
  interval: number;
  seed: number;
  /** the integer base values of `pattern`, in its key order */
  pattern: Array<[string, number]>;
  deduplicate: number;
}

function randomSettings(props: Props): RandomSettings {
  let interval: number, seed: number, deduplicate: number, format: string;
  let pattern: Record<string, unknown> | undefined;
  try {
    interval = propInt(props, 'interval', 0);
    seed = propInt(props, 'seed', 0);
    deduplicate = propInt(props, 'deduplicate', 0);
    pattern = propObject(props, 'pattern');
    format = propString(props, 'format', 'json');
  } catch (e) {
    throw bad((e as Error).message);
  }
  if (format.toLowerCase() !== 'json') throw bad('random source only supports `json` format');
  if (interval <= 0)
    throw bad(`source \`random\` property \`interval\` must be a positive integer but got ${interval}`);
  if (seed <= 0) throw bad(`source \`random\` property \`seed\` must be a positive integer but got ${seed}`);
  if (pattern === undefined) throw bad('source `random` property `pattern` is required');
  const base: Array<[string, number]> = [];
  // only integral values take part: a field whose base is not an integer is left out of the rows
  for (const [k, v] of Object.entries(pattern)) {
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n === 'number' && Number.isInteger(n)) base.push([k, n]);
  }
  return { interval, seed, pattern: base, deduplicate };
}

export class RandomSource implements SourceConnector {
  private s!: RandomSettings;
  private timer: NodeJS.Timeout | undefined;
  /** the rows last emitted (their JSON text), oldest first, for `deduplicate` */
  private recent: string[] = [];
  private seen: Set<string> | undefined;

  provision(_ctx: ConnectorContext, _datasource: string, props: Props): void {
    this.s = randomSettings(props);
  }

  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void): Promise<void> {
    this.recent = [];
    this.seen = this.s.deduplicate < 0 ? new Set() : undefined;
    this.timer = setInterval(() => {
      const row = this.next();
      if (this.s.deduplicate !== 0 && this.isDuplicate(row)) return;
      emit({ payload: row, meta: {}, timestamp: Date.now() });
    }, this.s.interval);
  }

  private next(): ValueObject {
    const row: ValueObject = {};
    const seed = this.s.seed;
    for (const [k, v] of this.s.pattern) row[k] = BigInt(v + Math.floor(Math.random() * seed));
    return row;
  }

  private isDuplicate(row: ValueObject): boolean {
    const text = JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    if (this.seen) {
      if (this.seen.has(text)) return true;
      this.seen.add(text);
      return false;
    }
    if (this.recent.includes(text)) return true;
    this.recent.push(text);
    if (this.recent.length > this.s.deduplicate) this.recent.shift();
    return false;
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
