/**
 * The `json` format (docs/runtime.md §2.2, docs/sql.md §3.2/§3.4).
 *
 * Decoding without a schema keeps every field and turns every number into a float. With a schema (the declared
 * fields the rule reads, already narrowed by the planner) each known field is converted to its declared type; a key
 * the schema does not know is dropped when it holds a scalar, but an object or array under it fails the whole event
 * (`<key> has wrong type:object, expect:null`), at every depth. A JSON array payload fans out into one row each.
 */
import type { FieldType, StreamField } from '../../sql/schema.js';
import type { Format, FormatOptions } from '../../contracts/index.js';
import type { Value, ValueObject } from '../../values/value.js';
import { parseJsonExact } from './jsonparse.js';
import { encodeJson } from './jsonenc.js';

const MAX_INT64 = 9223372036854775807n;
const MIN_INT64 = -9223372036854775808n;
const textDecoder = new TextDecoder();

/** Schema as a lookup structure built once per format instance. */
interface Node {
  type: FieldType;
  /** for structs: member name → node */
  members?: Map<string, Node>;
  /** for arrays: element node */
  element?: Node;
}

function compile(fields: readonly StreamField[]): Map<string, Node> {
  const m = new Map<string, Node>();
  for (const f of fields) m.set(f.name, compileType(f.type));
  return m;
}

function compileType(t: FieldType): Node {
  if (t.kind === 'struct') return { type: t, members: compile(t.fields) };
  if (t.kind === 'array') return { type: t, element: compileType(t.element) };
  return { type: t };
}

/** fastjson's names of JSON value types, which eKuiper prints in decode errors */
function jsonTypeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'number':
    case 'bigint':
      return 'number';
    case 'boolean':
      return v ? 'true' : 'false';
    default:
      return 'object';
  }
}

function wrongType(key: string, v: unknown, expect: string): Error {
  return new Error(`${key} has wrong type:${jsonTypeName(v)}, expect:${expect}`);
}

/** Schemaless conversion: numbers become floats (including the exact parser's bigints). */
function untyped(v: unknown): Value {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const e = v[i];
      if (typeof e === 'bigint' || (typeof e === 'object' && e !== null)) v[i] = untyped(e);
    }
    return v as Value[];
  }
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    for (const k in o) {
      const e = o[k];
      if (typeof e === 'bigint' || (typeof e === 'object' && e !== null)) o[k] = untyped(e);
    }
    return o as ValueObject;
  }
  return v as Value;
}

function numberText(v: number | bigint): string {
  if (typeof v === 'bigint') return v.toString();
  return String(v);
}

const TRUE_TEXTS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_TEXTS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

function base64Bytes(s: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return undefined;
  return new Uint8Array(Buffer.from(s, 'base64'));
}

/** Converts `v` (not null) to the declared type of `node`; throws the decoder's error text on mismatch. */
function typed(key: string, v: unknown, node: Node): Value {
  const t = node.type;
  switch (t.kind) {
    case 'bigint':
      if (typeof v === 'bigint') {
        if (v > MAX_INT64 || v < MIN_INT64) throw wrongType(key, v, 'bigint');
        return v;
      }
      if (typeof v === 'number') {
        if (!Number.isInteger(v)) throw wrongType(key, v, 'bigint');
        return BigInt(v);
      }
      throw wrongType(key, v, 'bigint');
    case 'float':
      if (typeof v === 'number') return v;
      if (typeof v === 'bigint') return Number(v);
      throw wrongType(key, v, 'float');
    case 'string':
      if (typeof v === 'string') return v;
      if (typeof v === 'number' || typeof v === 'bigint') return numberText(v);
      throw wrongType(key, v, 'string');
    case 'boolean':
      if (typeof v === 'boolean') return v;
      if (typeof v === 'number') return v !== 0;
      if (typeof v === 'bigint') return v !== 0n;
      if (typeof v === 'string') {
        if (TRUE_TEXTS.has(v)) return true;
        if (FALSE_TEXTS.has(v)) return false;
      }
      throw wrongType(key, v, 'boolean');
    case 'datetime':
      if (typeof v === 'string') return v;
      if (typeof v === 'bigint') return v;
      if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
      throw wrongType(key, v, 'datetime');
    case 'bytea': {
      if (typeof v === 'string') {
        const b = base64Bytes(v);
        if (b) return b;
        throw new Error(`${key} has wrong type:string, expect:bytea`);
      }
      throw wrongType(key, v, 'bytea');
    }
    case 'array': {
      if (!Array.isArray(v)) throw wrongType(key, v, 'array');
      const el = node.element!;
      const out: Value[] = new Array(v.length);
      for (let i = 0; i < v.length; i++) {
        const e = v[i];
        out[i] = e === null ? null : typed(key, e, el);
      }
      return out;
    }
    case 'struct':
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw wrongType(key, v, 'struct');
      return decodeObject(v as Record<string, unknown>, node.members!);
  }
}

/** Decodes one JSON object against the known fields (see the module comment for the unknown-key rule). */
function decodeObject(obj: Record<string, unknown>, known: Map<string, Node>): ValueObject {
  const out: ValueObject = {};
  for (const key in obj) {
    const v = obj[key];
    const node = known.get(key);
    if (node === undefined) {
      if (typeof v === 'object' && v !== null) throw wrongType(key, v, 'null');
      continue;
    }
    out[key] = v === null ? null : typed(key, v, node);
  }
  return out;
}

const NOT_OBJECT = 'only map[string]interface{} and []map[string]interface{} is supported';

export class JsonFormat implements Format {
  private readonly schema: Map<string, Node> | null;

  constructor(opts: FormatOptions = {}) {
    this.schema = opts.schema ? compile(opts.schema) : null;
  }

  decode(data: Uint8Array): ValueObject | ValueObject[] {
    const parsed = parseJsonExact(textDecoder.decode(data));
    if (Array.isArray(parsed)) {
      const rows: ValueObject[] = new Array(parsed.length);
      for (let i = 0; i < parsed.length; i++) rows[i] = this.decodeRow(parsed[i]);
      return rows;
    }
    return this.decodeRow(parsed);
  }

  /** Decodes an already parsed JSON value (sources that receive objects, e.g. httppush, reuse this). */
  decodeValue(parsed: unknown): ValueObject | ValueObject[] {
    if (Array.isArray(parsed)) return parsed.map((p) => this.decodeRow(p));
    return this.decodeRow(parsed);
  }

  private decodeRow(v: unknown): ValueObject {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(NOT_OBJECT);
    if (this.schema === null) return untyped(v) as ValueObject;
    return decodeObject(v as Record<string, unknown>, this.schema);
  }

  encode(data: ValueObject | ValueObject[]): Uint8Array {
    // Buffer.from takes small strings from a pooled slab: several times cheaper than TextEncoder per message
    return Buffer.from(encodeJson(data), 'utf8');
  }
}
