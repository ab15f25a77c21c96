/**
 * The `delimited` format (docs/runtime.md §2.2, §3.3): decoding splits on the delimiter (default `,`) into string fields
 * named `col0`, `col1`, … (or the given `fields`); a stream that declares its fields names the cells after them, in
 * order, types them (`runtime/text-cells.ts`) and drops cells beyond them. Encoding writes one row's values in
 * `fields` order, else in the ascending key order of the first row encoded (then kept), with no header.
 */
import type { Format, FormatOptions } from '../../contracts/index.js';
import type { Value, ValueObject } from '../../values/value.js';
import { textOf } from '../../values/text.js';
import type { StreamField } from '../../sql/schema.js';
import { typedCell } from '../../runtime/text-cells.js';

const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();

export class DelimitedFormat implements Format {
  private readonly delimiter: string;
  private columns: readonly string[] | undefined;
  /** the stream's declared fields (typed decoding), or undefined */
  private readonly declared: readonly StreamField[] | undefined;

  constructor(opts: FormatOptions = {}) {
    this.delimiter = opts.delimiter || ',';
    this.columns = opts.fields && opts.fields.length > 0 ? opts.fields : undefined;
    this.declared = opts.schema && opts.schema.length > 0 ? opts.schema : undefined;
  }

  decode(data: Uint8Array): ValueObject {
    const parts = textDecoder.decode(data).split(this.delimiter);
    const out: ValueObject = {};
    const declared = this.declared;
    if (declared) {
      const n = Math.min(parts.length, declared.length);
      for (let i = 0; i < n; i++) out[declared[i].name] = typedCell(declared[i].name, parts[i], declared[i].type);
      return out;
    }
    const names = this.columns;
    for (let i = 0; i < parts.length; i++) out[names && i < names.length ? names[i] : `col${i}`] = parts[i];
    return out;
  }

  encode(data: ValueObject | ValueObject[]): Uint8Array {
    if (Array.isArray(data)) {
      throw new Error('delimited format can only encode a single row; set sendSingle to true');
    }
    if (!this.columns)
      this.columns = Object.keys(data)
        .filter((k) => data[k] !== undefined)
        .sort();
    const cells: string[] = new Array(this.columns.length);
    for (let i = 0; i < this.columns.length; i++) cells[i] = textOf(data[this.columns[i]] as Value);
    return textEncoder.encode(cells.join(this.delimiter));
  }
}
