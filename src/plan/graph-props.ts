/**
 * Reading the properties of graph nodes (docs/runtime.md §1.4) as eKuiper decodes them: field names matched
 * case-insensitively, Go's decoding errors for wrong types, values printed as Go prints them in error texts
 * (`map[expr:a >]`), and the node kinds whose properties need more than a lookup (inline streams, windows, scripts).
 */
import vm from 'node:vm';
import type { SelectStatement, WindowType } from '../sql/ast.js';
import { TIME_UNIT_MS } from '../sql/ast.js';
import { WINDOW_TYPES, windowFunctionType } from '../sql/windows.js';
import { parseSelect } from '../sql/index.js';
import type { StreamDef, StreamOptions } from '../catalog/types.js';
import { textOf } from '../values/text.js';
import type { Value } from '../values/value.js';
import type { WindowSpec } from './plan.js';
export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON field matched case-insensitively, as Go's decoder matches struct fields. */
export function field(o: Obj, name: string): unknown {
  if (Object.prototype.hasOwnProperty.call(o, name)) return o[name];
  const low = name.toLowerCase();
  for (const k of Object.keys(o)) if (k.toLowerCase() === low) return o[k];
  return undefined;
}

/** JSON data (numbers as floats) as Go prints an `interface{}` with `%v`. */
export function goText(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goText).join(' ')}]`;
  if (isObj(v)) {
    const keys = Object.keys(v).sort();
    return `map[${keys.map((k) => `${k}:${goText(v[k])}`).join(' ')}]`;
  }
  return textOf(v as Value);
}

class GraphError extends Error {}

export const fail = (msg: string): never => {
  throw new GraphError(msg);
};

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function typeName(v: unknown): string {
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return '[]interface {}';
  if (isObj(v)) return 'map[string]interface {}';
  return 'string';
}

export function decodeError(key: string, want: string, v: unknown): never {
  return fail(
    `1 error(s) decoding:\n\n* '${key}' expected type '${want}', got unconvertible type '${typeName(v)}', value: '${goText(v)}'`,
  );
}

export function str(props: Obj, key: string): string {
  const v = field(props, key);
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') decodeError(key, 'string', v);
  return v as string;
}

export function int(props: Obj, key: string): number {
  const v = field(props, key);
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v)) decodeError(key, 'int', v);
  return v as number;
}

export function bool(props: Obj, key: string): boolean {
  const v = field(props, key);
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') decodeError(key, 'bool', v);
  return v as boolean;
}

export function strings(props: Obj, key: string): string[] {
  const v = field(props, key);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) decodeError(key, '[]string', v);
  return (v as unknown[]).map((x, i) => (typeof x === 'string' ? x : decodeError(`${key}[${i}]`, 'string', x)));
}

export function objects(props: Obj, key: string): Obj[] {
  const v = field(props, key);
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) decodeError(key, '[]struct', v);
  return (v as unknown[]).map((x, i) => (isObj(x) ? x : decodeError(`${key}[${i}]`, 'struct', x)));
}

export function select(sql: string): SelectStatement {
  return parseSelect(sql);
}

/** The `expr` property as a string (`no expr` / `expr … is not string` otherwise). */
export function exprProp(props: Obj): string {
  const v = field(props, 'expr');
  if (v === undefined) fail('no expr');
  if (typeof v !== 'string') fail(`expr ${goText(v)} is not string`);
  return v as string;
}

const STREAM_OPTION_PROPS: ReadonlyArray<[string, keyof StreamOptions]> = [
  ['datasource', 'DATASOURCE'],
  ['key', 'KEY'],
  ['format', 'FORMAT'],
  ['confKey', 'CONF_KEY'],
  ['strictValidation', 'STRICT_VALIDATION'],
  ['timestamp', 'TIMESTAMP'],
  ['timestampFormat', 'TIMESTAMP_FORMAT'],
  ['retainSize', 'RETAIN_SIZE'],
  ['shared', 'SHARED'],
  ['schemaId', 'SCHEMAID'],
  ['delimiter', 'DELIMITER'],
];

/** A stream defined by a source node's own properties, named after the node. */
export function inlineStream(key: string, nodeType: string, props: Obj): StreamDef {
  const options: Record<string, unknown> = { TYPE: nodeType };
  for (const [prop, opt] of STREAM_OPTION_PROPS) {
    const v = field(props, prop);
    if (v === undefined || v === null) continue;
    const want = opt === 'STRICT_VALIDATION' || opt === 'SHARED' ? 'bool' : opt === 'RETAIN_SIZE' ? 'int' : 'string';
    if (want === 'bool' && typeof v !== 'boolean') decodeError(prop, 'bool', v);
    if (want === 'int' && (typeof v !== 'number' || !Number.isInteger(v))) decodeError(prop, 'int', v);
    if (want === 'string' && typeof v !== 'string') decodeError(prop, 'string', v);
    options[opt] = v;
  }
  if (!options.SCHEMAID) {
    const name = field(props, 'schemaName');
    const message = field(props, 'schemaMessage');
    if (typeof name === 'string' && typeof message === 'string') options.SCHEMAID = `${name}.${message}`;
  }
  return {
    name: key,
    kind: 'stream',
    fields: null,
    options: options as StreamOptions,
    sql: '',
  };
}

export function parseWindow(props: Obj): WindowSpec {
  const type = str(props, 'type');
  const unit = str(props, 'unit');
  const size = int(props, 'size');
  const interval = int(props, 'interval');
  if (size <= 0) fail(`window size ${size} is invalid`);
  const wt: WindowType = windowFunctionType(type) ?? fail(`unknown window type ${type}`);
  const decl = WINDOW_TYPES[wt];
  const { problem, lengths } = decl.graph(size, interval);
  if (problem !== undefined) fail(problem);
  const unitMs = !decl.timed
    ? 1
    : ((TIME_UNIT_MS as Record<string, number | undefined>)[unit.toUpperCase()] ?? fail(`Invalid unit ${unit}`));
  return {
    type: wt,
    unitMs,
    ...decl.sizes(lengths, unitMs),
    filter: null,
    trigger: null,
    triggerUsesHits: false,
  };
}

export function checkScript(source: string): void {
  const sandbox = vm.createContext({});
  try {
    new vm.Script(source).runInContext(sandbox, { timeout: 1000 });
  } catch (e) {
    fail(`failed to interprete script: ${messageOf(e)}`);
  }
  if (typeof (sandbox as Obj).exec !== 'function') fail('cannot find function "exec" in script');
}
