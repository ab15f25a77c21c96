/**
 * What a bundle's items are checked against before an import changes anything, and the items Eddy cannot install
 * (docs/runtime.md §9).
 */
import { isDefect } from '../core/errors.js';
import { isRecord } from '../core/fields.js';
import { goJsonSyntaxError } from '../core/gojson.js';
import type { StreamKind } from '../catalog/types.js';
import { parseUploadRecord } from '../catalog/uploads.js';
import { isSchemaType, parseSchemaRecord, validateSchemaRecord, type SchemaRecord } from '../catalog/schemas.js';
import type { ConfMap } from '../connectors/confkeys.js';
import { RuleDefError, decodeRuleText, parseRule } from '../rules/definition.js';
import { sqlStatementKind } from '../rules/engine.js';
import { BUNDLE_KEYS, emptyStatus, type Bundle, type BundleKey, type StatusDoc } from './bundle.js';
import { CONFIG_SECTIONS, type BundleDeps, type ImportControl } from './ports.js';

/** What the checks read: the services that validate items, the rule defaults. */
export type CheckDeps = Pick<BundleDeps, 'catalog' | 'scripts' | 'ruleDefaults' | 'timezone'>;

/** Sections whose items Eddy has nothing to install with, and why. */
export const UNSUPPORTED: ReadonlyArray<[BundleKey, string]> = [
  ['nativePlugins', 'native plugins are not supported by Eddy'],
  ['portablePlugins', 'portable plugins are not supported by Eddy'],
  ['Service', 'external services are not supported by Eddy'],
];

/**
 * Planning errors of a rule that is well formed but needs something Eddy does not provide; such a rule is imported
 * stopped (`fail to create the topo`), as eKuiper imports a rule whose plugin is not installed yet.
 */
export const MISSING_EXTENSION = [
  /^function \S+ not found$/,
  /^sink \S+ is not defined$/,
  /^parse \w+ \S+ with .* error: function \S+ not found$/,
];

export function needsMissingExtension(err: unknown): boolean {
  const text = err instanceof Error ? err.message.replace(/^Update rule error: /, '') : '';
  return MISSING_EXTENSION.some((re) => re.test(text));
}

/**
 * Splits off the items Eddy cannot install (the sections above, and schemas of eKuiper's `custom` type, which are Go
 * plugins): `notes` names each with why (reported, never fatal), `installable` is the rest of the bundle.
 */
export function notInstalled(
  bundle: Bundle,
  deps: Pick<BundleDeps, 'extensions' | 'builtIn' | 'customSchemas'>,
): { notes: StatusDoc; installable: Bundle } {
  const notes = emptyStatus();
  const installable: Bundle = { ...bundle, Schema: {} };
  const installers = deps.extensions ?? {};
  for (const [key, why] of UNSUPPORTED) {
    if (key in installers) continue;
    for (const name of Object.keys(bundle[key])) {
      const m = key === 'nativePlugins' ? /^(sources|sinks|functions)_(.+)$/.exec(name) : null;
      if (m && deps.builtIn?.(m[1] as 'sources' | 'sinks' | 'functions', m[2])) continue;
      notes[key][name] = `${why}: ${name} was not installed`;
    }
    installable[key] = {};
  }
  for (const [name, text] of Object.entries(bundle.Schema)) {
    let rec: SchemaRecord | undefined;
    try {
      rec = parseSchemaRecord(name, text);
    } catch {
      // a broken record is reported by the checks
    }
    if (rec?.type === 'custom') {
      // a format plugin archive installs; eKuiper's Go codec (a .so) cannot be loaded
      if (deps.customSchemas && rec.soFile.endsWith('.zip')) installable.Schema[name] = text;
      else
        notes.Schema[name] =
          `custom schemas are format plugin archives (.zip); a Go codec plugin cannot be loaded: ${name} was not installed`;
    } else if (rec?.soFile) {
      // a static codec (Go plugin) beside the proto: the proto alone serves Eddy
      if (rec.content === '' && rec.file === '') {
        notes.Schema[name] = `static schema plugins (soFile) are not supported by Eddy: ${name} was not installed`;
      } else {
        installable.Schema[name] = JSON.stringify({ ...rec, soFile: '' });
        notes.Schema[name] =
          `static schema plugins (soFile) are not supported by Eddy: ${name} was installed from its proto only`;
      }
    } else installable.Schema[name] = text;
  }
  return { notes, installable };
}

/** `a` with the entries of `b` added (a is changed). */
export function mergeInto(a: StatusDoc, b: StatusDoc): StatusDoc {
  for (const k of BUNDLE_KEYS) Object.assign(a[k], b[k]);
  return a;
}

export const NO_CONTROL: ImportControl = { cancelled: false };

export function message(err: unknown): string {
  return err instanceof RuleDefError ? err.detail : err instanceof Error ? err.message : String(err);
}

/** The text an item's refusal is reported with in the status document; a defect is thrown on (a bug is no item error). */
export function itemError(err: unknown): string {
  if (isDefect(err)) throw err;
  return message(err);
}

/** A config section item: JSON text of `{confKey: {props}}`. */
export function parseConfMap(text: string): ConfMap {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`invalid config: ${goJsonSyntaxError(text) ?? (e as Error).message}`);
  }
  if (!isRecord(v)) throw new Error('invalid config: expect a JSON object of config keys');
  const out: ConfMap = {};
  for (const [k, props] of Object.entries(v)) {
    if (!isRecord(props)) throw new Error(`invalid config key ${k}: expect a JSON object of properties`);
    out[k] = props;
  }
  return out;
}

/** Item checks that need no change of state: every problem a full import can know before it starts. */
export function checkBundle(deps: CheckDeps, bundle: Bundle): StatusDoc {
  const errs = emptyStatus();
  for (const [name, text] of Object.entries(bundle.uploads)) {
    try {
      parseUploadRecord(name, text);
    } catch (e) {
      errs.uploads[name] = itemError(e);
    }
  }
  for (const [name, text] of Object.entries(bundle.Schema)) {
    try {
      const rec = parseSchemaRecord(name, text);
      // custom schemas reach here only when they install (notInstalled)
      if (rec.type === 'custom') continue;
      if (!isSchemaType(rec.type)) throw new Error(`schema type ${rec.type} is not supported`);
      validateSchemaRecord(rec);
    } catch (e) {
      errs.Schema[name] = itemError(e);
    }
  }
  for (const [name, text] of Object.entries(bundle.scripts)) {
    try {
      deps.scripts.check(name, text);
    } catch (e) {
      errs.scripts[name] = itemError(e);
    }
  }
  for (const [key] of CONFIG_SECTIONS) {
    for (const [type, text] of Object.entries(bundle[key])) {
      try {
        parseConfMap(text);
      } catch (e) {
        errs[key][type] = itemError(e);
      }
    }
  }
  const names = new Map<string, StreamKind>();
  for (const kind of ['stream', 'table'] as const) {
    const key = kind === 'stream' ? 'streams' : 'tables';
    for (const [name, sql] of Object.entries(bundle[key])) {
      try {
        const def = deps.catalog.validate(sql, kind);
        if (names.has(def.name)) throw new Error(`Create ${kind} fails: Item ${def.name} already exists.`);
        names.set(def.name, kind);
      } catch (e) {
        errs[key][name] = itemError(e);
      }
    }
  }
  for (const [key, text] of Object.entries(bundle.rules)) {
    try {
      checkRule(deps, key, text);
    } catch (e) {
      errs.rules[key] = itemError(e);
    }
  }
  return errs;
}

/** A rule item's definition checks; the map key is the id when the JSON has none, and must match one it has. */
export function checkRule(deps: CheckDeps, key: string, text: string): void {
  const body = decodeRuleText(text);
  const id = body.id;
  if (typeof id === 'string' && id !== '' && id !== key)
    throw new RuleDefError('RuleId is not consistent with rule id.');
  parseRule(body, text, {
    defaults: deps.ruleDefaults,
    sql: { statementKind: sqlStatementKind },
    defaultId: key,
    timezone: deps.timezone,
  });
}
