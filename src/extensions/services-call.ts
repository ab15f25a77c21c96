/**
 * How a SQL call of a service function becomes a remote call (docs/runtime.md §6.3): the arguments are mapped onto the
 * method's input message, sent over REST, gRPC or msgpack-rpc through the {@link ServiceTransport}, and the reply is
 * converted back into Eddy values (int → bigint, float → number, wrapper messages → their bare value). The functions
 * are asynchronous: the arguments are read and encoded before the first await, and the rule's asynchronous node
 * awaits the reply.
 */
import type * as protobuf from 'protobufjs';
import { protobufjs } from '../core/protobuf-library.js';
import type { FunctionDef } from '../functions/registry.js';
import {
  castToBool,
  castToBytes,
  castToFloat,
  castToInt,
  castToString,
  EvalError,
  isObject,
  toJsonData,
  utf8Bytes,
  utf8Text,
  type Value,
  type ValueObject,
} from '../values/index.js';
import type { InterfaceDef, SchemaMethod } from './services-def.js';
import { TransportError, type RemoteCall, type RemoteReply, type ServiceTransport } from './services-transport.js';

const CALL_TIMEOUT_MS = 5000;

const INT32 = new Set(['int32', 'sint32', 'sfixed32', 'uint32', 'fixed32']);
const INT64 = new Set(['int64', 'sint64', 'sfixed64', 'uint64', 'fixed64']);
const FLOATS = new Set(['double', 'float']);

const WRAPPERS = new Set(
  ['Double', 'Float', 'Int64', 'UInt64', 'Int32', 'UInt32', 'Bool', 'String', 'Bytes'].map(
    (n) => `.google.protobuf.${n}Value`,
  ),
);

function isWrapper(t: protobuf.Type): boolean {
  return WRAPPERS.has(t.fullName);
}

/** proto3 JSON name of a field: underscores removed, the following letter upper-cased. */
function jsonName(name: string): string {
  return name.replace(/_+([a-zA-Z0-9])/g, (_, c: string) => c.toUpperCase());
}

// ------------------------------------------------------------------------------------ values → message objects

function scalarToProto(type: string, v: Value, path: string): unknown {
  try {
    if (INT32.has(type)) return Number(castToInt(v));
    if (INT64.has(type)) return castToInt(v).toString();
    if (FLOATS.has(type)) return castToFloat(v);
    if (type === 'bool') return castToBool(v);
    if (type === 'string') return castToString(v);
    if (type === 'bytes') return castToBytes(v);
  } catch (e) {
    throw new EvalError(`invalid value for field ${path}: ${(e as Error).message}`);
  }
  throw new EvalError(`unsupported field type ${type} of ${path}`);
}

function valueToField(field: protobuf.Field, v: Value, path: string): unknown {
  const rt = field.resolvedType;
  if (rt instanceof protobufjs().Type) {
    if (isWrapper(rt) && !isObject(v)) return { value: valueToField(rt.fields.value, v, `${path}.value`) };
    if (!isObject(v)) throw new EvalError(`invalid value for field ${path}: expect an object`);
    return valueToMessage(rt, v, path);
  }
  if (rt instanceof protobufjs().Enum) {
    if (typeof v === 'string') return v;
    return Number(castToInt(v));
  }
  return scalarToProto(field.type, v, path);
}

function fieldValue(field: protobuf.Field, v: Value, path: string): unknown {
  if (field.map) {
    if (!isObject(v)) throw new EvalError(`invalid value for field ${path}: expect an object`);
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) out[k] = valueToField(field, v[k], `${path}.${k}`);
    return out;
  }
  if (field.repeated) {
    if (!Array.isArray(v)) throw new EvalError(`invalid value for field ${path}: expect an array`);
    return v.map((x, i) => valueToField(field, x, `${path}[${i}]`));
  }
  return valueToField(field, v, path);
}

/** A row or object → the plain object protobufjs' `fromObject` takes (proto field names). */
function valueToMessage(type: protobuf.Type, v: ValueObject, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of type.fieldsArray) {
    const x = v[f.name] !== undefined ? v[f.name] : v[jsonName(f.name)];
    if (x === undefined || x === null) continue;
    out[f.name] = fieldValue(f, x, path === '' ? f.name : `${path}.${f.name}`);
  }
  return out;
}

/** The call's arguments mapped onto the input message (docs/runtime.md §6.3 table). */
export function argsToMessage(type: protobuf.Type, args: Value[]): Record<string, unknown> {
  const fields = type.fieldsArray;
  if (args.length === 0) {
    if (fields.length > 0)
      throw new EvalError(`the message ${type.name} has ${fields.length} fields but no argument is given`);
    return {};
  }
  if (args.length === 1) {
    const a = args[0];
    if (
      isObject(a) &&
      !(fields.length === 1 && !(fields[0].resolvedType instanceof protobufjs().Type) && !fields[0].map)
    ) {
      return valueToMessage(type, a, '');
    }
    if (fields.length !== 1)
      throw new EvalError(`the message ${type.name} has ${fields.length} fields, one argument cannot fill it`);
    return a === null || a === undefined ? {} : { [fields[0].name]: fieldValue(fields[0], a, fields[0].name) };
  }
  if (args.length !== fields.length) {
    throw new EvalError(`the message ${type.name} has ${fields.length} fields but ${args.length} arguments are given`);
  }
  const out: Record<string, unknown> = {};
  for (let i = 0; i < fields.length; i++) {
    if (args[i] === null || args[i] === undefined) continue;
    out[fields[i].name] = fieldValue(fields[i], args[i], fields[i].name);
  }
  return out;
}

// ------------------------------------------------------------------------------------ message objects → values

function protoScalarToValue(type: string, v: unknown): Value {
  if (INT32.has(type) || INT64.has(type)) return BigInt(v as string | number);
  if (FLOATS.has(type)) return Number(v);
  if (type === 'bytes') return v instanceof Uint8Array ? new Uint8Array(v) : null;
  return v as Value;
}

function protoFieldToValue(field: protobuf.Field, v: unknown): Value {
  const rt = field.resolvedType;
  if (rt instanceof protobufjs().Type)
    return v === null || v === undefined ? null : messageToValue(rt, v as Record<string, unknown>);
  if (rt instanceof protobufjs().Enum) return v as Value;
  return protoScalarToValue(field.type, v);
}

/** A decoded message (from `toObject` with longs and enums as strings) → values; wrappers become bare values. */
function messageToValue(type: protobuf.Type, obj: Record<string, unknown>): Value {
  if (isWrapper(type)) return protoFieldToValue(type.fields.value, obj.value);
  const out: ValueObject = {};
  for (const f of type.fieldsArray) {
    const v = obj[f.name];
    if (v === undefined) continue;
    if (f.map) {
      const m: ValueObject = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) m[k] = protoFieldToValue(f, x);
      out[f.name] = m;
    } else if (f.repeated) {
      out[f.name] = (v as unknown[]).map((x) => protoFieldToValue(f, x));
    } else out[f.name] = protoFieldToValue(f, v);
  }
  return out;
}

const TO_OBJECT: protobuf.IConversionOptions = {
  longs: String,
  enums: String,
  defaults: true,
  arrays: true,
  objects: true,
};

function decodeBinary(type: protobuf.Type, bytes: Uint8Array): Value {
  return messageToValue(type, type.toObject(type.decode(bytes), TO_OBJECT));
}

// ------------------------------------------------------------------------------------ JSON ↔ message objects

/** A message object (proto names) → its protobuf JSON form (lowerCamel names, 64-bit ints as strings). */
function messageToJson(type: protobuf.Type, obj: Record<string, unknown>): unknown {
  const msg = type.fromObject(obj);
  const plain = type.toObject(msg, { longs: String, enums: String, bytes: String, json: true });
  return renameToJson(type, plain);
}

function renameToJson(type: protobuf.Type, plain: Record<string, unknown>): unknown {
  if (isWrapper(type)) return plain.value ?? null;
  const out: Record<string, unknown> = {};
  for (const f of type.fieldsArray) {
    const v = plain[f.name];
    if (v === undefined) continue;
    const rt = f.resolvedType;
    const conv = (x: unknown) =>
      rt instanceof protobufjs().Type && x !== null ? renameToJson(rt, x as Record<string, unknown>) : x;
    out[jsonName(f.name)] = f.map
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, conv(x)]))
      : f.repeated
        ? (v as unknown[]).map(conv)
        : conv(v);
  }
  return out;
}

/** Protobuf JSON (either name form) → a message object `fromObject` takes; bare values fill wrapper fields. */
function jsonToMessageObject(type: protobuf.Type, json: unknown): Record<string, unknown> {
  if (isWrapper(type)) return { value: json };
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new EvalError(`cannot convert the response to message ${type.name}: expect a JSON object`);
  }
  const src = json as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const f of type.fieldsArray) {
    const v = src[jsonName(f.name)] !== undefined ? src[jsonName(f.name)] : src[f.name];
    if (v === undefined || v === null) continue;
    const rt = f.resolvedType;
    const conv = (x: unknown) => (rt instanceof protobufjs().Type && x !== null ? jsonToMessageObject(rt, x) : x);
    out[f.name] = f.map
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, conv(x)]))
      : f.repeated && Array.isArray(v)
        ? v.map(conv)
        : conv(v);
  }
  return out;
}

function decodeJsonReply(type: protobuf.Type, json: unknown): Value {
  try {
    return messageToValue(type, type.toObject(type.fromObject(jsonToMessageObject(type, json)), TO_OBJECT));
  } catch (e) {
    if (e instanceof EvalError) throw e;
    throw new EvalError(`cannot convert the response to message ${type.name}: ${(e as Error).message}`);
  }
}

// ------------------------------------------------------------------------------------ calls

/** One call with the interface's retry policy: transport failures are retried `retryCount` times. */
async function callWithRetry(transport: ServiceTransport, iface: InterfaceDef, call: RemoteCall): Promise<RemoteReply> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await transport.call(call);
    } catch (e) {
      if (!(e instanceof TransportError) || attempt >= iface.options.retryCount) {
        throw new EvalError(`${iface.protocol} call to ${iface.addr} failed: ${(e as Error).message}`);
      }
      if (iface.options.retryIntervalMs > 0) await new Promise((r) => setTimeout(r, iface.options.retryIntervalMs));
    }
  }
}

/** The longest a call with every retry can take, plus a margin: the asynchronous node's time limit. */
function callTimeLimit(iface: InterfaceDef): number {
  const attempts = iface.options.retryCount + 1;
  return attempts * (CALL_TIMEOUT_MS + 1000) + iface.options.retryCount * iface.options.retryIntervalMs + 1000;
}

function joinUrl(base: string, path: string): string {
  if (path === '') return base;
  return base.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`);
}

function httpCall(iface: InterfaceDef, method: string, url: string, body: string | undefined): HttpCallResult {
  const headers: Record<string, string> = { ...iface.options.headers };
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
    headers['Content-Type'] = 'application/json';
  return { method, url, headers, body };
}

interface HttpCallResult {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}

async function sendHttp(transport: ServiceTransport, iface: InterfaceDef, c: HttpCallResult): Promise<RemoteReply> {
  const reply = await callWithRetry(transport, iface, {
    kind: 'http',
    method: c.method,
    url: c.url,
    headers: c.headers,
    body: c.body === undefined ? undefined : utf8Bytes(c.body),
    timeoutMs: CALL_TIMEOUT_MS,
    insecureSkipVerify: iface.options.insecureSkipVerify,
  });
  if (reply.status < 200 || reply.status > 299) {
    throw new EvalError(`http call to ${c.url} failed with status ${reply.status}: ${utf8Text(reply.body)}`);
  }
  return reply;
}

const HTTP_VERBS = ['get', 'post', 'put', 'delete', 'patch'] as const;

interface HttpRule {
  verb: string;
  path: string;
  body: string | undefined;
}

function httpRuleOf(m: protobuf.Method): HttpRule | undefined {
  const opts = (m.options ?? {}) as Record<string, unknown>;
  for (const verb of HTTP_VERBS) {
    const p = opts[`(google.api.http).${verb}`];
    if (typeof p === 'string') {
      const b = opts['(google.api.http).body'];
      return { verb: verb.toUpperCase(), path: p, body: typeof b === 'string' && b !== '' ? b : undefined };
    }
  }
  return undefined;
}

/** Fills `{field}` / `{a.b=prefix/*}` placeholders from the message, removing the fields used. */
function expandPath(template: string, msg: Record<string, unknown>, input: protobuf.Type): string {
  return template.replace(/\{([^}=]+)(?:=([^}]*))?\}/g, (_, ref: string, pattern: string | undefined) => {
    const parts = ref.trim().split('.');
    let holder: Record<string, unknown> | undefined = msg;
    let type: protobuf.Type | undefined = input;
    for (let i = 0; i < parts.length - 1; i++) {
      const next: unknown = holder?.[parts[i]];
      const f: protobuf.Field | undefined = type?.fields[parts[i]];
      holder = typeof next === 'object' && next !== null ? (next as Record<string, unknown>) : undefined;
      type = f?.resolvedType instanceof protobufjs().Type ? f.resolvedType : undefined;
    }
    const last = parts[parts.length - 1];
    const raw = holder?.[last];
    if (raw === undefined || raw === null) throw new EvalError(`the path parameter ${ref} has no value`);
    const text = raw instanceof Uint8Array ? Buffer.from(raw).toString('base64') : String(raw);
    delete holder![last];
    if (pattern !== undefined) {
      const prefix = pattern.replace(/\*+$/, '');
      if (!text.startsWith(prefix)) throw new EvalError(`the path parameter ${ref} must start with ${prefix}`);
      return text.split('/').map(encodeURIComponent).join('/');
    }
    return encodeURIComponent(text);
  });
}

function decodeHttpReply(m: SchemaMethod, reply: RemoteReply, url: string): Value {
  const ct = reply.contentType.toLowerCase();
  const text = utf8Text(reply.body);
  if (ct.startsWith('application/json')) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (e) {
      throw new EvalError(`invalid JSON response from ${url}: ${(e as Error).message}`);
    }
    return decodeJsonReply(m.output, json);
  }
  if (ct.startsWith('text/plain') && isWrapper(m.output)) return decodeJsonReply(m.output, text);
  throw new EvalError(`unsupported response content type ${reply.contentType} from ${url}`);
}

async function restSchemaCall(
  transport: ServiceTransport,
  iface: InterfaceDef,
  m: SchemaMethod,
  args: Value[],
): Promise<Value> {
  const rule = httpRuleOf(m.method);
  let c: HttpCallResult;
  if (rule) {
    const msg = argsToMessage(m.input, args);
    const url = joinUrl(iface.addr, expandPath(rule.path, msg, m.input));
    let body: string | undefined;
    if (rule.body === '*') body = JSON.stringify(messageToJson(m.input, msg));
    else if (rule.body !== undefined) {
      const f = m.input.fields[rule.body];
      if (!f) throw new EvalError(`the body field ${rule.body} is not a field of ${m.input.name}`);
      const sub = msg[rule.body];
      body =
        f.resolvedType instanceof protobufjs().Type
          ? JSON.stringify(sub === undefined ? {} : messageToJson(f.resolvedType, sub as Record<string, unknown>))
          : JSON.stringify(sub ?? null);
    }
    c = httpCall(iface, rule.verb, url, body);
  } else {
    const url = joinUrl(iface.addr, m.methodName);
    const body =
      m.input.fullName === '.google.protobuf.StringValue' && args.length === 1 && typeof args[0] === 'string'
        ? args[0] // pre-encoded JSON is sent as it is
        : JSON.stringify(messageToJson(m.input, argsToMessage(m.input, args)));
    c = httpCall(iface, 'POST', url, body);
  }
  return decodeHttpReply(m, await sendHttp(transport, iface, c), c.url);
}

async function grpcCall(
  transport: ServiceTransport,
  iface: InterfaceDef,
  m: SchemaMethod,
  args: Value[],
): Promise<Value> {
  let bytes: Uint8Array;
  try {
    bytes = m.input.encode(m.input.fromObject(argsToMessage(m.input, args))).finish();
  } catch (e) {
    if (e instanceof EvalError) throw e;
    throw new EvalError(`cannot encode message ${m.input.name}: ${(e as Error).message}`);
  }
  const reply = await callWithRetry(transport, iface, {
    kind: 'grpc',
    target: new URL(iface.addr).host,
    path: `/${m.serviceFullName}/${m.methodName}`,
    body: bytes,
    timeoutMs: CALL_TIMEOUT_MS,
  });
  if (reply.status !== 0)
    throw new EvalError(`grpc call ${m.methodName} failed with status ${reply.status}: ${utf8Text(reply.body)}`);
  return decodeBinary(m.output, reply.body);
}

/** A message object (proto names, 64-bit ints as text) → plain msgpack data (64-bit ints as bigint). */
function messageToPlain(type: protobuf.Type, obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of type.fieldsArray) {
    const v = obj[f.name];
    if (v === undefined) continue;
    out[f.name] = fieldToPlain(f, v);
  }
  return out;
}

function fieldToPlain(f: protobuf.Field, v: unknown): unknown {
  const one = (x: unknown): unknown => {
    const rt = f.resolvedType;
    if (rt instanceof protobufjs().Type) {
      const o = x as Record<string, unknown>;
      return isWrapper(rt) ? fieldToPlain(rt.fields.value, o.value) : messageToPlain(rt, o);
    }
    return INT64.has(f.type) && typeof x === 'string' ? BigInt(x) : x;
  };
  if (f.map) return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, one(x)]));
  if (f.repeated) return (v as unknown[]).map(one);
  return one(v);
}

/** msgpack data → the protobuf JSON shape `jsonToMessageObject` reads (bigints as text). */
function plainToJson(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(plainToJson);
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), plainToJson(x)]));
  if (typeof v === 'object' && v !== null)
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plainToJson(x)]));
  return v;
}

/**
 * msgpack-rpc: the arguments are converted through the input message; no argument → no params, one → that value
 * (the whole message for an object argument), n → one param per field.
 */
async function msgpackCall(
  transport: ServiceTransport,
  iface: InterfaceDef,
  m: SchemaMethod,
  args: Value[],
): Promise<Value> {
  const msg = argsToMessage(m.input, args);
  const fields = m.input.fieldsArray;
  let params: unknown[];
  if (args.length === 0) params = [];
  else if (
    args.length === 1 &&
    isObject(args[0]) &&
    !(fields.length === 1 && !(fields[0].resolvedType instanceof protobufjs().Type))
  ) {
    params = [messageToPlain(m.input, msg)];
  } else params = fields.map((f) => (msg[f.name] === undefined ? null : fieldToPlain(f, msg[f.name])));
  const reply = await callWithRetry(transport, iface, {
    kind: 'msgpack',
    target: new URL(iface.addr).host,
    method: m.methodName,
    params,
    timeoutMs: CALL_TIMEOUT_MS,
  });
  if (reply.status !== 0) throw new EvalError(`msgpack-rpc call ${m.methodName} failed: ${utf8Text(reply.body)}`);
  return decodeJsonReply(m.output, plainToJson(reply.value));
}

/** Schemaless REST: `iface(method, uri, body…)`. */
async function restSchemalessCall(transport: ServiceTransport, iface: InterfaceDef, args: Value[]): Promise<Value> {
  if (args.length < 2) throw new EvalError('expect at least 2 arguments: the http method and the uri');
  if (typeof args[0] !== 'string' || typeof args[1] !== 'string')
    throw new EvalError('the http method and the uri must be strings');
  const method = args[0].toUpperCase();
  const bodyArgs = args.slice(2);
  const body =
    bodyArgs.length === 0
      ? undefined
      : JSON.stringify(toJsonData(bodyArgs.length === 1 ? bodyArgs[0] : bodyArgs), jsonBigint);
  const c = httpCall(iface, method, joinUrl(iface.addr, args[1]), body);
  const reply = await sendHttp(transport, iface, c);
  const text = utf8Text(reply.body);
  if (reply.contentType.toLowerCase().startsWith('application/json')) {
    try {
      return JSON.parse(text) as Value;
    } catch {
      return text;
    }
  }
  return text;
}

function jsonBigint(_k: string, v: unknown): unknown {
  return typeof v === 'bigint' ? Number(v) : v;
}

/** The SQL functions of one interface. */
export function interfaceFunctions(iface: InterfaceDef, transport: ServiceTransport): FunctionDef[] {
  const async = { timeoutMs: callTimeLimit(iface) };
  if (iface.schemaless) {
    return [
      {
        name: iface.name,
        kind: 'scalar',
        nullCheck: 'none',
        async,
        execAsync: (args) => restSchemalessCall(transport, iface, args),
      },
    ];
  }
  return iface.methods.map((m): FunctionDef => {
    const execAsync =
      iface.protocol === 'grpc'
        ? (args: Value[]) => grpcCall(transport, iface, m, args)
        : iface.protocol === 'msgpack-rpc'
          ? (args: Value[]) => msgpackCall(transport, iface, m, args)
          : (args: Value[]) => restSchemaCall(transport, iface, m, args);
    return { name: m.funcName, kind: 'scalar', nullCheck: 'none', async, execAsync };
  });
}
