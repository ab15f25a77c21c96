/**
 * The output transformation of a sink (docs/runtime.md §3.3): dataTemplate → dataField → fields → format. Encoding is
 * lazy, so connectors that take the rows themselves (memory, sql, redis) never pay for it.
 */
import type { Format, SinkPayload } from '../../contracts/index.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { parseJsonExact } from '../formats/jsonparse.js';
import type { SinkUnit } from './cache.js';
import type { SinkSettings } from './settings.js';

const textEncoder = new TextEncoder();

/** One unit on its way to the connector. */
export class Payload implements SinkPayload {
  private encoded: Uint8Array | undefined;
  constructor(
    readonly data: ValueObject | ValueObject[] | Value,
    readonly rows: ValueObject[],
    private readonly encodeFn: () => Uint8Array,
    readonly resend: boolean,
  ) {}

  get bytes(): Uint8Array {
    if (this.encoded === undefined) this.encoded = this.encodeFn();
    return this.encoded;
  }

  /** bytes encoded ahead (a large list encoded in slices) */
  preset(bytes: Uint8Array): void {
    this.encoded = bytes;
  }
}

function pickFields(row: Value, fields: readonly string[]): ValueObject {
  const out: ValueObject = {};
  const src = isObject(row) ? row : {};
  for (const f of fields) out[f] = src[f] === undefined ? null : src[f];
  return out;
}

/** Template output parsed as JSON when it is JSON, else undefined. */
function parseTemplateOutput(text: string): Value {
  try {
    return parseJsonExact(text) as Value;
  } catch {
    return undefined;
  }
}

export class SinkTransform {
  /** JSON of the rows as they are: a list's text is the texts of its rows, which can be encoded a slice at a time */
  readonly plainJson: boolean;

  constructor(
    private readonly settings: SinkSettings,
    private readonly format: Format,
    /** renders a Go text/template against data; throws on template errors */
    private readonly render: (template: string, data: unknown) => string,
  ) {
    const s = settings;
    this.plainJson =
      s.format === 'json' &&
      s.dataTemplate === '' &&
      s.dataField === '' &&
      (s.fields === undefined || s.fields.length === 0);
  }

  /** The payload of one unit; throws when the template fails or its output cannot be reshaped. */
  apply(unit: SinkUnit, resend: boolean): Payload {
    const { dataTemplate, dataField, fields } = this.settings;
    const rows = Array.isArray(unit) ? unit : [unit];
    let data: Value = unit;
    let text: string | undefined;
    if (dataTemplate !== '') {
      text = this.render(dataTemplate, unit);
      data = parseTemplateOutput(text);
    }
    const reshaped = dataField !== '' || (fields !== undefined && fields.length > 0);
    if (reshaped) {
      if (text !== undefined && data === undefined) {
        throw new Error(`fail to decode data ${text} after applying dataTemplate`);
      }
      if (dataField !== '') {
        if (Array.isArray(data)) data = isObject(data[0]) ? (data[0][dataField] ?? null) : null;
        else data = isObject(data) ? (data[dataField] ?? null) : null;
      }
      if (fields !== undefined && fields.length > 0) {
        data = Array.isArray(data) ? data.map((r) => pickFields(r, fields)) : pickFields(data, fields);
      }
    }
    const templateOnly = text !== undefined && !reshaped;
    const format = this.format;
    const formatName = this.settings.format;
    const isJson = formatName === 'json';
    const finalData: Value = templateOnly && data === undefined ? text! : data;
    const encodeFn = (): Uint8Array => {
      if (templateOnly && isJson) return textEncoder.encode(text!);
      if (templateOnly && !isObject(data))
        throw new Error(`template output must be a JSON object for format ${formatName}`);
      return format.encode(finalData as ValueObject | ValueObject[]);
    };
    return new Payload(finalData, rows, encodeFn, resend);
  }
}
