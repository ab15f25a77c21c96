/**
 * STRICT_VALIDATION (docs/sql.md §3.4, docs/runtime.md §1.6 preprocessor): every declared field must be present and hold a
 * value of (or convertible to) its declared type; failures become `error in preprocessor: …` error records.
 */
import type { FieldType, StreamField } from '../sql/schema.js';
import { DateTime, isObject, type Value, type ValueObject } from '../values/value.js';
import { defaultZone, parseAuto } from '../values/datetime.js';
import { goTypeName } from '../values/text.js';

const GO_NAMES: Record<string, string> = {
  bigint: 'int64',
  float: 'float64',
  string: 'string',
  boolean: 'bool',
  datetime: 'datetime',
  bytea: 'bytea',
};

function mismatch(path: string, v: Value, t: FieldType): Error {
  const shown =
    typeof v === 'object' && v !== null && !(v instanceof DateTime)
      ? JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? Number(x) : x))
      : String(v);
  return new Error(
    `field ${path} type mismatch: cannot convert ${goTypeName(v)}(${shown}) to ${GO_NAMES[t.kind] ?? t.kind}`,
  );
}

function convert(path: string, v: Value, t: FieldType): Value {
  if (v === null || v === undefined) return null;
  switch (t.kind) {
    case 'bigint':
      if (typeof v === 'bigint') return v;
      if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
      throw mismatch(path, v, t);
    case 'float':
      if (typeof v === 'number') return v;
      if (typeof v === 'bigint') return Number(v);
      throw mismatch(path, v, t);
    case 'string':
      if (typeof v === 'string') return v;
      throw mismatch(path, v, t);
    case 'boolean':
      if (typeof v === 'boolean') return v;
      throw mismatch(path, v, t);
    case 'datetime':
      if (v instanceof DateTime) return v;
      if (typeof v === 'number' || typeof v === 'bigint') return new DateTime(Number(v), defaultZone());
      if (typeof v === 'string') {
        try {
          return parseAuto(v, defaultZone());
        } catch {
          throw mismatch(path, v, t);
        }
      }
      throw mismatch(path, v, t);
    case 'bytea':
      if (v instanceof Uint8Array) return v;
      if (typeof v === 'string') return new Uint8Array(Buffer.from(v, 'base64'));
      throw mismatch(path, v, t);
    case 'array':
      if (!Array.isArray(v)) throw mismatch(path, v, t);
      return v.map((e, i) => convert(`${path}[${i}]`, e, t.element));
    case 'struct':
      if (!isObject(v)) throw mismatch(path, v, t);
      return validateFields(v, t.fields, `${path}.`);
  }
}

function validateFields(msg: ValueObject, fields: readonly StreamField[], prefix: string): ValueObject {
  const out: ValueObject = { ...msg };
  for (const f of fields) {
    const v = msg[f.name];
    if (v === undefined) throw new Error(`field ${prefix}${f.name} is not found`);
    out[f.name] = convert(`${prefix}${f.name}`, v, f.type);
  }
  return out;
}

/** The message with declared fields converted; throws `error in preprocessor: …` when one is missing or mistyped. */
export function strictValidate(msg: ValueObject, fields: readonly StreamField[]): ValueObject {
  try {
    return validateFields(msg, fields, '');
  } catch (err) {
    throw new Error(`error in preprocessor: ${(err as Error).message}`);
  }
}
