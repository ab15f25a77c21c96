/**
 * Streams and tables: definitions, their persistence (store namespace `stream`, docs/runtime.md §10.1) and the
 * statement executor behind `POST /streams` and `POST /tables` (docs/rest-api.md §3).
 *
 * Streams and tables share one name space: a name is unique across both.
 */
import { idTooLong } from '../core/limits.js';
import { EddyError, ErrorCode, isDefect } from '../core/errors.js';
import type { KVStore } from '../store/kv.js';
import { parseDdl } from '../sql/index.js';
import { TYPE_CODES, typeText, type StreamField } from '../sql/schema.js';
import type { StreamCatalog, StreamDef, StreamKind, StreamOptions } from './types.js';

/** Store namespace of streams and tables. */
export const STREAM_NS = 'stream';
const NS = STREAM_NS;

/** What is stored per entry (eKuiper's layout, as JSON). */
interface StoredEntry {
  streamType: 0 | 1;
  streamKind: '' | 'scan' | 'lookup';
  statement: string;
}

/**
 * What the catalog asks of the services that sit above it (rules, the runtime's lookup tables, the connector and
 * schema registries). Given to {@link Catalog.load}; every port is required, so nothing runs with a permissive
 * stand-in. The composition root may pass closures over services it builds after the catalog: none is called before
 * the first request.
 */
export interface CatalogPorts {
  /** ids of the running rules reading `name` (eKuiper's own refusal text for lookup tables) */
  runningRulesUsing(name: string): string[];
  /** whether FORMAT `name` is registered (json, binary, delimited, protobuf, custom and plugin formats) */
  formatExists(name: string): boolean;
  /** fields of a registered schema `file.Message` (SCHEMAID), for the schema endpoint */
  schemaFields(schemaId: string): StreamField[] | undefined;
  /** opens the lookup source of a new lookup table; rejects with the source's error */
  openLookup(def: StreamDef): Promise<void>;
  /** releases the lookup source of a dropped lookup table */
  closeLookup(name: string): Promise<void>;
}

const word = (kind: StreamKind) => (kind === 'stream' ? 'Stream' : 'Table');

/** Names kept in the change log at most; a reader further behind compares the whole catalog. */
const CHANGE_LOG_MAX = 8192;

export class Catalog implements StreamCatalog {
  private readonly defs = new Map<string, StreamDef>();
  private changes = 0;
  /**
   * The name changed by each revision after `logBase` (`log[i]` made revision `logBase + i + 1`): the rule workers
   * catch up from it, where comparing every definition on each rule's start cost O(n) per rule when streams and
   * rules are created in turn.
   */
  private log: string[] = [];
  private logBase = 0;

  private constructor(
    private readonly store: KVStore,
    private readonly ports: CatalogPorts,
  ) {}

  /** Loads every stored definition. Entries that no longer parse are kept out of the catalog and logged by the caller. */
  static async load(
    store: KVStore,
    ports: CatalogPorts,
    onBadEntry?: (name: string, err: unknown) => void,
  ): Promise<Catalog> {
    const cat = new Catalog(store, ports);
    for (const [name, text] of await store.entries(NS)) {
      try {
        const entry = JSON.parse(text) as StoredEntry;
        cat.defs.set(name, toDef(entry.statement, entry.streamType === 1 ? 'table' : 'stream'));
      } catch (err) {
        onBadEntry?.(name, err);
      }
    }
    return cat;
  }

  get(name: string): StreamDef | undefined {
    return this.defs.get(name);
  }

  get revision(): number {
    return this.changes;
  }

  changedSince(revision: number): readonly string[] | undefined {
    if (revision < this.logBase || revision > this.changes) return undefined;
    return this.log.slice(revision - this.logBase);
  }

  /** Counts a change of `name` (a new revision). */
  private changed(name: string): void {
    this.changes++;
    this.log.push(name);
    if (this.log.length > CHANGE_LOG_MAX) {
      const cut = this.log.length - CHANGE_LOG_MAX / 2;
      this.log = this.log.slice(cut);
      this.logBase += cut;
    }
  }

  list(kind: StreamKind): StreamDef[] {
    return [...this.defs.values()].filter((d) => d.kind === kind);
  }

  /** `GET /tables?kind=`: `scan` includes tables of unset kind; any other value lists all. */
  listTables(kindFilter?: string): StreamDef[] {
    const tables = this.list('table');
    if (kindFilter === 'scan') return tables.filter((t) => (t.options.KIND ?? 'scan') === 'scan');
    if (kindFilter === 'lookup') return tables.filter((t) => t.options.KIND === 'lookup');
    return tables;
  }

  /** The definition of `name` if it has `kind`; a 404 EddyError naming the mismatch otherwise. */
  require(kind: StreamKind, name: string, describe: (cause: string) => string): StreamDef {
    const def = this.defs.get(name);
    if (!def) throw new EddyError(ErrorCode.NotFound, describe(`${name} is not found`));
    if (def.kind !== kind) throw new EddyError(ErrorCode.NotFound, describe(`${kind} ${name} is not found`));
    return def;
  }

  /**
   * Runs any stream/table statement as `POST /streams` or `POST /tables` does and returns the 201 text.
   * Errors are code 3000 with the endpoint's prefix (`Stream command error: `).
   */
  async exec(sql: string, endpoint: StreamKind): Promise<string> {
    const prefix = `${word(endpoint)} command error`;
    try {
      return await this.execInner(sql);
    } catch (err) {
      throw wrap(err, prefix);
    }
  }

  private async execInner(sql: string): Promise<string> {
    const stmt = parseStatementOrInvalid(sql);
    switch (stmt.kind) {
      case 'createStream': {
        const def = this.validate(sql, stmt.streamKind, stmt);
        await this.create(def);
        return `${word(def.kind)} ${def.name} is created.`;
      }
      case 'showStreams': {
        const names = this.list(stmt.streamKind).map((d) => d.name);
        return names.length > 0 ? names.join('\n') : `No ${stmt.streamKind} definitions are found.`;
      }
      case 'describeStream': {
        const def = this.lookupForStatement(
          stmt.streamKind,
          stmt.name,
          (c) => `Describe ${stmt.streamKind} fails, ${c}.`,
        );
        return describeText(def);
      }
      case 'explainStream': {
        this.lookupForStatement(stmt.streamKind, stmt.name, (c) => `Explain ${stmt.streamKind} fails, ${c}.`);
        return 'TO BE SUPPORTED';
      }
      case 'dropStream': {
        this.lookupForStatement(stmt.streamKind, stmt.name, (c) => `Drop ${stmt.streamKind} fails: ${c}.`);
        try {
          await this.drop(stmt.streamKind, stmt.name);
        } catch (err) {
          const msg = err instanceof Error ? err.message : String(err);
          throw new EddyError(ErrorCode.Stream, `Drop ${stmt.streamKind} fails: ${msg}.`);
        }
        return `${word(stmt.streamKind)} ${stmt.name} is dropped.`;
      }
    }
  }

  private lookupForStatement(kind: StreamKind, name: string, msg: (cause: string) => string): StreamDef {
    const def = this.defs.get(name);
    if (!def) throw new EddyError(ErrorCode.Stream, msg(`${name} is not found`));
    if (def.kind !== kind) throw new EddyError(ErrorCode.Stream, msg(`${kind} ${name} is not found`));
    return def;
  }

  /** Parses a CREATE statement and checks its options; throws code 3000 errors without prefix. */
  validate(sql: string, expected?: StreamKind, parsed?: ReturnType<typeof parseDdl>): StreamDef {
    // the caller may have parsed the text already (creating a stream parsed it twice)
    const stmt = parsed ?? parseStatementOrInvalid(sql);
    if (stmt.kind !== 'createStream' || (expected && stmt.streamKind !== expected)) {
      throw new EddyError(ErrorCode.Stream, `Invalid ${expected ?? 'stream'} statement: ${sql}`);
    }
    const def = toDef(sql, stmt.streamKind, stmt);
    const long = idTooLong(`${stmt.streamKind} name`, def.name);
    if (long) throw new EddyError(ErrorCode.Stream, long);
    const opts = def.options;
    const format = (opts.FORMAT ?? 'json').toLowerCase();
    const known = this.ports.formatExists(format);
    if (!known) throw new EddyError(ErrorCode.Stream, `option 'format=${opts.FORMAT}' is invalid`);
    if (format === 'binary') {
      if (def.kind === 'table') throw new EddyError(ErrorCode.Stream, 'cannot use binary format for table');
      const fields = def.fields ?? [];
      if (fields.length > 1 || (fields.length === 1 && fields[0].type.kind !== 'bytea')) {
        throw new EddyError(
          ErrorCode.Stream,
          'binary format stream can only have one field of type bytea, or no field (the payload is the field `self`)',
        );
      }
    }
    if (def.kind === 'table' && opts.KIND === 'lookup' && (opts.TYPE ?? '').toLowerCase() === 'memory' && !opts.KEY) {
      throw new EddyError(ErrorCode.Stream, 'Option "key" is required for memory lookup table.');
    }
    return def;
  }

  /** Stores a new definition; a duplicate name (stream or table) is refused. */
  async create(def: StreamDef): Promise<void> {
    if (this.defs.has(def.name)) {
      throw new EddyError(ErrorCode.Stream, `Create ${def.kind} fails: Item ${def.name} already exists.`);
    }
    if (isLookup(def)) {
      try {
        await this.ports.openLookup(def);
      } catch (err) {
        throw new EddyError(
          ErrorCode.Stream,
          `Create table fails: ${err instanceof Error ? err.message : String(err)}.`,
        );
      }
    }
    const added = await this.store.setIfAbsent(NS, def.name, JSON.stringify(toEntry(def)));
    if (!added) {
      throw new EddyError(ErrorCode.Stream, `Create ${def.kind} fails: Item ${def.name} already exists.`);
    }
    this.defs.set(def.name, def);
    this.changed(def.name);
  }

  /**
   * `PUT /streams/{id}`: upsert of a CREATE statement of the endpoint's kind whose name must equal `id`
   * (docs/rest-api.md §3.6, docs/compatibility.md D16: an entry of the other kind is not overwritten).
   */
  async replace(kind: StreamKind, id: string, sql: string): Promise<void> {
    const prefix = `${word(kind)} command error`;
    try {
      const stmt = parseStatementOrInvalid(sql);
      if (stmt.kind !== 'createStream') throw new EddyError(ErrorCode.Stream, `Invalid ${kind} statement: ${sql}`);
      if (stmt.streamKind !== kind) throw new EddyError(ErrorCode.NotFound, `${kind} ${stmt.name} is not found`);
      if (stmt.name !== id) {
        throw new EddyError(ErrorCode.Stream, `Replace ${id} fails: the sql statement must update the ${id} source.`);
      }
      const existing = this.defs.get(id);
      if (existing && existing.kind !== kind) throw new EddyError(ErrorCode.NotFound, `${kind} ${id} is not found`);
      const def = this.validate(sql, kind);
      if (isLookup(def)) {
        const old = existing && isLookup(existing) ? existing : undefined;
        if (old) await this.ports.closeLookup(id);
        try {
          await this.ports.openLookup(def);
        } catch (err) {
          // the definition stays as it was: so does its lookup source
          if (old) await this.ports.openLookup(old).catch(() => undefined);
          throw new EddyError(
            ErrorCode.Stream,
            `Replace ${kind} fails: ${err instanceof Error ? err.message : String(err)}.`,
          );
        }
      }
      await this.store.set(NS, id, JSON.stringify(toEntry(def)));
      this.defs.set(id, def);
      this.changed(id);
    } catch (err) {
      throw wrap(err, prefix);
    }
  }

  /**
   * Removes a definition. Rules reading it keep running on the plan they were started with and fail at their next
   * re-plan (docs/rest-api.md §3.7); only a lookup table used by a running rule is refused, with eKuiper's text.
   */
  async drop(kind: StreamKind, name: string): Promise<void> {
    const def = this.defs.get(name);
    if (!def || def.kind !== kind) {
      throw new EddyError(ErrorCode.NotFound, def ? `${kind} ${name} is not found` : `${name} is not found`);
    }
    if (isLookup(def) && this.ports.runningRulesUsing(name).length > 0) {
      throw new EddyError(
        ErrorCode.Stream,
        `lookup table ${name} is still in use, stop all using rules before dropping it`,
      );
    }
    if (isLookup(def)) await this.ports.closeLookup(name);
    await this.store.delete(NS, name);
    this.defs.delete(name);
    this.changed(name);
  }

  /** Every definition's SQL text by kind, in catalog order (export, ruleset). */
  statements(kind: StreamKind): Record<string, string> {
    const out: Record<string, string> = {};
    for (const d of this.list(kind)) out[d.name] = d.sql;
    return out;
  }

  /** Removes every definition (full data import); lookup sources are released. */
  async clear(): Promise<void> {
    for (const def of this.defs.values()) if (isLookup(def)) await this.ports.closeLookup(def.name);
    await this.store.clear(NS);
    for (const name of this.defs.keys()) this.changed(name);
    this.defs.clear();
  }

  /**
   * Cluster mode: a definition another node stored (`text`) or dropped (undefined), docs/cluster.md §2. The catalog
   * follows without writing the store; a lookup table's source opens or closes here too. Applying the same text twice
   * changes nothing.
   */
  async applyStored(name: string, text: string | undefined): Promise<void> {
    const old = this.defs.get(name);
    let def: StreamDef | undefined;
    if (text !== undefined) {
      const entry = JSON.parse(text) as StoredEntry;
      def = toDef(entry.statement, entry.streamType === 1 ? 'table' : 'stream');
      if (old && old.kind === def.kind && old.sql === def.sql) return;
    } else if (!old) return;
    if (old && isLookup(old)) await this.ports.closeLookup(name);
    if (def) this.defs.set(name, def);
    else this.defs.delete(name);
    this.changed(name);
    if (def && isLookup(def)) await this.ports.openLookup(def);
  }

  /** `GET /streams/{id}`: the brief's shape (docs/rest-api.md §3.4 "Project"). */
  describeJson(def: StreamDef): Record<string, unknown> {
    return {
      Name: def.name,
      StreamFields: (def.fields ?? []).map(fieldJson),
      Options: optionsJson(def.options),
      StreamType: def.kind === 'stream' ? 0 : 1,
    };
  }

  /** `GET /streams/{id}/schema`: JSON-schema-like view, from SCHEMAID when set (docs/rest-api.md §3.5). */
  schemaJson(def: StreamDef): Record<string, unknown> {
    let fields: readonly StreamField[] = def.fields ?? [];
    if (def.options.SCHEMAID) {
      const fromSchema = this.ports.schemaFields(def.options.SCHEMAID);
      if (!fromSchema) throw new EddyError(ErrorCode.Stream, `cannot find schema ${def.options.SCHEMAID}`);
      fields = fromSchema;
    }
    return schemaOf(fields);
  }
}

function isLookup(def: StreamDef): boolean {
  return def.kind === 'table' && def.options.KIND === 'lookup';
}

function parseStatementOrInvalid(sql: string): ReturnType<typeof parseDdl> {
  if (sql.trim() === '') throw new EddyError(ErrorCode.Stream, `Invalid stream statement: ${sql}`);
  try {
    return parseDdl(sql);
  } catch (err) {
    // includes `Invalid stream statement: <sql>` for text that is no stream/table statement at all
    if (isDefect(err)) throw err;
    throw new EddyError(ErrorCode.Stream, (err as Error).message);
  }
}

/** A refusal with `prefix: ` in front (a defect is returned as it is). */
function wrap(err: unknown, prefix: string): unknown {
  if (err instanceof EddyError) return err.withPrefix(prefix);
  if (isDefect(err)) return err;
  return new EddyError(ErrorCode.Stream, `${prefix}: ${(err as Error).message}`);
}

function toDef(sql: string, kind: StreamKind, parsed?: ReturnType<typeof parseDdl>): StreamDef {
  const stmt = parsed ?? parseDdl(sql);
  if (stmt.kind !== 'createStream') throw new EddyError(ErrorCode.Stream, `Invalid ${kind} statement: ${sql}`);
  return { name: stmt.name, kind: stmt.streamKind, fields: stmt.fields, options: stmt.options, sql };
}

function toEntry(def: StreamDef): StoredEntry {
  return {
    streamType: def.kind === 'stream' ? 0 : 1,
    streamKind: def.kind === 'table' ? (def.options.KIND ?? '') : '',
    statement: def.sql,
  };
}

function fieldTypeJson(t: StreamField['type']): Record<string, unknown> {
  switch (t.kind) {
    case 'array':
      return { Type: 7, ElementType: fieldTypeJson(t.element) };
    case 'struct':
      return { Type: 8, Fields: t.fields.map(fieldJson) };
    default:
      return { Type: TYPE_CODES[t.kind] };
  }
}

function fieldJson(f: StreamField): Record<string, unknown> {
  return { Name: f.name, FieldType: fieldTypeJson(f.type) };
}

/** Order of options in DESCRIBE text; KIND and DELIMITER are never printed there. */
const DESCRIBE_ORDER: Array<keyof StreamOptions> = [
  'CONF_KEY',
  'DATASOURCE',
  'FORMAT',
  'SCHEMAID',
  'KEY',
  'RETAIN_SIZE',
  'SHARED',
  'STRICT_VALIDATION',
  'TIMESTAMP',
  'TIMESTAMP_FORMAT',
  'TYPE',
];

function optionsJson(opts: StreamOptions): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts)) {
    if (v === undefined) continue;
    out[k] = typeof v === 'string' ? v : String(v);
  }
  return out;
}

function describeText(def: StreamDef): string {
  const lines = ['Fields', '-'.repeat(80)];
  for (const f of def.fields ?? []) lines.push(`${f.name}\t${typeText(f.type)}`);
  lines.push('');
  const o = def.options;
  for (const k of DESCRIBE_ORDER) {
    const v = o[k];
    if (v === undefined || v === '') continue;
    if (k === 'RETAIN_SIZE' && v === 0) continue;
    if ((k === 'SHARED' || k === 'STRICT_VALIDATION') && v !== true) continue;
    lines.push(`${k}: ${String(v)}`);
  }
  return lines.join('\n');
}

function schemaNode(t: StreamField['type']): Record<string, unknown> {
  switch (t.kind) {
    case 'array':
      return { type: 'array', items: schemaNode(t.element) };
    case 'struct':
      return { type: 'struct', properties: schemaOf(t.fields) };
    default:
      return { type: t.kind };
  }
}

function schemaOf(fields: readonly StreamField[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of [...fields].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    out[f.name] = schemaNode(f.type);
  }
  return out;
}
