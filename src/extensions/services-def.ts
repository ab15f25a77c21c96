/**
 * The service-definition file (docs/runtime.md §6.2, docs/rest-api.md §11.1): parsing, validation against its protobuf schema,
 * the describe shape (Go field names at the service and interface levels) and the functions it defines.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type * as protobuf from 'protobufjs';
import { protobufjs } from '../core/protobuf-library.js';
import { confinedImport } from '../core/files.js';

export type Protocol = 'rest' | 'grpc' | 'msgpack-rpc';

export interface ServiceOptions {
  headers: Record<string, string>;
  insecureSkipVerify: boolean;
  retryCount: number;
  retryIntervalMs: number;
}

/** One RPC method exposed as a SQL function. */
export interface SchemaMethod {
  /** the SQL name (after the `functions` renames) */
  funcName: string;
  /** the RPC method name */
  methodName: string;
  /** the proto service's full name without the leading dot, e.g. `pkg.Greeter` */
  serviceFullName: string;
  method: protobuf.Method;
  input: protobuf.Type;
  output: protobuf.Type;
}

export interface InterfaceDef {
  name: string;
  addr: string;
  protocol: Protocol;
  schemaType: string;
  schemaFile: string;
  schemaless: boolean;
  options: ServiceOptions;
  /** the RPC methods (empty for a schemaless interface, whose only function is named after the interface) */
  methods: SchemaMethod[];
  /** every SQL function name of the interface, in definition order */
  functions: string[];
  /** the definition's own objects, kept for describe */
  desc: unknown;
  rawOptions: unknown;
}

export interface ServiceDef {
  name: string;
  about: unknown;
  interfaces: InterfaceDef[];
}

/** `serviceFuncs` record of one function (eKuiper's keys). */
export interface ServiceFuncRecord {
  FuncName: string;
  ServiceName: string;
  InterfaceName: string;
  Addr: string;
  MethodName: string;
}

const PROTOCOLS: ReadonlySet<string> = new Set(['rest', 'grpc', 'msgpack-rpc']);

/** Our own minimal copies of the google.api HTTP annotation files, used when the archive does not ship them. */
const GOOGLE_API_HTTP = `syntax = "proto3";
package google.api;
message Http { repeated HttpRule rules = 1; bool fully_decode_reserved_expansion = 2; }
message HttpRule {
  string selector = 1;
  oneof pattern { string get = 2; string put = 3; string post = 4; string delete = 5; string patch = 6; CustomHttpPattern custom = 8; }
  string body = 7;
  string response_body = 12;
  repeated HttpRule additional_bindings = 11;
}
message CustomHttpPattern { string kind = 1; string path = 2; }
`;
// the `(google.api.http)` method option is read from the parsed options; its extension declaration is not needed
const GOOGLE_API_ANNOTATIONS = `syntax = "proto3";
package google.api;
`;
const BUILTIN_PROTOS: Record<string, string> = {
  'google/api/http.proto': GOOGLE_API_HTTP,
  'google/api/annotations.proto': GOOGLE_API_ANNOTATIONS,
};

export class ServiceDefError extends Error {}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(obj: Record<string, unknown>, key: string, where: string): string {
  const v = obj[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new ServiceDefError(`${where}: ${key} must be a string`);
  return v;
}

/** Go-style duration text (`500ms`, `1s`, `1m30s`) in ms. */
function parseDuration(text: string, where: string): number {
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let m: RegExpExecArray | null;
  let consumed = 0;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 };
  while ((m = re.exec(text)) !== null) {
    total += Number(m[1]) * unit[m[2]];
    consumed = re.lastIndex;
  }
  if (text === '' || consumed !== text.length) throw new ServiceDefError(`${where}: invalid retryInterval ${text}`);
  return total;
}

function parseOptions(v: unknown, where: string): ServiceOptions {
  const o: ServiceOptions = { headers: {}, insecureSkipVerify: false, retryCount: 0, retryIntervalMs: 1000 };
  if (v === undefined || v === null) return o;
  if (!isObj(v)) throw new ServiceDefError(`${where}: options must be an object`);
  if (v.headers !== undefined && v.headers !== null) {
    if (!isObj(v.headers)) throw new ServiceDefError(`${where}: options.headers must be an object`);
    for (const [k, h] of Object.entries(v.headers)) o.headers[k] = typeof h === 'string' ? h : JSON.stringify(h);
  }
  if (v.insecureSkipVerify !== undefined) o.insecureSkipVerify = v.insecureSkipVerify === true;
  if (v.retryCount !== undefined) {
    if (typeof v.retryCount !== 'number' || !Number.isInteger(v.retryCount) || v.retryCount < 0) {
      throw new ServiceDefError(`${where}: options.retryCount must be a non-negative integer`);
    }
    o.retryCount = v.retryCount;
  }
  if (v.retryInterval !== undefined) {
    if (typeof v.retryInterval === 'number') o.retryIntervalMs = v.retryInterval;
    else if (typeof v.retryInterval === 'string') o.retryIntervalMs = parseDuration(v.retryInterval, where);
    else throw new ServiceDefError(`${where}: options.retryInterval must be a duration`);
  }
  return o;
}

/**
 * Parses a proto file; the file and its imports are looked up in `schemaDirs` in order (the archive being installed,
 * then the installed schemas), then among the built-in google.api files.
 */
export function loadProto(schemaDirs: readonly string[], file: string): protobuf.Root {
  const root = new (protobufjs().Root)();
  const find = (target: string) => schemaDirs.map((d) => join(d, target)).find((p) => existsSync(p));
  // imports stay inside the schema folders (README "Input limits and file access")
  root.resolvePath = (origin, target) =>
    origin && !find(target) && target in BUILTIN_PROTOS ? target : confinedImport(schemaDirs, origin, target);
  // the google.api files come from memory when the archive does not ship them; a file listed in
  // `root.files` is not loaded again, so the import statements naming them are satisfied
  for (const [name, text] of Object.entries(BUILTIN_PROTOS)) {
    if (!find(name)) {
      protobufjs().parse(text, root, { keepCase: true });
      root.files.push(name);
    }
  }
  const main = find(file);
  if (!main) throw new Error(`open ${file}: no such file or directory`);
  root.loadSync(main, { keepCase: true });
  root.resolveAll();
  return root;
}

function servicesOf(ns: protobuf.NamespaceBase, out: protobuf.Service[] = []): protobuf.Service[] {
  for (const n of ns.nestedArray) {
    if (n instanceof protobufjs().Service) out.push(n);
    else if (n instanceof protobufjs().Namespace || n instanceof protobufjs().Type) servicesOf(n, out);
  }
  return out;
}

/**
 * Parses and checks the definition file of service `name`; `schemaDirs` are where its proto files may live.
 * Throws ServiceDefError with a message fit for `service create command error: …`.
 */
export function parseServiceDef(name: string, text: string, schemaDirs: readonly string[]): ServiceDef {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ServiceDefError(`parse services file ${name}.json error: ${(e as Error).message}`);
  }
  if (!isObj(doc)) throw new ServiceDefError(`parse services file ${name}.json error: expect a JSON object`);
  const ifaces = doc.interfaces;
  if (!isObj(ifaces) || Object.keys(ifaces).length === 0) {
    throw new ServiceDefError(`parse services file ${name}.json error: no interfaces defined`);
  }
  const def: ServiceDef = { name, about: doc.about ?? null, interfaces: [] };
  for (const [iname, raw] of Object.entries(ifaces)) {
    const where = `interface ${iname}`;
    if (!isObj(raw)) throw new ServiceDefError(`${where}: expect a JSON object`);
    const protocol = str(raw, 'protocol', where);
    if (!PROTOCOLS.has(protocol)) throw new ServiceDefError(`${where}: unsupported protocol ${protocol}`);
    const addr = str(raw, 'address', where);
    checkAddress(addr, protocol as Protocol, where);
    const schemaless = raw.schemaless === true;
    const schemaType = str(raw, 'schemaType', where);
    const schemaFile = str(raw, 'schemaFile', where);
    const iface: InterfaceDef = {
      name: iname,
      addr,
      protocol: protocol as Protocol,
      schemaType,
      schemaFile,
      schemaless,
      options: parseOptions(raw.options, where),
      methods: [],
      functions: [],
      desc: raw.description ?? null,
      rawOptions: raw.options ?? null,
    };
    if (schemaless) {
      if (protocol !== 'rest') throw new ServiceDefError(`${where}: schemaless is only supported by the rest protocol`);
      if (schemaFile !== '') throw new ServiceDefError(`${where}: a schemaless interface must not have a schemaFile`);
      iface.functions.push(iname);
    } else {
      if (schemaType !== 'protobuf') throw new ServiceDefError(`${where}: unsupported schema type ${schemaType}`);
      if (schemaFile === '') throw new ServiceDefError(`${where}: schemaFile is required`);
      // a schema file is a name inside the schema folder, never a path out of it
      if (isAbsolute(schemaFile) || schemaFile.split(/[\\/]/).includes('..') || schemaFile.includes('\0')) {
        throw new ServiceDefError(`${where}: invalid schemaFile ${schemaFile}`);
      }
      iface.methods = methodsOf(schemaDirs, schemaFile, raw.functions, where);
      for (const m of iface.methods) iface.functions.push(m.funcName);
    }
    def.interfaces.push(iface);
  }
  return def;
}

function checkAddress(addr: string, protocol: Protocol, where: string): void {
  let url: URL;
  try {
    url = new URL(addr);
  } catch {
    throw new ServiceDefError(`${where}: invalid address ${addr}`);
  }
  if (protocol === 'rest' && url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ServiceDefError(`${where}: invalid address ${addr}: the rest protocol needs an http or https url`);
  }
  if (protocol !== 'rest' && (url.protocol !== 'tcp:' || url.host === '' || url.port === '')) {
    throw new ServiceDefError(`${where}: invalid address ${addr}: the ${protocol} protocol needs tcp://host:port`);
  }
}

function methodsOf(schemaDirs: readonly string[], schemaFile: string, mapping: unknown, where: string): SchemaMethod[] {
  let root: protobuf.Root;
  try {
    root = loadProto(schemaDirs, schemaFile);
  } catch (e) {
    throw new ServiceDefError(`Fail to parse schema file ${schemaFile}: ${(e as Error).message}`);
  }
  const renames = new Map<string, string>();
  if (mapping !== undefined && mapping !== null) {
    if (!Array.isArray(mapping)) throw new ServiceDefError(`${where}: functions must be an array`);
    for (const f of mapping) {
      if (!isObj(f) || typeof f.name !== 'string' || typeof f.serviceName !== 'string' || f.name === '') {
        throw new ServiceDefError(`${where}: each function needs a name and a serviceName`);
      }
      renames.set(f.serviceName, f.name);
    }
  }
  const out: SchemaMethod[] = [];
  for (const svc of servicesOf(root)) {
    for (const m of svc.methodsArray) {
      if (m.requestStream || m.responseStream) continue; // only unary calls make functions
      m.resolve();
      out.push({
        funcName: renames.get(m.name) ?? m.name,
        methodName: m.name,
        serviceFullName: svc.fullName.replace(/^\./, ''),
        method: m,
        input: m.resolvedRequestType!,
        output: m.resolvedResponseType!,
      });
    }
  }
  for (const rpc of renames.keys()) {
    if (!out.some((m) => m.methodName === rpc)) throw new ServiceDefError(`${where}: the schema has no method ${rpc}`);
  }
  if (out.length === 0) throw new ServiceDefError(`${where}: the schema ${schemaFile} defines no unary method`);
  return out;
}

/** The describe shape (Go field names at the service and interface levels). */
export function describeService(def: ServiceDef): Record<string, unknown> {
  const interfaces: Record<string, unknown> = {};
  for (const i of def.interfaces) {
    interfaces[i.name] = {
      Desc: i.desc,
      Addr: i.addr,
      Protocol: i.protocol,
      Schema: { SchemaType: i.schemaType, SchemaFile: i.schemaFile, Schemaless: i.schemaless },
      Functions: i.functions,
      Options: i.rawOptions,
    };
  }
  return { About: def.about, Interfaces: interfaces };
}

/** The `serviceFuncs` records of a service, one per function. */
export function functionRecords(def: ServiceDef): ServiceFuncRecord[] {
  const out: ServiceFuncRecord[] = [];
  for (const i of def.interfaces) {
    if (i.schemaless) {
      out.push({ FuncName: i.name, ServiceName: def.name, InterfaceName: i.name, Addr: i.addr, MethodName: i.name });
    } else {
      for (const m of i.methods) {
        out.push({
          FuncName: m.funcName,
          ServiceName: def.name,
          InterfaceName: i.name,
          Addr: i.addr,
          MethodName: m.methodName,
        });
      }
    }
  }
  return out;
}
