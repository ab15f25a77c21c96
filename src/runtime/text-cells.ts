/**
 * Typed reading of text cells (docs/runtime.md §2.2): a `delimited` payload and the records of a CSV file are text; in
 * a stream that declares its fields, each declared field is read as its type, as a typed JSON stream's are, and a cell
 * that is not of its type makes the event an error (`seq has wrong type:string, expect:bigint`, the JSON decoder's
 * text). An empty cell of a non-string field is null. `datetime` cells stay text (converted where used, as JSON
 * strings are); `array` and `struct` cells stay text.
 */
import type { FieldType, StreamField } from '../sql/schema.js';
import type { Value, ValueObject } from '../values/value.js';

const MAX_INT64 = 9223372036854775807n;
const MIN_INT64 = -9223372036854775808n;
const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
/** the texts Go's `strconv.ParseBool` accepts */
const BOOLEANS: ReadonlyMap<string, boolean> = new Map([
  ...['1', 't', 'T', 'TRUE', 'true', 'True'].map((t): [string, boolean] => [t, true]),
  ...['0', 'f', 'F', 'FALSE', 'false', 'False'].map((t): [string, boolean] => [t, false]),
]);

function wrongType(name: string, t: FieldType): Error {
  return new Error(`${name} has wrong type:string, expect:${t.kind}`);
}

/** One cell as its declared type; throws the decoder's error when it is not. */
export function typedCell(name: string, text: string, t: FieldType): Value {
  if (t.kind === 'string') return text;
  if (text === '') return null;
  switch (t.kind) {
    case 'bigint': {
      if (!INTEGER.test(text)) throw wrongType(name, t);
      const n = BigInt(text);
      if (n > MAX_INT64 || n < MIN_INT64) throw wrongType(name, t);
      return n;
    }
    case 'float':
      if (!DECIMAL.test(text)) throw wrongType(name, t);
      return Number(text);
    case 'boolean': {
      const b = BOOLEANS.get(text);
      if (b === undefined) throw wrongType(name, t);
      return b;
    }
    case 'bytea':
      return new Uint8Array(Buffer.from(text, 'base64'));
    default:
      return text;
  }
}

/** A row of text cells with its declared fields typed (in place); other keys are kept as they are. */
export function typeTextCells(row: ValueObject, fields: readonly StreamField[]): ValueObject {
  for (const f of fields) {
    const v = row[f.name];
    if (typeof v === 'string') row[f.name] = typedCell(f.name, v, f.type);
  }
  return row;
}
