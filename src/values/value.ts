/**
 * Eddy's runtime value model (docs/sql.md §6.1).
 *
 * The int/float distinction is observable in eKuiper (`5 / 2` is 2, a schemaless `a = 5` gives `a / 2 = 2.5`),
 * so the two live in different JS types:
 * - int (64-bit)   → `bigint`  (exact beyond 2^53, wraps with BigInt.asIntN(64, …))
 * - float (double) → `number`
 * Everything else: `null` (missing fields read as `undefined` and are treated exactly like null), `boolean`,
 * `string`, `Uint8Array` (bytes), {@link DateTime}, arrays and plain objects.
 */
export type Value =
  null | undefined | boolean | number | bigint | string | Uint8Array | DateTime | Value[] | ValueObject;

/** A JSON-like object with string keys: a row's message, a struct field, an `object_construct` result. */
export interface ValueObject {
  [key: string]: Value;
}

/**
 * An instant with the zone it is shown in (eKuiper's Go `time.Time`).
 * `ms` is Unix epoch milliseconds; `nanos` the sub-millisecond nanoseconds (0..999_999);
 * `zone` an IANA name or "UTC" or a fixed offset such as "+08:00".
 */
export class DateTime {
  constructor(
    readonly ms: number,
    readonly zone: string = 'UTC',
    readonly nanos: number = 0,
  ) {}
}

export function isObject(v: Value): v is ValueObject {
  return (
    v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof DateTime)
  );
}
