/**
 * eKuiper's error catalogue (docs/rest-api.md §1.5). Every handled failure becomes `{"error": code, "message": text}`
 * with status 404 for code 1002 and 400 otherwise, unless a handler sets its own status (422 validate, 401 auth).
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

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

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
export const badRequest = (message: string, code: number = ErrorCode.Undefined): EddyError =>
  new EddyError(code, message);

/** Wraps any thrown value as an EddyError, keeping its code when it has one, adding `prefix: ` when given. */
export function toEddyError(err: unknown, fallbackCode: number = ErrorCode.Undefined, prefix?: string): EddyError {
  const e =
    err instanceof EddyError ? err : new EddyError(fallbackCode, err instanceof Error ? err.message : String(err));
  return prefix ? e.withPrefix(prefix) : e;
}
