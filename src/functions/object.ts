/** Object functions (docs/sql.md §7.7). */
import { EvalError, isObject, textOf, type Value, type ValueObject } from '../values/index.js';
import type { FunctionDef } from './registry.js';
import { scalar } from './define.js';
import { atLeast, BOOL_EXPR, exactly, NUM_LIT, rejects, STRING, type Validator } from './validate.js';

const NOT_MAP = 'the argument should be map[string]interface{}';

function objectArg(v: Value): ValueObject {
  if (!isObject(v)) throw new EvalError(NOT_MAP);
  return v;
}

function firstMap(v: Value): ValueObject {
  if (!isObject(v)) throw new EvalError(`the first argument should be map[string]interface{}, got ${textOf(v)}`);
  return v;
}

function isNull(v: Value): boolean {
  return v === null || v === undefined;
}

/** object_pick of one key; `a.b` picks a nested member and rebuilds the nesting. */
function pick(src: ValueObject, key: string, out: ValueObject): void {
  if (Object.prototype.hasOwnProperty.call(src, key)) {
    out[key] = src[key];
    return;
  }
  const dot = key.indexOf('.');
  if (dot < 0) return;
  const head = key.slice(0, dot);
  const inner = src[head];
  if (!isObject(inner)) return;
  let target = out[head];
  if (!isObject(target)) {
    target = {};
  }
  const before = Object.keys(target).length;
  pick(inner, key.slice(dot + 1), target);
  if (Object.keys(target).length > before || Object.prototype.hasOwnProperty.call(out, head)) out[head] = target;
}

const constructValidate: Validator = (a) => {
  if (a.length % 2 !== 0) return 'the args must be key value pairs';
  for (let i = 0; i < a.length; i += 2) {
    const m = rejects(i, STRING, [...NUM_LIT, ...BOOL_EXPR])(a);
    if (m) return m;
  }
  return undefined;
};

export const objectFunctions: FunctionDef[] = [
  scalar('keys', 'N', exactly(1), (a) => Object.keys(objectArg(a[0]))),
  scalar('values', 'N', exactly(1), (a) => {
    const o = objectArg(a[0]);
    return Object.keys(o).map((k) => (o[k] === undefined ? null : o[k]));
  }),
  scalar('object', 'N', exactly(2), (a) => {
    const keys = a[0];
    const values = a[1];
    if (!Array.isArray(keys)) throw new EvalError('first argument should be []string');
    if (!Array.isArray(values)) throw new EvalError('second argument should be []interface{}');
    if (keys.length !== values.length) throw new EvalError('the length of the arguments should be same');
    const out: ValueObject = {};
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (typeof k !== 'string') throw new EvalError('first argument should be []string');
      out[k] = values[i] === undefined ? null : values[i];
    }
    return out;
  }),
  scalar('zip', 'N', exactly(1), (a) => {
    if (!Array.isArray(a[0])) throw new EvalError('each argument should be [][2]interface{}');
    const out: ValueObject = {};
    for (const item of a[0]) {
      if (isNull(item)) continue;
      if (!Array.isArray(item) || item.length !== 2) throw new EvalError('each argument should be [][2]interface{}');
      if (typeof item[0] !== 'string') throw new EvalError('the first element in the list item should be string');
      out[item[0]] = item[1] === undefined ? null : item[1];
    }
    return out;
  }),
  scalar('items', 'N', exactly(1), (a) => {
    if (!isObject(a[0])) throw new EvalError('first argument should be map[string]interface{}');
    const o = a[0];
    return Object.keys(o).map((k) => [k, o[k] === undefined ? null : o[k]]);
  }),
  scalar('object_concat', 'none', atLeast(2), (a) => {
    const out: ValueObject = {};
    for (const v of a) {
      if (isNull(v)) continue;
      if (!isObject(v)) throw new EvalError(`the argument should be map[string]interface{}, got ${textOf(v)}`);
      Object.assign(out, v);
    }
    return out;
  }),
  scalar('object_construct', 'none', constructValidate, (a) => {
    const out: ValueObject = {};
    for (let i = 0; i + 1 < a.length; i += 2) {
      const k = a[i];
      const v = a[i + 1];
      if (isNull(k) || isNull(v)) continue;
      if (typeof k !== 'string') throw new EvalError(`key ${textOf(k)} is not a string`);
      out[k] = v;
    }
    return out;
  }),
  scalar('erase', 'N', atLeast(2), (a) => {
    if (a.length !== 2) throw new EvalError(`the argument number should be 2, got ${a.length}`);
    const o = firstMap(a[0]);
    const out: ValueObject = { ...o };
    const k = a[1];
    if (typeof k === 'string') delete out[k];
    else if (Array.isArray(k)) {
      for (const x of k) delete out[textOf(x)];
    } else throw new EvalError('the argument should be slice or string');
    return out;
  }),
  scalar('object_size', 'Z', exactly(1), (a) => BigInt(Object.keys(objectArg(a[0])).length)),
  scalar('object_pick', 'none', atLeast(2), (a) => {
    if (isNull(a[0])) return null;
    const o = objectArg(a[0]);
    const out: ValueObject = {};
    for (let i = 1; i < a.length; i++) {
      const k = a[i];
      if (typeof k === 'string') pick(o, k, out);
      else if (Array.isArray(k)) for (const x of k) if (typeof x === 'string') pick(o, x, out);
    }
    return out;
  }),
  scalar('obj_to_kvpair_array', 'N', exactly(1), (a) => {
    const o = firstMap(a[0]);
    return Object.keys(o).map((k) => ({ key: k, value: o[k] === undefined ? null : o[k] }));
  }),
];
