/**
 * The data bundle (docs/rest-api.md §7.1, docs/runtime.md §9.1): twelve sections, each mapping an item name to a string, and
 * the status document of the same shape mapping item names to error texts. Also the `{content}` / `{file}` request
 * bodies that import endpoints share.
 */
import { field } from '../core/fields.js';
import { readUrl, type FileRoots } from '../core/files.js';
import { goJsonSyntaxError } from '../core/gojson.js';

export const BUNDLE_KEYS = [
  'streams',
  'tables',
  'rules',
  'nativePlugins',
  'portablePlugins',
  'sourceConfig',
  'sinkConfig',
  'connectionConfig',
  'Service',
  'Schema',
  'uploads',
  'scripts',
] as const;

export type BundleKey = (typeof BUNDLE_KEYS)[number];
export type Section = Record<string, string>;
export type Bundle = Record<BundleKey, Section>;
/** Same keys as the bundle; item name → error text. All empty = complete success. */
export type StatusDoc = Record<BundleKey, Record<string, string>>;

export const RULESET_KEYS = ['streams', 'tables', 'rules'] as const;
export type Ruleset = Pick<Bundle, (typeof RULESET_KEYS)[number]>;

export function emptyBundle(): Bundle {
  const b = {} as Bundle;
  for (const k of BUNDLE_KEYS) b[k] = {};
  return b;
}

export const emptyStatus: () => StatusDoc = emptyBundle;

export function hasErrors(doc: StatusDoc): boolean {
  return BUNDLE_KEYS.some((k) => Object.keys(doc[k]).length > 0);
}

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v;
}

/**
 * Parses bundle text into its sections. Keys are matched case-insensitively (exact spelling first), missing keys
 * are empty, unknown keys ignored, as Go's decoder does; a section that is not an object of strings is an error
 * worded like Go's (`json: cannot unmarshal number into Go struct field Configuration.streams of type ...`).
 */
export function parseSections<K extends string>(
  text: string,
  keys: readonly K[],
  structName: string,
): Record<K, Section> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(goJsonSyntaxError(text) ?? (e as Error).message);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new Error(`json: cannot unmarshal ${jsonKind(v)} into Go value of type ${structName}`);
  }
  const obj = v as Record<string, unknown>;
  const out = {} as Record<K, Section>;
  for (const k of keys) {
    const raw = field(obj, k);
    const section: Section = {};
    if (raw !== undefined && raw !== null) {
      if (typeof raw !== 'object' || Array.isArray(raw)) {
        throw new Error(
          `json: cannot unmarshal ${jsonKind(raw)} into Go struct field ${structName}.${k} of type map[string]string`,
        );
      }
      for (const [name, item] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof item !== 'string') {
          throw new Error(
            `json: cannot unmarshal ${jsonKind(item)} into Go struct field ${structName}.${k} of type string`,
          );
        }
        section[name] = item;
      }
    }
    out[k] = section;
  }
  return out;
}

export function parseBundle(text: string): Bundle {
  return parseSections(text, BUNDLE_KEYS, 'Configuration');
}

/**
 * Go's decoding error for an import body whose `content` or `file` is not a string (null is fine), e.g.
 * `json: cannot unmarshal object into Go struct field configurationInfo.content of type string`.
 */
export function sourceTypeProblem(body: Record<string, unknown>, structName: string): string | undefined {
  for (const [k, v] of Object.entries(body)) {
    const name = ['content', 'file'].find((f) => f === k.toLowerCase());
    if (name !== undefined && v !== null && typeof v !== 'string') {
      return `json: cannot unmarshal ${jsonKind(v)} into Go struct field ${structName}.${name} of type string`;
    }
  }
  return undefined;
}

/** `{content}` or `{file}` of an import request, already checked for exclusivity. */
export type ImportSource = { content: string } | { file: string };

/** Why a `{content, file}` body is unusable, or the source it names. */
export function importSource(body: Record<string, unknown>): ImportSource | { problem: 'both' | 'neither' } {
  const content = field(body, 'content');
  const file = field(body, 'file');
  const c = typeof content === 'string' ? content : '';
  const f = typeof file === 'string' ? file : '';
  if (c !== '' && f !== '') return { problem: 'both' };
  if (c !== '') return { content: c };
  if (f !== '') return { file: f };
  return { problem: 'neither' };
}

/** The text an import source designates (reads the file URL). */
export async function sourceText(src: ImportSource, roots?: FileRoots): Promise<string> {
  if ('content' in src) return src.content;
  return (await readUrl(src.file, roots)).toString('utf8');
}
