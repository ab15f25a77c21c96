/**
 * The protobuf schemas as files, read only (docs/runtime.md §7): `<data>/schemas/protobuf/<name>.proto`, imports
 * resolved against `<etc>/schemas/protobuf` and that folder, never outside them. The schema registry (schemas.ts) adds
 * the writes and the install records on the main thread; a rule worker reads the same files through this view alone
 * (workers/worker.ts), so its protobuf rules see every schema the main thread wrote before they were opened.
 *
 * A parsed schema is cached with a stamp of each file it was read from (the schema and its imports): a file replaced,
 * changed or removed since, by this thread or another, makes the next use parse it again.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import type * as protobuf from 'protobufjs';
import { protobufjs } from '../core/protobuf-library.js';
import { TEMP_PREFIX, badFileName, confinedImport } from '../core/files.js';

/** Schema types Eddy manages; `custom` (Go static codecs) cannot run in Node. */
export const SCHEMA_TYPES = ['protobuf'] as const;
export type SchemaType = (typeof SCHEMA_TYPES)[number];

export interface SchemaDescription {
  type: string;
  name: string;
  content: string;
  file: string;
  soFile: string;
}

/** The named schema does not exist. */
export class SchemaNotFound extends Error {}

interface ParsedSchema {
  root: protobuf.Root;
  /** each file read to parse it, with its stamp then */
  files: Array<[path: string, stamp: string]>;
}

export class SchemaFiles {
  private readonly roots = new Map<string, ParsedSchema>();

  /** `<data>/schemas` */
  private readonly dir: string;
  /** `<etc>/schemas/protobuf`, the extra import path */
  private readonly etcProtoDir: string;

  /** the home's `data` and `etc` folders */
  constructor(dataDir: string, etcDir: string) {
    this.dir = join(dataDir, 'schemas');
    this.etcProtoDir = join(etcDir, 'schemas', 'protobuf');
  }

  protected typeDir(type: SchemaType): string {
    return join(this.dir, type);
  }

  /** Path of the stored schema file, or undefined when there is no such schema. */
  protected storedFile(type: SchemaType, name: string): string | undefined {
    if (badFileName(name, true)) return undefined;
    const dir = this.typeDir(type);
    if (!existsSync(dir)) return undefined;
    const file = readdirSync(dir).find((f) => !f.startsWith(TEMP_PREFIX) && extname(f) !== '.so' && stem(f) === name);
    return file === undefined ? undefined : join(dir, file);
  }

  /** Names of the registered schemas of `type`, sorted (every stored file, as eKuiper's registry at boot). */
  list(type: SchemaType): string[] {
    const dir = this.typeDir(type);
    if (!existsSync(dir)) return [];
    const names = new Set<string>();
    for (const f of readdirSync(dir)) if (!f.startsWith(TEMP_PREFIX) && extname(f) !== '.so') names.add(stem(f));
    return [...names].sort();
  }

  describe(type: SchemaType, name: string): SchemaDescription {
    const file = this.storedFile(type, name);
    if (file === undefined) throw new SchemaNotFound(`schema type ${type}, file ${name} not found`);
    return { type, name, content: readFileSync(file, 'utf8'), file, soFile: '' };
  }

  exists(type: SchemaType, name: string): boolean {
    return this.storedFile(type, name) !== undefined;
  }

  /** Forgets every parsed schema: the registry's writes take effect at once, whatever the file system's clock. */
  protected forget(): void {
    this.roots.clear();
  }

  /** Parses a proto file, imports resolved against the etc and data protobuf folders; every type resolved. */
  private load(file: string): ParsedSchema {
    const searchDirs = [this.etcProtoDir, this.typeDir('protobuf')];
    const root = new (protobufjs().Root)();
    root.resolvePath = (origin, target) => confinedImport(searchDirs, origin, target);
    root.loadSync(file, { keepCase: true });
    root.resolveAll();
    return { root, files: root.files.map((f) => [f, stampOf(f)]) };
  }

  /** The parsed protobuf schema `name`; throws when missing or unparsable. */
  protoRoot(name: string): protobuf.Root {
    const file = this.storedFile('protobuf', name);
    if (file === undefined) throw new SchemaNotFound(`schema type protobuf, file ${name} not found`);
    const cached = this.roots.get(name);
    if (cached && cached.files[0]?.[0] === file && cached.files.every(([f, stamp]) => stampOf(f) === stamp))
      return cached.root;
    const parsed = this.load(file);
    this.roots.set(name, parsed);
    return parsed.root;
  }

  /**
   * The message type named by a `SCHEMAID` / `schemaId` `<schemaName>.<MessageName>` (only the first two dot
   * parts count, as in eKuiper). Throws when the schema or the message does not exist.
   */
  messageType(schemaId: string): protobuf.Type {
    const [schemaName, messageName] = schemaId.split('.');
    if (!schemaName || !messageName) throw new Error(`invalid schemaId ${schemaId}: expect <schemaName>.<MessageName>`);
    const root = this.protoRoot(schemaName);
    const found = root.lookup(messageName, [protobufjs().Type]) ?? findNested(root, messageName);
    if (!(found instanceof protobufjs().Type))
      throw new Error(`cannot find message ${messageName} in schema ${schemaName}`);
    return found;
  }
}

/**
 * What identifies a file's content without reading it: a write replaces the file (a new inode) or changes its size or
 * times; '' once it is gone.
 */
function stampOf(path: string): string {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return '';
  }
}

export function stem(file: string): string {
  return basename(file, extname(file));
}

/** A message declared inside a package: looked up by its simple name when the proto has a `package` clause. */
function findNested(ns: protobuf.NamespaceBase, name: string): protobuf.Type | undefined {
  for (const child of ns.nestedArray) {
    if (child instanceof protobufjs().Type && child.name === name) return child;
    if (child instanceof protobufjs().Namespace && !(child instanceof protobufjs().Type)) {
      const hit = findNested(child, name);
      if (hit) return hit;
    }
  }
  return undefined;
}
