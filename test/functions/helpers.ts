/** Calls built-ins the way compiled SQL does: through the registry's bound closures. */
import { setDefaultZone, type Value } from '../../src/values/index.js';
import {
  bindAggregate,
  bindAnalytic,
  bindMultiCol,
  bindScalar,
  createBuiltinRegistry,
  createFuncContext,
  type ArgInfo,
  type FuncContext,
} from '../../src/functions/index.js';

setDefaultZone('UTC');

export const registry = createBuiltinRegistry();
export const ctx: FuncContext = createFuncContext({ ruleId: 'rule0', ruleStart: 12345 });

export function call(name: string, ...args: Value[]): Value {
  const def = registry.get(name);
  if (!def) throw new Error(`no function ${name}`);
  return bindScalar(def)(args, ctx);
}

/** The error message a call fails with (fails the test when it does not fail). */
export function callError(name: string, ...args: Value[]): string {
  try {
    call(name, ...args);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`${name} did not fail`);
}

/** An aggregate over the rows' values of each argument: `agg('avg', [1n, 2n])`. */
export function agg(name: string, ...lists: Value[][]): Value {
  const def = registry.get(name)!;
  return bindAggregate(def)(lists, ctx);
}

export function aggError(name: string, ...lists: Value[][]): string {
  try {
    agg(name, ...lists);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`${name} did not fail`);
}

/** Runs an analytic function over a sequence of events: each entry is [args, valid?]. */
export function analyticSeq(name: string, events: [Value[], boolean?][]): Value[] {
  const def = registry.get(name)!;
  const fn = bindAnalytic(def);
  const state = def.createState!();
  return events.map(([args, valid]) => fn(state, args, ctx, valid ?? true));
}

export function multiColSeq(name: string, names: string[], events: Value[][]): Value[] {
  const def = registry.get(name)!;
  const fn = bindMultiCol(def);
  const state = def.createState!();
  return events.map((args) => fn(state, args, names, ctx));
}

// Argument descriptions for creation-time validation.
export const lit = {
  int: (v: bigint): ArgInfo => ({ kind: 'int', literal: v }),
  float: (v: number): ArgInfo => ({ kind: 'float', literal: v }),
  str: (v: string): ArgInfo => ({ kind: 'string', literal: v }),
  bool: (v: boolean): ArgInfo => ({ kind: 'bool', literal: v }),
  boolExpr: (): ArgInfo => ({ kind: 'boolExpr' }),
  unit: (): ArgInfo => ({ kind: 'unit' }),
  field: (name = 'col'): ArgInfo => ({ kind: 'field', name }),
  star: (): ArgInfo => ({ kind: 'wildcard' }),
  other: (): ArgInfo => ({ kind: 'other' }),
};

export function validate(name: string, ...args: ArgInfo[]): string | undefined {
  return registry.validateCall(name, args);
}
