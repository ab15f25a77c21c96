/**
 * Declared stream/table field types (docs/sql.md §3.2) and their eKuiper type codes (docs/rest-api.md §3.4).
 * Shared by the DDL parser, the catalog (describe/schema endpoints), the decoders and the binder.
 */
export type BasicTypeName = 'bigint' | 'float' | 'string' | 'bytea' | 'datetime' | 'boolean';

export type FieldType =
  | { readonly kind: BasicTypeName }
  | { readonly kind: 'array'; readonly element: FieldType }
  | { readonly kind: 'struct'; readonly fields: readonly StreamField[] };

export interface StreamField {
  readonly name: string;
  readonly type: FieldType;
}

/** eKuiper's integer data type codes, used by the describe endpoint's `FieldType: {Type: n}`. */
export const TYPE_CODES: Readonly<Record<FieldType['kind'], number>> = {
  bigint: 1,
  float: 2,
  string: 3,
  bytea: 4,
  datetime: 5,
  boolean: 6,
  array: 7,
  struct: 8,
};

/** Text form used by DESCRIBE: `bigint`, `array(string)`, `struct(a bigint, b float)`. */
export function typeText(t: FieldType): string {
  switch (t.kind) {
    case 'array':
      return `array(${typeText(t.element)})`;
    case 'struct':
      return `struct(${t.fields.map((f) => `${f.name} ${typeText(f.type)}`).join(', ')})`;
    default:
      return t.kind;
  }
}
