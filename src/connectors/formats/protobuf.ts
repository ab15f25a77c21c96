/**
 * The `protobuf` format (docs/runtime.md §2.2, §7): `SCHEMAID="<schema>.<Message>"` names a message of a registered
 * protobuf schema. Decoding yields every field of the message (unset scalars at their default, as eKuiper reads them
 * through protobuf reflection); integer fields become `bigint`, floating ones `number`, bytes `Uint8Array`, enums
 * their number, nested messages objects (null when unset), repeated fields arrays and map fields objects.
 * Encoding takes the message's fields from a row (other keys are ignored) with the usual numeric conversions.
 *
 * Converters are compiled once per message type, so per-record work is a loop over precomputed field handlers.
 */
import type * as protobuf from 'protobufjs';
import { protobufjs } from '../../core/protobuf-library.js';
import type { Format, FormatOptions } from '../../contracts/index.js';
import type { FieldType, StreamField } from '../../sql/schema.js';
import { DateTime, isObject, type Value, type ValueObject } from '../../values/value.js';
import type { SchemaFiles } from '../../catalog/schema-files.js';

type Decode = (v: unknown) => Value;
type Encode = (v: Value, path: string) => unknown;

const INT32 = new Set(['int32', 'sint32', 'sfixed32']);
const UINT32 = new Set(['uint32', 'fixed32']);
const INT64 = new Set(['int64', 'sint64', 'sfixed64']);
const UINT64 = new Set(['uint64', 'fixed64']);
const FLOAT = new Set(['double', 'float']);

/** A protobuf 64-bit value as decoded by protobufjs: a Long-like object, or a number when it fits. */
interface LongLike {
  low: number;
  high: number;
  unsigned?: boolean;
}

function longToBigint(v: unknown, unsigned: boolean): bigint {
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  if (typeof v === 'string') return BigInt(v);
  const l = v as LongLike;
  const bits = (BigInt(l.high >>> 0) << 32n) | BigInt(l.low >>> 0);
  return unsigned ? BigInt.asUintN(64, bits) : BigInt.asIntN(64, bits);
}

function bigintToLong(v: bigint, unsigned: boolean): LongLike {
  const bits = BigInt.asUintN(64, v);
  return { low: Number(bits & 0xffffffffn) | 0, high: Number(bits >> 32n) | 0, unsigned };
}

class Codec {
  private readonly decoders = new Map<protobuf.Type, (m: protobuf.Message) => ValueObject>();
  private readonly encoders = new Map<protobuf.Type, (o: ValueObject, path: string) => Record<string, unknown>>();

  decoderOf(type: protobuf.Type): (m: protobuf.Message) => ValueObject {
    let dec = this.decoders.get(type);
    if (dec) return dec;
    const fields: Array<[string, Decode]> = [];
    // registered before the fields are compiled, so that recursive messages refer to it
    dec = (m) => {
      const out: ValueObject = {};
      const rec = m as unknown as Record<string, unknown>;
      for (let i = 0; i < fields.length; i++) out[fields[i][0]] = fields[i][1](rec[fields[i][0]]);
      return out;
    };
    this.decoders.set(type, dec);
    for (const f of type.fieldsArray) fields.push([f.name, this.fieldDecoder(f)]);
    return dec;
  }

  private fieldDecoder(f: protobuf.Field | protobuf.MapField): Decode {
    f.resolve();
    const one = this.scalarDecoder(f.type, f.resolvedType);
    if (f instanceof protobufjs().MapField || f.map) {
      return (v) => {
        const out: ValueObject = {};
        if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out[k] = one(x);
        return out;
      };
    }
    if (f.repeated) return (v) => (Array.isArray(v) ? v.map(one) : []);
    return one;
  }

  private scalarDecoder(type: string, resolved: protobuf.Type | protobuf.Enum | null): Decode {
    if (resolved instanceof protobufjs().Type) {
      const dec = this.decoderOf(resolved);
      return (v) => (v === null || v === undefined ? null : dec(v as protobuf.Message));
    }
    if (resolved instanceof protobufjs().Enum) return (v) => BigInt(typeof v === 'number' ? v : 0);
    if (INT32.has(type) || UINT32.has(type)) return (v) => BigInt(typeof v === 'number' ? v : 0);
    if (INT64.has(type)) return (v) => (v === null || v === undefined ? 0n : longToBigint(v, false));
    if (UINT64.has(type)) return (v) => (v === null || v === undefined ? 0n : longToBigint(v, true));
    if (FLOAT.has(type)) return (v) => (typeof v === 'number' ? v : 0);
    if (type === 'bool') return (v) => v === true;
    if (type === 'string') return (v) => (typeof v === 'string' ? v : '');
    if (type === 'bytes') return (v) => (v instanceof Uint8Array ? new Uint8Array(v) : new Uint8Array(0));
    return (v) => v as Value;
  }

  encoderOf(type: protobuf.Type): (o: ValueObject, path: string) => Record<string, unknown> {
    let enc = this.encoders.get(type);
    if (enc) return enc;
    const fields: Array<[string, Encode]> = [];
    enc = (o, path) => {
      const out: Record<string, unknown> = {};
      for (let i = 0; i < fields.length; i++) {
        const [name, fe] = fields[i];
        const v = o[name];
        if (v === null || v === undefined) continue;
        out[name] = fe(v, path === '' ? name : `${path}.${name}`);
      }
      return out;
    };
    this.encoders.set(type, enc);
    for (const f of type.fieldsArray) fields.push([f.name, this.fieldEncoder(f)]);
    return enc;
  }

  private fieldEncoder(f: protobuf.Field | protobuf.MapField): Encode {
    f.resolve();
    const one = this.scalarEncoder(f.type, f.resolvedType);
    if (f instanceof protobufjs().MapField || f.map) {
      return (v, path) => {
        if (!isObject(v)) throw new Error(`invalid value for map field ${path}: expect an object`);
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = one(x, `${path}.${k}`);
        return out;
      };
    }
    if (f.repeated) {
      return (v, path) => {
        if (!Array.isArray(v)) throw new Error(`invalid value for repeated field ${path}: expect an array`);
        return v.map((x, i) => one(x, `${path}[${i}]`));
      };
    }
    return one;
  }

  private scalarEncoder(type: string, resolved: protobuf.Type | protobuf.Enum | null): Encode {
    if (resolved instanceof protobufjs().Type) {
      const enc = this.encoderOf(resolved);
      return (v, path) => {
        if (!isObject(v)) throw new Error(`invalid value for message field ${path}: expect an object`);
        return enc(v, path);
      };
    }
    if (resolved instanceof protobufjs().Enum) {
      const values = resolved.values;
      return (v, path) => {
        if (typeof v === 'string' && v in values) return values[v];
        return Number(toInteger(v, path, 'enum'));
      };
    }
    if (INT32.has(type)) return (v, path) => Number(BigInt.asIntN(32, toInteger(v, path, type)));
    if (UINT32.has(type)) return (v, path) => Number(BigInt.asUintN(32, toInteger(v, path, type)));
    if (INT64.has(type)) return (v, path) => bigintToLong(toInteger(v, path, type), false);
    if (UINT64.has(type)) return (v, path) => bigintToLong(toInteger(v, path, type), true);
    if (FLOAT.has(type)) return (v, path) => toFloat(v, path, type);
    if (type === 'bool') {
      return (v, path) => {
        if (typeof v === 'boolean') return v;
        if (v === 'true' || v === 'false') return v === 'true';
        throw typeError(path, type, v);
      };
    }
    if (type === 'string') {
      return (v, path) => {
        if (typeof v === 'string') return v;
        if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
        if (v instanceof DateTime) return new Date(v.ms).toISOString();
        throw typeError(path, type, v);
      };
    }
    if (type === 'bytes') {
      return (v, path) => {
        if (v instanceof Uint8Array) return v;
        // bytes travel as base64 text in JSON, which is how they reach a row from a JSON source
        if (typeof v === 'string') return Buffer.from(v, 'base64');
        throw typeError(path, type, v);
      };
    }
    return (v) => v;
  }
}

function kindOf(v: Value): string {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  if (v instanceof Uint8Array) return 'bytea';
  if (v instanceof DateTime) return 'datetime';
  if (typeof v === 'bigint') return 'bigint';
  if (typeof v === 'number') return 'float';
  return typeof v === 'object' ? 'map' : typeof v;
}

function typeError(path: string, expect: string, v: Value): Error {
  return new Error(`invalid value for field ${path}: expect ${expect} but got ${kindOf(v)}`);
}

function toInteger(v: Value, path: string, expect: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return BigInt(Math.trunc(v));
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) return BigInt(v.trim());
  if (v instanceof DateTime) return BigInt(v.ms);
  throw typeError(path, expect, v);
}

function toFloat(v: Value, path: string, expect: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  throw typeError(path, expect, v);
}

export class ProtobufFormat implements Format {
  private readonly type: protobuf.Type;
  private readonly dec: (m: protobuf.Message) => ValueObject;
  private readonly enc: (o: ValueObject, path: string) => Record<string, unknown>;

  constructor(schemas: SchemaFiles, opts: FormatOptions) {
    if (!opts.schemaId) throw new Error('protobuf format needs a schemaId (SCHEMAID="<schema>.<Message>")');
    this.type = schemas.messageType(opts.schemaId);
    const codec = new Codec();
    this.dec = codec.decoderOf(this.type);
    this.enc = codec.encoderOf(this.type);
  }

  decode(data: Uint8Array): ValueObject {
    return this.dec(this.type.decode(data));
  }

  encode(data: ValueObject | ValueObject[]): Uint8Array {
    let row: ValueObject;
    if (Array.isArray(data)) {
      // protobuf has no framing for a list of messages: a trigger of several rows needs sendSingle
      if (data.length !== 1)
        throw new Error(
          `unsupported type: the protobuf format encodes one row at a time (got ${data.length}); set sendSingle to true`,
        );
      row = data[0];
    } else row = data;
    if (!isObject(row)) throw new Error('unsupported type: the protobuf format encodes objects only');
    return this.type.encode(this.enc(row, '')).finish();
  }
}

/** The stream fields a message describes (`GET /streams/{id}/schema` of a stream with SCHEMAID); throws when missing. */
export function protobufFields(schemas: SchemaFiles, schemaId: string): StreamField[] {
  return messageFields(schemas.messageType(schemaId), new Set());
}

/** {@link protobufFields}, or undefined when the schema or message does not exist (the catalog's hook). */
export function protobufFieldsOrUndefined(schemas: SchemaFiles, schemaId: string): StreamField[] | undefined {
  try {
    return protobufFields(schemas, schemaId);
  } catch {
    return undefined;
  }
}

function messageFields(type: protobuf.Type, seen: Set<protobuf.Type>): StreamField[] {
  // a recursive message is cut at the repeated type: its second appearance is an empty struct
  if (seen.has(type)) return [];
  const inner = new Set(seen).add(type);
  return type.fieldsArray.map((f) => {
    f.resolve();
    const base = fieldType(f.type, f.resolvedType, inner);
    const t: FieldType =
      f instanceof protobufjs().MapField || f.map
        ? { kind: 'struct', fields: [] }
        : f.repeated
          ? { kind: 'array', element: base }
          : base;
    return { name: f.name, type: t };
  });
}

function fieldType(type: string, resolved: protobuf.Type | protobuf.Enum | null, seen: Set<protobuf.Type>): FieldType {
  if (resolved instanceof protobufjs().Type) return { kind: 'struct', fields: messageFields(resolved, seen) };
  if (resolved instanceof protobufjs().Enum) return { kind: 'bigint' };
  if (INT32.has(type) || UINT32.has(type) || INT64.has(type) || UINT64.has(type)) return { kind: 'bigint' };
  if (FLOAT.has(type)) return { kind: 'float' };
  if (type === 'bool') return { kind: 'boolean' };
  if (type === 'bytes') return { kind: 'bytea' };
  return { kind: 'string' };
}
