/**
 * Creation-time argument checks (docs/sql.md §7.0): building blocks that look only at how arguments are written.
 */
import type { ArgInfo, ArgKind } from './registry.js';

export type Validator = (args: readonly ArgInfo[]) => string | undefined;

/** Kind names in `Expect <kind> type for parameter <n>`. */
export const NUMBER = 'number - float or int';
export const INT = 'int';
export const STRING = 'string';
export const BOOL = 'bool';
export const DATETIME = 'datetime';

/** Argument-kind groups of docs/sql.md §7.0. */
export const NUM_LIT: readonly ArgKind[] = ['int', 'float'];
export const BOOL_EXPR: readonly ArgKind[] = ['bool', 'boolExpr'];

export function expect(kind: string, index: number): string {
  return `Expect ${kind} type for parameter ${index + 1}`;
}

export function exactly(n: number): Validator {
  return (a) => (a.length === n ? undefined : `Expect ${n} arguments but found ${a.length}.`);
}

export function atLeast(n: number): Validator {
  return (a) => (a.length >= n ? undefined : `At least has ${n} argument but found ${a.length}.`);
}

export function between(min: number, max: number): Validator {
  return (a) =>
    a.length >= min && a.length <= max
      ? undefined
      : min + 1 === max
        ? `Expect ${min} or ${max} arguments but found ${a.length}.`
        : `Expect ${min} to ${max} arguments but found ${a.length}.`;
}

/** Argument `i` (if present) must not be written as any of `kinds`; else `Expect <expectName> type …`. */
export function rejects(i: number, expectName: string, kinds: readonly ArgKind[]): Validator {
  return (a) => (i < a.length && kinds.includes(a[i].kind) ? expect(expectName, i) : undefined);
}

/** Argument `i` (if present) must be written as one of `kinds`. */
export function mustBe(i: number, expectName: string, kinds: readonly ArgKind[]): Validator {
  return (a) => (i < a.length && !kinds.includes(a[i].kind) ? expect(expectName, i) : undefined);
}

export function all(...vs: Validator[]): Validator {
  return (a) => {
    for (const v of vs) {
      const m = v(a);
      if (m !== undefined) return m;
    }
    return undefined;
  };
}

/** Applies `v` to every argument index from `from` on. */
export function each(from: number, make: (i: number) => Validator): Validator {
  return (a) => {
    for (let i = from; i < a.length; i++) {
      const m = make(i)(a);
      if (m !== undefined) return m;
    }
    return undefined;
  };
}

/** docs/sql.md §7 "rejects num-lit, bool-expr, unit-lit" for string arguments. */
export const stringArg = (i: number): Validator => rejects(i, STRING, ['int', 'float', 'bool', 'boolExpr', 'unit']);
/** "rejects str-lit, bool-expr, unit-lit" for numeric arguments. */
export const numberArg = (i: number): Validator => rejects(i, NUMBER, ['string', 'bool', 'boolExpr', 'unit']);
/** "rejects float-lit, str-lit, bool-expr, unit-lit" for integer arguments. */
export const intArg = (i: number): Validator => rejects(i, INT, ['float', 'string', 'bool', 'boolExpr', 'unit']);
/** "rejects num/str literals and bool-expr" for datetime arguments. */
export const datetimeArg = (i: number): Validator =>
  rejects(i, DATETIME, ['int', 'float', 'string', 'bool', 'boolExpr', 'unit']);
/** "rejects num/str/unit literals" for boolean arguments. */
export const boolArg = (i: number): Validator => rejects(i, BOOL, ['int', 'float', 'string', 'unit']);
