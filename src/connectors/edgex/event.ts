/**
 * EdgeX v3 message envelopes and events (docs/connectors.md edgex). An envelope is a JSON object
 * `{apiVersion, correlationID, requestID, errorCode, payload, contentType, receivedTopic, queryParams}` whose payload
 * is the event (messageType `event`) or an AddEventRequest `{apiVersion, requestId, event}` (messageType `request`),
 * carried as a JSON value (EdgeX 3) or as base64 of its JSON text (EdgeX 2). Readings carry their value as text typed
 * by `valueType`; here they become SQL values: bool, bigint for every integer type, float for Float32/64, string,
 * bytes for Binary, the object for Object, and lists for the array types.
 */
import { randomUUID } from 'node:crypto';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { parseJsonExact } from '../formats/jsonparse.js';

export type MessageType = 'event' | 'request';

const INT_TYPES = new Set(['Int8', 'Int16', 'Int32', 'Int64', 'Uint8', 'Uint16', 'Uint32', 'Uint64']);
const FLOAT_TYPES = new Set(['Float32', 'Float64']);

function toBigInt(text: string, type: string): bigint {
  const t = text.trim();
  if (!/^[-+]?\d+$/.test(t)) throw new Error(`cannot parse ${JSON.stringify(text)} as ${type}`);
  return BigInt(t);
}

function toFloat(text: string, type: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || Number.isNaN(n)) throw new Error(`cannot parse ${JSON.stringify(text)} as ${type}`);
  return n;
}

function toBool(text: string): boolean {
  const t = text.trim();
  if (/^(1|t|T|TRUE|true|True)$/.test(t)) return true;
  if (/^(0|f|F|FALSE|false|False)$/.test(t)) return false;
  throw new Error(`cannot parse ${JSON.stringify(text)} as Bool`);
}

/** `[1, 2]` / `[true, false]` / `["a"]` as EdgeX writes array values. */
function arrayItems(text: string, type: string): unknown[] {
  const t = text.trim();
  if (!t.startsWith('[') || !t.endsWith(']')) throw new Error(`cannot parse ${JSON.stringify(text)} as ${type}`);
  const inner = t.slice(1, -1).trim();
  if (inner === '') return [];
  try {
    const parsed: unknown = JSON.parse(t);
    if (Array.isArray(parsed)) return parsed;
  } catch {
    // Go's fmt form without commas: `[1 2 3]`
  }
  return inner.split(/[\s,]+/).filter((s) => s !== '');
}

/** The SQL value of one reading. */
export function readingValue(r: Record<string, unknown>): Value {
  const type = String(r.valueType ?? '');
  if (type === 'Binary')
    return typeof r.binaryValue === 'string' ? new Uint8Array(Buffer.from(r.binaryValue, 'base64')) : null;
  if (type === 'Object') return jsonValue(r.objectValue);
  const text = typeof r.value === 'string' ? r.value : r.value === undefined || r.value === null ? '' : String(r.value);
  if (type === 'Bool') return toBool(text);
  if (type === 'String') return text;
  if (INT_TYPES.has(type)) return toBigInt(text, type);
  if (FLOAT_TYPES.has(type)) return toFloat(text, type);
  if (type.endsWith('Array')) {
    const base = type.slice(0, -'Array'.length);
    const items = arrayItems(text, type);
    if (base === 'Bool') return items.map((v) => toBool(String(v)));
    if (INT_TYPES.has(base)) return items.map((v) => toBigInt(String(v), base));
    if (FLOAT_TYPES.has(base)) return items.map((v) => toFloat(String(v), base));
    if (base === 'String') return items.map((v) => String(v));
    if (base === 'Object') return items.map((v) => jsonValue(v));
  }
  throw new Error(`unsupported value type ${type}`);
}

/** A JSON value as an engine value: integral numbers stay numbers (floats), as the JSON format decodes schemaless data. */
function jsonValue(v: unknown): Value {
  if (v === undefined) return null;
  return v as Value;
}

/** The event inside an envelope's payload (object or base64 JSON), for the message type. */
export function envelopeEvent(envelopeBytes: Uint8Array, messageType: MessageType): Record<string, unknown> {
  // nanosecond origins need all 64 bits
  const env: unknown = parseJsonExact(Buffer.from(envelopeBytes).toString('utf8'));
  if (!isPlainObject(env)) throw new Error('edgex message envelope is not a JSON object');
  const contentType =
    typeof env.contentType === 'string' && env.contentType !== '' ? env.contentType : 'application/json';
  if (!contentType.startsWith('application/json')) throw new Error(`unsupported content type ${contentType}`);
  let payload: unknown = env.payload;
  if (typeof payload === 'string') payload = parseJsonExact(Buffer.from(payload, 'base64').toString('utf8'));
  if (!isPlainObject(payload)) throw new Error('edgex message payload is not a JSON object');
  const event = messageType === 'request' ? payload.event : payload;
  if (!isPlainObject(event))
    throw new Error(`edgex payload is not ${messageType === 'request' ? 'an AddEventRequest' : 'an Event'}`);
  return event;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function metaInt(v: unknown): Value {
  return typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : typeof v === 'number' ? v : ((v as Value) ?? null);
}

/** An event as a row (resourceName → value) and its metadata; null when it has no readings. */
export function eventRow(
  event: Record<string, unknown>,
  correlationId: string,
): { row: ValueObject; meta: ValueObject } | null {
  const readings = Array.isArray(event.readings) ? event.readings : [];
  if (readings.length === 0) return null;
  const row: ValueObject = {};
  const meta: ValueObject = {
    id: (event.id as Value) ?? null,
    deviceName: (event.deviceName as Value) ?? null,
    profileName: (event.profileName as Value) ?? null,
    sourceName: (event.sourceName as Value) ?? null,
    origin: metaInt(event.origin),
    correlationid: correlationId,
  };
  if (isPlainObject(event.tags)) meta.tags = event.tags as ValueObject;
  for (const r of readings) {
    if (!isPlainObject(r)) continue;
    const name = String(r.resourceName ?? '');
    row[name] = readingValue(r);
    const rm: ValueObject = {
      id: (r.id as Value) ?? null,
      origin: metaInt(r.origin),
      deviceName: (r.deviceName as Value) ?? null,
      profileName: (r.profileName as Value) ?? null,
      valueType: (r.valueType as Value) ?? null,
    };
    if (typeof r.mediaType === 'string' && r.mediaType !== '') rm.mediaType = r.mediaType;
    meta[name] = rm;
  }
  return { row, meta };
}

// ------------------------------------------------------------------------------------------------ encoding

/** Go's `strconv.FormatFloat(v, 'e', -1, 64)`: shortest digits, exponent of at least two digits. */
export function goExp(v: number): string {
  const s = v.toExponential();
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

function arrayType(items: Value[]): string {
  const first = items.find((v) => v !== null && v !== undefined);
  if (typeof first === 'boolean') return 'BoolArray';
  if (typeof first === 'bigint') return 'Int64Array';
  if (typeof first === 'number') return 'Float64Array';
  if (typeof first === 'string') return 'StringArray';
  return 'ObjectArray';
}

/** A reading for a value, its type given (from metadata) or inferred. */
function reading(
  name: string,
  v: Value,
  given: string | undefined,
  base: Record<string, unknown>,
): Record<string, unknown> {
  const r: Record<string, unknown> = { ...base, resourceName: name };
  let type = given;
  if (!type) {
    if (typeof v === 'boolean') type = 'Bool';
    else if (typeof v === 'bigint') type = 'Int64';
    else if (typeof v === 'number') type = 'Float64';
    else if (typeof v === 'string') type = 'String';
    else if (v instanceof Uint8Array) type = 'Binary';
    else if (Array.isArray(v)) type = arrayType(v);
    else type = 'Object';
  }
  r.valueType = type;
  if (type === 'Binary') {
    r.binaryValue =
      v instanceof Uint8Array ? Buffer.from(v).toString('base64') : Buffer.from(String(v)).toString('base64');
    r.mediaType = (base.mediaType as string | undefined) ?? 'application/octet-stream';
    r.value = '';
  } else if (type === 'Object' || type === 'ObjectArray') {
    r.objectValue = plainJson(v);
    r.value = '';
  } else if (Array.isArray(v)) {
    r.value = `[${v.map((x) => scalarText(x, type!.slice(0, -'Array'.length))).join(', ')}]`;
  } else {
    r.value = scalarText(v, type);
  }
  return r;
}

function scalarText(v: Value, type: string): string {
  if (FLOAT_TYPES.has(type) && (typeof v === 'number' || typeof v === 'bigint')) return goExp(Number(v));
  if (type === 'String' && typeof v === 'string') return v;
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(plainJson(v));
  return String(v);
}

function plainJson(v: Value): unknown {
  return JSON.parse(
    JSON.stringify(v, (_k, x: unknown) =>
      typeof x === 'bigint' ? Number(x) : x instanceof Uint8Array ? Buffer.from(x).toString('base64') : x,
    ),
  );
}

export interface EventDefaults {
  deviceName: string;
  profileName: string;
  sourceName: string;
  /** the row field holding `meta(*)`-style metadata, or '' */
  metadataField: string;
}

/**
 * One event holding a reading for every non-null field of every row; the metadata field of the first row (or the
 * defaults) names the device, profile and source, and per-resource entries of the metadata give reading types.
 */
export function rowsEvent(rows: readonly ValueObject[], d: EventDefaults): Record<string, unknown> {
  const nowNs = Date.now() * 1_000_000;
  const first = rows[0] ?? {};
  const fm = d.metadataField !== '' && isObject(first[d.metadataField]) ? (first[d.metadataField] as ValueObject) : {};
  const str = (m: ValueObject, k: string, dflt: string): string =>
    typeof m[k] === 'string' && m[k] !== '' ? (m[k] as string) : dflt;
  const event: Record<string, unknown> = {
    apiVersion: 'v3',
    id: str(fm, 'id', randomUUID()),
    deviceName: str(fm, 'deviceName', d.deviceName),
    profileName: str(fm, 'profileName', d.profileName),
    sourceName: str(fm, 'sourceName', d.sourceName),
    origin: typeof fm.origin === 'bigint' || typeof fm.origin === 'number' ? Number(fm.origin) : nowNs,
    readings: [] as unknown[],
  };
  if (isObject(fm.tags)) event.tags = plainJson(fm.tags);
  const readings = event.readings as unknown[];
  for (const row of rows) {
    const m = d.metadataField !== '' && isObject(row[d.metadataField]) ? (row[d.metadataField] as ValueObject) : {};
    for (const [name, v] of Object.entries(row)) {
      if (name === d.metadataField || v === null || v === undefined) continue;
      const rm = isObject(m[name]) ? (m[name] as ValueObject) : {};
      const base: Record<string, unknown> = {
        id: str(rm, 'id', randomUUID()),
        origin:
          typeof rm.origin === 'bigint' || typeof rm.origin === 'number' ? Number(rm.origin) : (event.origin as number),
        deviceName: str(rm, 'deviceName', event.deviceName as string),
        profileName: str(rm, 'profileName', event.profileName as string),
      };
      if (typeof rm.mediaType === 'string') base.mediaType = rm.mediaType;
      readings.push(
        reading(name, v, typeof rm.valueType === 'string' && rm.valueType !== '' ? rm.valueType : undefined, base),
      );
    }
  }
  return event;
}

/** The envelope of an event (messageType event) or of an AddEventRequest wrapping it (messageType request). */
export function envelope(event: Record<string, unknown>, messageType: MessageType, contentType: string): Uint8Array {
  const payload = messageType === 'request' ? { apiVersion: 'v3', requestId: randomUUID(), event } : event;
  const env = {
    apiVersion: 'v3',
    receivedTopic: '',
    correlationID: randomUUID(),
    requestID: '',
    errorCode: 0,
    payload,
    contentType,
    queryParams: {},
  };
  return Buffer.from(JSON.stringify(env));
}
