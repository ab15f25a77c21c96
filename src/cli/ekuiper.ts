/**
 * `eddy import ekuiper <dir>` (docs/migrating.md): reads what an eKuiper 1.14 installation stored — its SQLite store
 * `data/sqliteKV.db` (store/ekuiper-sqlite.ts) and the user config keys in `data/sources`, `data/sinks` and
 * `data/connections` — into one data bundle (docs/rest-api.md §7.1) and imports it through the server's import
 * (a partial one: nothing the server already has is removed). Values the store keeps as Go structures rather than
 * texts cannot be read and are listed, as are the items the server refuses; either makes the command end with 1.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { readYamlFile } from '../config/index.js';
import { EkuiperSqliteStore, streamInfo } from '../store/ekuiper-sqlite.js';
import { CliError, ExitCode } from './client.js';
import { importBundle, type CommandContext } from './commands.js';
import { table } from './format.js';

type Section = Record<string, string>;

/** A data bundle (docs/rest-api.md §7.1), each item a text. */
export interface Bundle {
  streams: Section;
  tables: Section;
  rules: Section;
  nativePlugins: Section;
  portablePlugins: Section;
  sourceConfig: Section;
  sinkConfig: Section;
  connectionConfig: Section;
  Service: Section;
  Schema: Section;
  uploads: Section;
  scripts: Section;
}

export interface EkuiperReading {
  bundle: Bundle;
  /** `[namespace, key, why]` of what could not be carried over */
  skipped: string[][];
  /** the store file read */
  file: string;
}

/** The store and data folder of an eKuiper home, its data folder, or its store file. */
function locate(dir: string): { file: string; data: string } {
  const p = resolve(dir);
  if (existsSync(p) && statSync(p).isFile()) return { file: p, data: dirname(p) };
  for (const data of [join(p, 'data'), p]) {
    const file = join(data, 'sqliteKV.db');
    if (existsSync(file)) return { file, data };
  }
  throw new CliError(`no eKuiper store under ${p} (looked for data/sqliteKV.db and sqliteKV.db)`, ExitCode.Usage);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** A file's text when it is valid UTF-8 (the bundle carries texts only). */
function textOf(file: string): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(file));
  } catch {
    return undefined;
  }
}

/** The user layer of config keys: `data/sources/<type>.yaml`, `data/sinks/<type>.yaml`, `data/connections/…`. */
function configFiles(data: string, bundle: Bundle): void {
  for (const [folder, section] of [
    ['sources', bundle.sourceConfig],
    ['sinks', bundle.sinkConfig],
  ] as const) {
    const dir = join(data, folder);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).filter((n) => /\.ya?ml$/.test(n))) {
      const tree = readYamlFile(join(dir, name));
      const type = basename(name).replace(/\.ya?ml$/, '');
      if (Object.keys(tree).length > 0) section[type === 'mqtt_source' ? 'mqtt' : type] = JSON.stringify(tree);
    }
  }
  const conn = readYamlFile(join(data, 'connections', 'connection.yaml'));
  for (const [type, keys] of Object.entries(conn))
    if (isObject(keys) && Object.keys(keys).length > 0) bundle.connectionConfig[type] = JSON.stringify(keys);
}

/** Config keys kept in the store (`basic.cfgStorageType: kv`): `sources|sinks|connections.<type>.<confKey>`. */
function configKeysInStore(entries: Array<[string, string]>, bundle: Bundle, skipped: string[][]): void {
  const sections = { sources: bundle.sourceConfig, sinks: bundle.sinkConfig, connections: bundle.connectionConfig };
  const merged = new Map<Section, Map<string, Record<string, unknown>>>();
  for (const [key, text] of entries) {
    const m = /^(sources|sinks|connections)\.([^.]+)\.(.+)$/.exec(key);
    const props = parseObject(text);
    if (!m || !props) {
      skipped.push(['confKVStorage', key, 'not a config key the import knows']);
      continue;
    }
    const section = sections[m[1] as keyof typeof sections];
    const byType = merged.get(section) ?? new Map<string, Record<string, unknown>>();
    merged.set(section, byType);
    const keys = byType.get(m[2]) ?? parseObject(section[m[2]] ?? '{}') ?? {};
    keys[m[3]] = props;
    byType.set(m[2], keys);
  }
  for (const [section, byType] of merged) for (const [type, keys] of byType) section[type] = JSON.stringify(keys);
}

/** Schema records, with the schema text inlined from `data/schemas/<type>/` when the record only names a file. */
function schemas(entries: Array<[string, string]>, data: string, bundle: Bundle, skipped: string[][]): void {
  for (const [key, text] of entries) {
    const rec = parseObject(text);
    const m = /^([^_]+)_(.+)$/.exec(key);
    if (!rec || !m) {
      skipped.push(['schema', key, 'not a schema record']);
      continue;
    }
    const [, type, name] = m;
    const item: Record<string, unknown> = { type, name, content: '', file: '', soFile: '', ...rec };
    if (!item.content) {
      const dir = join(data, 'schemas', type);
      const own = existsSync(dir) ? readdirSync(dir).find((f) => f.replace(/\.[^.]+$/, '') === name) : undefined;
      const content = own ? textOf(join(dir, own)) : undefined;
      if (content !== undefined) Object.assign(item, { content, file: '' });
    }
    bundle.Schema[key] = JSON.stringify(item);
  }
}

/** Upload records, with their content read from `data/uploads/` when the record has none; unrecorded files too. */
function uploads(entries: Array<[string, string]>, data: string, bundle: Bundle, skipped: string[][]): void {
  const dir = join(data, 'uploads');
  for (const [name, text] of entries) {
    const rec = parseObject(text) ?? {};
    const content = rec.content || textOf(join(dir, name));
    if (content === undefined) skipped.push(['uploads', name, 'no content, and no text file in data/uploads']);
    else bundle.uploads[name] = JSON.stringify({ name, content, file: '' });
  }
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    if (name in bundle.uploads || !statSync(join(dir, name)).isFile()) continue;
    const content = textOf(join(dir, name));
    if (content === undefined) skipped.push(['uploads', name, 'a binary file: upload it with POST /config/uploads']);
    else bundle.uploads[name] = JSON.stringify({ name, content, file: '' });
  }
}

/** Reads an eKuiper home (or its data folder, or its store file) into a data bundle. */
export function readEkuiperHome(dir: string): EkuiperReading {
  const { file, data } = locate(dir);
  const store = EkuiperSqliteStore.open(file);
  if (!store) throw new CliError(`${file} is not an eKuiper store (it has no stream or rule table)`, ExitCode.Usage);
  const bundle: Bundle = {
    streams: {},
    tables: {},
    rules: {},
    nativePlugins: {},
    portablePlugins: {},
    sourceConfig: {},
    sinkConfig: {},
    connectionConfig: {},
    Service: {},
    Schema: {},
    uploads: {},
    scripts: {},
  };
  const skipped: string[][] = [];
  try {
    /** a namespace's readable entries (install flags dropped); the others are listed as skipped */
    const read = (ns: string): Array<[string, string]> => {
      const { entries, unreadable } = store.namespace(ns);
      for (const key of unreadable) skipped.push([ns, key, 'a Go structure, not a text the import can read']);
      return entries.filter(([key]) => key !== '$boot_install');
    };
    for (const [name, text] of read('stream')) {
      const info = streamInfo(text);
      if (!info) skipped.push(['stream', name, 'not a stream record']);
      else (info.streamType === 1 ? bundle.tables : bundle.streams)[name] = info.statement;
    }
    for (const [id, text] of read('rule')) bundle.rules[id] = text;
    for (const [key, text] of read('nativePlugin')) bundle.nativePlugins[key] = text;
    for (const [key, text] of read('portablePlugin')) bundle.portablePlugins[key] = text;
    for (const [key, text] of read('serviceInstall')) bundle.Service[key] = text;
    for (const [key, text] of read('script')) bundle.scripts[key] = text;
    schemas(read('schema'), data, bundle, skipped);
    uploads(read('uploads'), data, bundle, skipped);
    configFiles(data, bundle);
    configKeysInStore(read('confKVStorage'), bundle, skipped);
  } finally {
    store.close();
  }
  return { bundle, skipped, file };
}

/** `eddy import ekuiper <dir>`. */
export async function runEkuiperImport(ctx: CommandContext, args: string[]): Promise<void> {
  if (args.length !== 1) throw new CliError('usage: eddy import ekuiper <eKuiper home>', ExitCode.Usage);
  const { bundle, skipped, file } = readEkuiperHome(args[0]);
  const counts = Object.entries(bundle)
    .map(([section, items]) => [section, Object.keys(items as Section).length] as const)
    .filter(([, n]) => n > 0);
  if (!ctx.json)
    ctx.out(`${file}: ${counts.length === 0 ? 'nothing to import' : counts.map(([s, n]) => `${s} ${n}`).join(', ')}`);
  let failed: CliError | undefined;
  if (counts.length > 0) {
    try {
      await importBundle(ctx, JSON.stringify(bundle), 'importing the eKuiper store', true);
    } catch (e) {
      if (!(e instanceof CliError) || e.exitCode !== ExitCode.Rejected || !/could not be imported/.test(e.message))
        throw e;
      failed = e;
    }
  }
  if (skipped.length > 0) {
    ctx.out(`not carried over:\n${table(['Namespace', 'Key', 'Why'], skipped)}`);
    throw new CliError(
      `${failed ? `${failed.message}; ` : ''}${skipped.length} stored item${skipped.length === 1 ? ' was' : 's were'} not carried over`,
      ExitCode.Rejected,
    );
  }
  if (failed) throw failed;
}
