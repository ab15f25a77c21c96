/**
 * The `binary` format: the whole payload becomes one bytes field, `self`, or the stream's single `bytea` field.
 * Encoding sends the bytes of a row's single bytes field as they are.
 */
import type { Format, FormatOptions } from '../../contracts/index.js';
import type { ValueObject } from '../../values/value.js';

export class BinaryFormat implements Format {
  private readonly field: string;

  constructor(opts: FormatOptions = {}) {
    const s = opts.schema;
    this.field = s && s.length === 1 && s[0].type.kind === 'bytea' ? s[0].name : 'self';
  }

  decode(data: Uint8Array): ValueObject {
    return { [this.field]: data };
  }

  encode(data: ValueObject | ValueObject[]): Uint8Array {
    const row = Array.isArray(data) ? (data.length === 1 ? data[0] : undefined) : data;
    if (row) {
      const keys = Object.keys(row).filter((k) => row[k] !== undefined);
      const v = keys.length === 1 ? row[keys[0]] : row[this.field];
      if (v instanceof Uint8Array) return v;
    }
    throw new Error('binary format can only encode a single row holding one bytes field');
  }
}
