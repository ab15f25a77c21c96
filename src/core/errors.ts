/**
 * eKuiper's error catalogue (docs/rest-api.md §1.5) and the line between bad input and bugs. Every refusal becomes
 * `{"error": code, "message": text}` with status 404 for code 1002 and 400 otherwise, unless a handler sets its own
 * status (422 validate, 401 auth). A defect ({@link isDefect}) is never turned into a refusal: the REST layer answers
 * it 500, logs its stack once and counts it (`api/server.ts`).
 */
export const ErrorCode = {
  Undefined: 1000,
  General: 1001,
  NotFound: 1002,
  IO: 1003,
  Converter: 1004,
  Parser: 2001,
  Plan: 2101,
  Executor: 2201,
  Stream: 3000,
  Rule: 4000,
  ConfKey: 5000,
} as const;

export class EddyError extends Error {
  constructor(
    readonly code: number,
    message: string,
    /** HTTP status; defaults to 404 for NotFound, 400 for everything else */
    readonly status: number = code === ErrorCode.NotFound ? 404 : 400,
  ) {
    super(message);
    this.name = 'EddyError';
  }

  /** The same error with `prefix: ` in front of its message (eKuiper's per-endpoint prefixes). */
  withPrefix(prefix: string): EddyError {
    return new EddyError(this.code, `${prefix}: ${this.message}`, this.status);
  }
}

export const notFound = (message: string): EddyError => new EddyError(ErrorCode.NotFound, message);

/**
 * The classes JavaScript itself throws when code is wrong: reading a property of `undefined`, calling what is not a
 * function, a stack overflow, an invalid `BigInt` or `Date` conversion, a failed `node:assert`. Eddy throws none of
 * them on purpose (`EvalError` here is the built-in one, not `values/errors.ts`'s).
 */
const DEFECT_CLASSES: ReadonlyArray<abstract new (...args: never[]) => Error> = [
  TypeError,
  ReferenceError,
  RangeError,
  globalThis.EvalError,
];

/**
 * Whether `err` is a bug rather than a refusal of bad input: an error of a class JavaScript throws by itself
 * ({@link DEFECT_CLASSES}), a failed assertion, or a thrown value that is not an Error at all. Every other error is
 * a refusal: an {@link EddyError}, or an error a lower layer threw on purpose with a message for the user (plain
 * `Error`, its own subclasses, a `SyntaxError` of `JSON.parse` reading a body), answered 400.
 */
export function isDefect(err: unknown): boolean {
  if (!(err instanceof Error)) return true;
  if (err instanceof EddyError) return false;
  return err.name === 'AssertionError' || DEFECT_CLASSES.some((c) => err instanceof c);
}

/**
 * A refusal as an EddyError, keeping its code when it has one, adding `prefix: ` when given. A defect is returned
 * as it is ({@link isDefect}): a bug is never answered as bad input.
 */
export function toEddyError(err: unknown, fallbackCode: number = ErrorCode.Undefined, prefix?: string): unknown {
  if (isDefect(err)) return err;
  const e = err instanceof EddyError ? err : new EddyError(fallbackCode, (err as Error).message);
  return prefix ? e.withPrefix(prefix) : e;
}
