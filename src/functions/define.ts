/** Small builders that keep the built-in definitions one line each. */
import type { Value, ValueObject } from '../values/index.js';
import type { FuncContext, FunctionDef, NullCheck } from './registry.js';
import type { Validator } from './validate.js';

export function scalar(
  name: string,
  nullCheck: NullCheck,
  validate: Validator | undefined,
  exec: (args: Value[], ctx: FuncContext) => Value,
  extra: Partial<Pick<FunctionDef, 'argMode' | 'rawErrors' | 'kind'>> = {},
): FunctionDef {
  return { name, kind: 'scalar', nullCheck, validate, exec, ...extra };
}

export function aggregate(
  name: string,
  nullCheck: NullCheck,
  validate: Validator | undefined,
  fn: (args: Value[][], ctx: FuncContext) => Value,
): FunctionDef {
  return { name, kind: 'aggregate', nullCheck, validate, aggregate: fn };
}

export function analytic<S>(
  name: string,
  validate: Validator | undefined,
  createState: () => S,
  fn: (state: S, args: Value[], ctx: FuncContext, valid: boolean) => Value,
): FunctionDef {
  return {
    name,
    kind: 'analytic',
    nullCheck: 'none',
    validate,
    createState,
    execAnalytic: fn as (state: unknown, args: Value[], ctx: FuncContext, valid: boolean) => Value,
  };
}

export function multiCol<S>(
  name: string,
  validate: Validator | undefined,
  createState: () => S,
  fn: (state: S, args: Value[], names: readonly string[], ctx: FuncContext) => ValueObject,
): FunctionDef {
  return {
    name,
    kind: 'multicol',
    nullCheck: 'none',
    validate,
    createState,
    execMultiCol: fn as (state: unknown, args: Value[], names: readonly string[], ctx: FuncContext) => ValueObject,
  };
}
