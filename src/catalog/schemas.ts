/**
 * The schema registry (docs/rest-api.md §9, docs/runtime.md §7): protobuf schemas stored as `<data>/schemas/protobuf/<name>.proto`,
 * validated by parsing at registration, with an install record per schema in store namespace `schema` under
 * `protobuf_<name>` (the bundle's `Schema` items). Reading and parsing the files is the read-only view's
 * (schema-files.ts), which the rule workers use too; parsed schemas are forgotten at each change made here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type * as protobuf from 'protobufjs';
import { protobufjs } from '../core/protobuf-library.js';
import type { KVStore } from '../store/kv.js';
import {
  ImportRefused,
  TEMP_PREFIX,
  badFileName,
  importLeavesFolder,
  readUrl,
  writeAtomic,
  type FileRoots,
} from '../core/files.js';
import { recordFields } from '../core/fields.js';
import { SCHEMA_TYPES, SchemaFiles, SchemaNotFound, stem, type SchemaType } from './schema-files.js';

export const SCHEMA_NS = 'schema';

/** A schema as submitted (its install record, and the value of a bundle `Schema` item). */
export interface SchemaRecord {
  type: string;
  name: string;
  content: string;
  file: string;
  soFile: string;
}

/** Bad request (validation); the REST layer prefixes `Invalid body: `. */
export class SchemaInvalid extends Error {}

export function isSchemaType(t: string): t is SchemaType {
  return (SCHEMA_TYPES as readonly string[]).includes(t);
}

/** Checks a submitted schema record; throws {@link SchemaInvalid} with eKuiper's texts. */
export function validateSchemaRecord(rec: SchemaRecord): void {
  if (rec.name === '') throw new SchemaInvalid('name is required');
  const bad = badFileName(rec.name, true);
  if (bad) throw new SchemaInvalid(bad);
  if (rec.content !== '' && rec.file !== '') throw new SchemaInvalid('cannot specify both content and file');
  if (rec.soFile !== '') throw new SchemaInvalid('soFile is not supported: Eddy cannot load Go static schema plugins');
  if (rec.content === '' && rec.file === '') throw new SchemaInvalid('must specify content or file');
}

export class SchemaRegistry extends SchemaFiles {
  constructor(
    /** the home's `data` and `etc` folders */
    dataDir: string,
    etcDir: string,
    private readonly store: KVStore,
    /** folders a `file://` URL may point into (all when absent) */
    private readonly fileRoots?: FileRoots,
  ) {
    super(dataDir, etcDir);
  }

  /** Registers a new schema; throws when the name is taken or the download fails. */
  async create(type: SchemaType, rec: SchemaRecord): Promise<void> {
    validateSchemaRecord(rec);
    if (this.exists(type, rec.name)) throw new Error(`schema ${type}.${rec.name} already registered`);
    await this.write(type, rec);
  }

  /** Creates or replaces a schema (PUT); the install record is refreshed too (docs/compatibility.md D14). */
  async upsert(type: SchemaType, rec: SchemaRecord): Promise<void> {
    validateSchemaRecord(rec);
    await this.write(type, rec);
  }

  async remove(type: SchemaType, name: string): Promise<void> {
    const file = this.storedFile(type, name);
    if (file === undefined) throw new SchemaNotFound(`schema ${type}.${name} not found`);
    await rm(file, { force: true });
    await this.store.delete(SCHEMA_NS, `${type}_${name}`);
    this.forget();
  }

  /** Install records: `<type>_<name>` → record JSON text (the bundle's `Schema` section). */
  async records(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const [k, v] of await this.store.entries(SCHEMA_NS)) if (!k.startsWith('$')) out[k] = v;
    return out;
  }

  /** Removes every schema that has an install record (full import reset). */
  async removeAll(): Promise<void> {
    for (const key of Object.keys(await this.records())) {
      const rec = parseSchemaRecord(key, (await this.store.get(SCHEMA_NS, key)) ?? '{}');
      if (isSchemaType(rec.type) && this.exists(rec.type, rec.name)) await this.remove(rec.type, rec.name);
      else await this.store.delete(SCHEMA_NS, key);
    }
  }

  /** Every stored schema file and install record, for {@link restore} (full imports that roll back). */
  async snapshot(): Promise<SchemaSnapshot> {
    const files: Array<[SchemaType, string, string]> = [];
    for (const type of SCHEMA_TYPES) {
      const dir = this.typeDir(type);
      if (!existsSync(dir)) continue;
      for (const f of readdirSync(dir)) {
        if (!f.startsWith(TEMP_PREFIX)) files.push([type, f, readFileSync(join(dir, f), 'utf8')]);
      }
    }
    return { files, records: await this.store.entries(SCHEMA_NS) };
  }

  /** Makes the schema folders and records exactly those of the snapshot. */
  async restore(snap: SchemaSnapshot): Promise<void> {
    for (const type of SCHEMA_TYPES) {
      const dir = this.typeDir(type);
      const keep = new Set(snap.files.filter(([t]) => t === type).map(([, f]) => f));
      if (existsSync(dir)) for (const f of readdirSync(dir)) if (!keep.has(f)) await rm(join(dir, f), { force: true });
    }
    for (const [type, f, content] of snap.files) {
      await mkdir(this.typeDir(type), { recursive: true });
      await writeAtomic(this.typeDir(type), f, content);
    }
    await this.store.clear(SCHEMA_NS);
    await this.store.batch(snap.records.map(([key, value]) => ({ ns: SCHEMA_NS, key, value })));
    this.forget();
  }

  /**
   * Cluster mode: a schema another node recorded (`text`, its install record under `<type>_<name>`) or removed
   * (undefined), docs/cluster.md §2: the file here follows, without writing the store.
   */
  async applyStored(key: string, text: string | undefined): Promise<void> {
    if (text === undefined) {
      for (const type of SCHEMA_TYPES) {
        if (!key.startsWith(`${type}_`)) continue;
        const file = this.storedFile(type, key.slice(type.length + 1));
        if (file !== undefined) await rm(file, { force: true });
      }
      this.forget();
      return;
    }
    const rec = parseSchemaRecord(key, text);
    if (!isSchemaType(rec.type)) return;
    validateSchemaRecord(rec);
    await this.writeFile(rec.type, rec);
  }

  private async write(type: SchemaType, rec: SchemaRecord): Promise<void> {
    await this.writeFile(type, rec);
    await this.store.set(
      SCHEMA_NS,
      `${type}_${rec.name}`,
      JSON.stringify({
        type,
        name: rec.name,
        content: rec.content,
        file: rec.file,
        soFile: rec.soFile,
      }),
    );
  }

  /** Writes the schema's file (from its content or its URL) and forgets the parsed schemas. */
  private async writeFile(type: SchemaType, rec: SchemaRecord): Promise<void> {
    const dir = this.typeDir(type);
    await mkdir(dir, { recursive: true });
    const data = rec.content !== '' ? rec.content : await readUrl(rec.file, this.fileRoots);
    checkImports(data.toString());
    // not parsed here, as in eKuiper: a proto may import one registered after it; a broken one fails the rules using it
    await writeAtomic(dir, `${rec.name}.proto`, data);
    // a schema stored earlier under another extension would shadow or duplicate this one
    for (const f of readdirSync(dir)) {
      if (stem(f) === rec.name && f !== `${rec.name}.proto` && !f.startsWith(TEMP_PREFIX))
        await rm(join(dir, f), { force: true });
    }
    this.forget();
  }
}

export interface SchemaSnapshot {
  files: Array<[SchemaType, string, string]>;
  records: Array<[string, string]>;
}

/**
 * Refuses a schema whose imports leave the schema folders (README "Input limits and file access"). Only what the
 * text says is checked: a schema that does not parse is stored, as ever, and fails the rules that use it.
 */
function checkImports(text: string): void {
  let parsed: protobuf.IParserResult;
  try {
    parsed = protobufjs().parse(text, new (protobufjs().Root)(), { keepCase: true });
  } catch {
    return;
  }
  for (const target of [...(parsed.imports ?? []), ...(parsed.weakImports ?? [])])
    if (importLeavesFolder(target)) throw new SchemaInvalid(new ImportRefused(target).message);
}

/** Parses a bundle `Schema` item (or a stored record); the map key `<type>_<name>` fills a missing type/name. */
export function parseSchemaRecord(key: string, text: string): SchemaRecord {
  const pick = recordFields(text, 'schema', (msg) => new SchemaInvalid(msg));
  const sep = key.indexOf('_');
  return {
    type: pick('type') || (sep > 0 ? key.slice(0, sep) : ''),
    name: pick('name') || (sep > 0 ? key.slice(sep + 1) : key),
    content: pick('content'),
    file: pick('file'),
    soFile: pick('soFile'),
  };
}
