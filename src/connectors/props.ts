/**
 * Reading connector properties the way eKuiper does (docs/runtime.md conventions): names match case-insensitively
 * (exact spelling first), numbers given as floats are accepted for integer properties when integral, and strings are
 * not coerced to numbers or booleans. A wrong type throws an Error naming the property.
 */
import type { Props } from '../contracts/index.js';

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'slice';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'number':
    case 'bigint':
      return Number.isInteger(Number(v)) ? 'int' : 'float64';
    case 'boolean':
      return 'bool';
    default:
      return 'map';
  }
}

function typeError(name: string, want: string, v: unknown): Error {
  return new Error(
    `'${name}' expected type '${want}', got unconvertible type '${describe(v)}', value: '${typeof v === 'object' ? JSON.stringify(v) : String(v)}'`,
  );
}

/** The key of `props` matching `name` case-insensitively, exact spelling first. */
export function propKey(props: Props, name: string): string | undefined {
  if (Object.prototype.hasOwnProperty.call(props, name)) return name;
  const lower = name.toLowerCase();
  for (const k of Object.keys(props)) if (k.toLowerCase() === lower) return k;
  return undefined;
}

/** The raw value of a property (case-insensitive), undefined when absent. */
export function prop(props: Props, name: string): unknown {
  const k = propKey(props, name);
  return k === undefined ? undefined : props[k];
}

export function hasProp(props: Props, name: string): boolean {
  const v = prop(props, name);
  return v !== undefined && v !== null;
}

export function propString(props: Props, name: string, dflt: string): string;
export function propString(props: Props, name: string): string | undefined;
export function propString(props: Props, name: string, dflt?: string): string | undefined {
  const v = prop(props, name);
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'string') throw typeError(name, 'string', v);
  return v;
}

export function propBool(props: Props, name: string, dflt: boolean): boolean {
  const v = prop(props, name);
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw typeError(name, 'bool', v);
  return v;
}

export function propInt(props: Props, name: string, dflt: number): number {
  const v = prop(props, name);
  if (v === undefined || v === null) return dflt;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v !== 'number' || !Number.isInteger(v)) throw typeError(name, 'int', v);
  return v;
}

export function propStringList(props: Props, name: string): string[] | undefined {
  const v = prop(props, name);
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((e) => typeof e !== 'string')) throw typeError(name, '[]string', v);
  return v as string[];
}

export function propObject(props: Props, name: string): Record<string, unknown> | undefined {
  const v = prop(props, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw typeError(name, 'map[string]interface {}', v);
  return v as Record<string, unknown>;
}
