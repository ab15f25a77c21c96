/**
 * Data import and export (docs/rest-api.md §7, docs/runtime.md §9).
 *
 * Export gathers every section from the services that own the data. Import applies a bundle through those same
 * services, in docs/runtime.md §9's order (uploads, schemas, portable plugins, external services, JavaScript functions,
 * config keys, streams, tables, rules):
 * - a **full** import is all or nothing: the whole bundle is parsed and every item checked before anything changes
 *   (docs/compatibility.md D4); then the old data is reset and the bundle applied; if any item fails (a download, a rule that cannot be
 *   planned...) or the import is cancelled, the previous state is put back from a snapshot taken just before;
 * - a **partial** import merges item by item (existing streams, tables and rules are replaced, schemas, plugins and
 *   services that exist are kept) and reports the items that failed; the others stay applied.
 * Every failing item is named in the status document. So are, without failing the import, the extension items Eddy
 * cannot install (native plugins, custom and static schemas, and the plugin or service archives it cannot fetch or
 * has no manager for: an eKuiper bundle that lists them still imports) and the rules that need what is missing (a
 * plugin's function or sink, a graph rule), which are kept stopped as eKuiper keeps a rule it cannot plan. A rule
 * reading a stream the bundle does not define makes a malformed bundle.
 * Imports run one at a time.
 */
import type { FileRoots } from '../core/files.js';
import { Serial } from '../core/serial.js';
import { INITIALIZED_MARKER } from '../config/index.js';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isRecord } from '../core/fields.js';
import { parseUploadRecord } from '../catalog/uploads.js';
import { isSchemaType, parseSchemaRecord } from '../catalog/schemas.js';
import {
  BUNDLE_KEYS,
  emptyStatus,
  hasErrors,
  parseSections,
  RULESET_KEYS,
  type Ruleset,
  type Bundle,
  type BundleKey,
  type StatusDoc,
} from './bundle.js';
import {
  CONFIG_SECTIONS,
  EXTENSION_SECTIONS,
  ImportCancelled,
  type BundleDeps,
  type ImportControl,
  type ImportResult,
} from './ports.js';
import { exportAll, exportRules } from './export.js';
import {
  checkBundle,
  checkRule,
  itemError,
  mergeInto,
  message,
  needsMissingExtension,
  notInstalled,
  parseConfMap,
  NO_CONTROL,
} from './checks.js';

export type { BundleDeps, ImportControl, ImportResult } from './ports.js';

const STATUS_NS = 'importStatus';
const STATUS_KEY = 'last';
/** Present while a full import runs; left behind only when the process died during one. */
const RUNNING_KEY = 'running';

export class BundleService {
  /** imports run one at a time */
  private readonly serial = new Serial();

  constructor(private readonly deps: BundleDeps) {}

  /** folders an import's `file://` URL may point into */
  get fileRoots(): FileRoots | undefined {
    return this.deps.fileRoots;
  }

  /** Holds every import back until `p` settles (the rules being restored at start). */
  waitFor(p: Promise<unknown>): void {
    // the outcome of `p` is its owner's: here it only holds the imports back
    this.serial.run(() => p).catch(() => undefined);
  }

  /** Every section (docs/rest-api.md §7.1), all twelve keys present. */
  exportAll(): Promise<Bundle> {
    return exportAll(this.deps);
  }

  /** What rules `ids` need (docs/rest-api.md §7.4). */
  exportRules(ids: readonly string[]): Promise<Bundle> {
    return exportRules(this.deps, ids);
  }

  // ------------------------------------------------------------------------------------------ status

  /**
   * The status document of the last import (all empty before the first). After a full import cut short by the
   * process dying, it also has `interrupted`: the text saying so (the data is the data from before that import).
   */
  async lastStatus(): Promise<StatusDoc & { interrupted?: string }> {
    const text = await this.deps.store.get(STATUS_NS, STATUS_KEY);
    const doc: StatusDoc & { interrupted?: string } = emptyStatus();
    if (text === undefined) return doc;
    try {
      const saved = JSON.parse(text) as Partial<StatusDoc> & { interrupted?: unknown };
      for (const k of BUNDLE_KEYS) if (isRecord(saved[k])) doc[k] = saved[k] as Record<string, string>;
      if (typeof saved.interrupted === 'string') doc.interrupted = saved.interrupted;
    } catch {
      // a damaged record reads as "no errors"
    }
    return doc;
  }

  /**
   * At start: a full import that was running when the process died left its marker (its writes were rolled back
   * with its transaction); the import status then says so.
   */
  async recoverInterruptedImport(): Promise<void> {
    const marker = await this.deps.store.get(STATUS_NS, RUNNING_KEY);
    if (marker === undefined) return;
    let startedAt = '';
    try {
      startedAt = String((JSON.parse(marker) as { startedAt?: unknown }).startedAt ?? '');
    } catch {
      // an unreadable marker still means an interrupted import
    }
    const interrupted = `the full import started at ${startedAt || 'an unknown time'} was interrupted: the server stopped before it completed; the data is as it was before that import`;
    this.deps.logger.warn(interrupted);
    await this.deps.store.set(STATUS_NS, STATUS_KEY, JSON.stringify({ ...emptyStatus(), interrupted }));
    await this.deps.store.delete(STATUS_NS, RUNNING_KEY);
  }

  // ------------------------------------------------------------------------------------------ ruleset

  /** `POST /ruleset/export`: every stream, table and rule. */
  exportRuleset(): Ruleset {
    const { catalog, rules } = this.deps;
    const out: Ruleset = { streams: catalog.statements('stream'), tables: catalog.statements('table'), rules: {} };
    for (const id of rules.ids()) out.rules[id] = rules.exportText(id) ?? '';
    return out;
  }

  /**
   * `POST /ruleset/import` (docs/rest-api.md §8.1, docs/compatibility.md D24): creates the streams, tables and rules that do not exist yet
   * (only CREATE statements of the section's kind are run); rules are kept even when they cannot be planned (stopped,
   * `fail to create the topo`). Failures are logged, not reported. Resolves with the counts of items created.
   */
  importRuleset(rs: Ruleset): Promise<{ streams: number; tables: number; rules: number }> {
    const run = async () => {
      const { catalog, rules, logger } = this.deps;
      const counts = { streams: 0, tables: 0, rules: 0 };
      for (const kind of ['stream', 'table'] as const) {
        const key = kind === 'stream' ? 'streams' : 'tables';
        for (const [name, sql] of Object.entries(rs[key])) {
          try {
            await catalog.create(catalog.validate(sql, kind));
            counts[key]++;
          } catch (err) {
            logger.info({ err: message(err) }, 'ruleset import: %s %s not created', kind, name);
          }
        }
      }
      for (const [key, text] of Object.entries(rs.rules)) {
        try {
          checkRule(this.deps, key, text);
          if (rules.has(key)) throw new Error(`rule ${key} already exists`);
          await rules.create(text, { defaultId: key, keepUnplannable: true });
          counts.rules++;
        } catch (err) {
          logger.info({ err: message(err) }, 'ruleset import: rule %s not created', key);
        }
      }
      return counts;
    };
    return this.serial.run(run);
  }

  /**
   * The initial ruleset (docs/runtime.md §9.6): at the first start (no `<data>/initialized` marker), `<data>/init.json` is
   * imported when present; the marker is created in any case, even when the import fails or there is no file (as
   * eKuiper does: an init.json added after the first start is never read).
   */
  async importInitialRuleset(dataDir: string): Promise<void> {
    const file = join(dataDir, 'init.json');
    const marker = join(dataDir, INITIALIZED_MARKER);
    if (existsSync(marker)) return;
    if (!existsSync(file)) {
      this.deps.logger.info('no initial ruleset %s', file);
      writeFileSync(marker, '');
      return;
    }
    try {
      const rs = parseSections(readFileSync(file, 'utf8'), RULESET_KEYS, 'Ruleset');
      const n = await this.importRuleset(rs);
      this.deps.logger.info(
        'initial ruleset imported: %d streams, %d tables and %d rules',
        n.streams,
        n.tables,
        n.rules,
      );
    } catch (err) {
      this.deps.logger.error({ err: message(err) }, 'cannot import the initial ruleset %s', file);
    }
    writeFileSync(marker, '');
  }

  // ------------------------------------------------------------------------------------------ import

  /** Imports a parsed bundle; resolves with the per-item result (never rejects for item failures). */
  import(bundle: Bundle, partial: boolean, ctl: ImportControl = NO_CONTROL): Promise<ImportResult> {
    const run = () => (partial ? this.importPartial(bundle, ctl) : this.importFull(bundle, ctl));
    return this.serial.run(run).then(async (res) => {
      await this.deps.store.set(STATUS_NS, STATUS_KEY, JSON.stringify(res.status));
      return res;
    });
  }
  /** Item checks that need no change of state: every problem a full import can know before it starts. */
  check(bundle: Bundle): StatusDoc {
    return checkBundle(this.deps, bundle);
  }

  private async importFull(all: Bundle, ctl: ImportControl): Promise<ImportResult> {
    const { notes, installable: bundle } = notInstalled(all, this.deps);
    const checked = this.check(bundle);
    if (hasErrors(checked))
      return { status: mergeInto(notes, checked), failed: true, rolledBack: true, cancelled: false };
    if (ctl.cancelled) return { status: notes, failed: false, rolledBack: true, cancelled: true };
    const store = this.deps.store;
    if (!store.transaction) return this.replaceAll(bundle, ctl, notes);
    // crash atomicity: every store write of the import is one transaction, so a process killed at any moment leaves
    // the old data or the new, never a mix. The marker, written before it and deleted inside it, survives only a crash.
    await store.set(STATUS_NS, RUNNING_KEY, JSON.stringify({ startedAt: new Date().toISOString() }));
    try {
      return await store.transaction(async () => {
        const result = await this.replaceAll(bundle, ctl, notes);
        await store.delete(STATUS_NS, RUNNING_KEY);
        return result;
      });
    } finally {
      // the transaction failed and was rolled back with its deletion of the marker: no crash happened
      await store.delete(STATUS_NS, RUNNING_KEY);
    }
  }

  /** A full import's changes (reset, then every item), restoring the previous data when an item fails. */
  private async replaceAll(bundle: Bundle, ctl: ImportControl, notes: StatusDoc): Promise<ImportResult> {
    const before = await this.exportAll();
    const schemaSnap = await this.deps.schemas.snapshot();
    const uploadSnap = await this.deps.uploads.snapshot(
      Object.keys(bundle.uploads).map((k) => parseUploadRecord(k, bundle.uploads[k]).name),
    );
    const errs = emptyStatus();
    let cancelled = false;
    let failure: unknown;
    try {
      await this.reset();
      await this.apply(bundle, 'full', errs, ctl, notes);
    } catch (e) {
      if (e instanceof ImportCancelled) cancelled = true;
      else failure = e;
    }
    if (!cancelled && failure === undefined && !hasErrors(errs))
      return { status: notes, failed: false, rolledBack: false, cancelled: false };

    this.deps.logger.warn({ cancelled, errors: errs, err: failure }, 'data import failed; restoring the previous data');
    await this.reset();
    await this.deps.schemas.restore(schemaSnap);
    await this.deps.uploads.restore(uploadSnap);
    const restoreErrs = emptyStatus();
    await this.apply({ ...before, Schema: {}, uploads: {} }, 'restore', restoreErrs, NO_CONTROL);
    if (hasErrors(restoreErrs))
      this.deps.logger.error({ errors: restoreErrs }, 'some previous items could not be restored');
    // an unexpected failure (the store, the file system) is reported as such once the old data is back
    if (failure !== undefined) throw failure;
    return { status: mergeInto(notes, errs), failed: hasErrors(errs), rolledBack: true, cancelled };
  }

  private async importPartial(all: Bundle, ctl: ImportControl): Promise<ImportResult> {
    const errs = emptyStatus();
    const { notes, installable: bundle } = notInstalled(all, this.deps);
    let cancelled = false;
    try {
      await this.apply(bundle, 'partial', errs, ctl, notes);
    } catch (e) {
      if (!(e instanceof ImportCancelled)) throw e;
      cancelled = true;
    }
    return { status: mergeInto(notes, errs), failed: hasErrors(errs), rolledBack: false, cancelled };
  }

  /** Full-import reset (docs/runtime.md §9.2 step 1): rules, streams, tables, recorded schemas, user config keys, upload records. */
  private async reset(): Promise<void> {
    const { rules, catalog, confKeys } = this.deps;
    for (const id of rules.ids()) await rules.delete(id);
    await catalog.clear();
    await this.deps.schemas.removeAll();
    await this.deps.scripts.removeAll();
    for (const key of EXTENSION_SECTIONS) await this.deps.extensions?.[key]?.removeAll();
    for (const [, kind] of CONFIG_SECTIONS) await confKeys.clearUser(kind);
    await this.deps.uploads.clearRecords();
  }

  /**
   * Applies the sections in order, recording each failing item. `restore` re-creates a snapshot: rules that cannot
   * be planned are kept stopped, as they were. Extension items that fail to install are noted in `notes`, never
   * fatal. A rule that needs a missing extension is created stopped and noted there instead of failing: always in a
   * full import (eKuiper keeps the rules it cannot plan), in a partial one when some extension item was not installed
   * (eKuiper would have installed the bundle's plugins before creating its rules).
   */
  private async apply(
    b: Bundle,
    mode: 'full' | 'partial' | 'restore',
    errs: StatusDoc,
    ctl: ImportControl,
    notes: StatusDoc = emptyStatus(),
  ): Promise<void> {
    const { catalog, rules, confKeys } = this.deps;
    let lastYield = Date.now();
    const total =
      [b.uploads, b.Schema, b.scripts, b.streams, b.tables, b.rules].reduce(
        (n, sec) => n + Object.keys(sec).length,
        0,
      ) +
      EXTENSION_SECTIONS.reduce((n, key) => n + (this.deps.extensions?.[key] ? Object.keys(b[key]).length : 0), 0) +
      CONFIG_SECTIONS.reduce((n, [key]) => n + Object.keys(b[key]).length, 0);
    let done = 0;
    const step = async (key: BundleKey, name: string, fn: () => Promise<void>) => {
      // the SQLite store answers synchronously: without a turn of the event loop now and then, a large import would
      // keep the server from answering anything (task status, cancel) until it ends
      if (Date.now() - lastYield >= 5) {
        await new Promise<void>((r) => setImmediate(r));
        lastYield = Date.now();
      }
      if (ctl.cancelled) throw new ImportCancelled();
      try {
        await fn();
      } catch (e) {
        errs[key][name] = itemError(e);
      }
      ctl.progress?.(++done, total);
    };

    for (const [name, text] of Object.entries(b.uploads)) {
      await step('uploads', name, async () => {
        await this.deps.uploads.install(parseUploadRecord(name, text));
      });
    }
    for (const [name, text] of Object.entries(b.Schema)) {
      await step('Schema', name, async () => {
        const rec = parseSchemaRecord(name, text);
        const custom = this.deps.customSchemas;
        if (rec.type === 'custom' && custom) {
          // as plugin archives: not being able to fetch one does not stop the import
          await custom.install(rec.name, rec.soFile).catch((e: unknown) => (notes.Schema[name] = itemError(e)));
          return;
        }
        if (!isSchemaType(rec.type)) throw new Error(`schema type ${rec.type} is not supported`);
        if (mode !== 'partial') await this.deps.schemas.upsert(rec.type, rec);
        else if (!this.deps.schemas.exists(rec.type, rec.name)) await this.deps.schemas.create(rec.type, rec);
      });
    }
    for (const key of EXTENSION_SECTIONS) {
      const installer = this.deps.extensions?.[key];
      if (!installer) continue;
      for (const [name, text] of Object.entries(b[key])) {
        await step(key, name, async () => {
          try {
            await installer.importRecord(name, text);
          } catch (e) {
            // eKuiper bundles name plugin and service archives at the site that exported them: not being able to
            // fetch one does not stop the import
            notes[key][name] = itemError(e);
          }
        });
      }
    }
    for (const [name, text] of Object.entries(b.scripts)) {
      await step('scripts', name, () => this.deps.scripts.upsertText(name, text));
    }
    for (const [key, kind] of CONFIG_SECTIONS) {
      for (const [type, text] of Object.entries(b[key])) {
        await step(key, type, async () => {
          const map = parseConfMap(text);
          const validate = this.deps.propsValidator?.(kind, type);
          if (validate)
            for (const [k, props] of Object.entries(map)) {
              try {
                validate(props);
              } catch (e) {
                throw new Error(`config key ${k}: ${itemError(e)}`);
              }
            }
          await confKeys.setUser(kind, type, map, mode === 'partial');
        });
      }
    }
    for (const kind of ['stream', 'table'] as const) {
      const key = kind === 'stream' ? 'streams' : 'tables';
      for (const [name, sql] of Object.entries(b[key])) {
        await step(key, name, async () => {
          if (mode === 'partial') await catalog.replace(kind, name, sql);
          else await catalog.create(catalog.validate(sql, kind));
        });
      }
    }
    for (const [key, text] of Object.entries(b.rules)) {
      await step('rules', key, async () => {
        if (mode !== 'restore') checkRule(this.deps, key, text);
        if (mode === 'restore') {
          await rules.create(text, { defaultId: key, keepUnplannable: true });
          return;
        }
        const exists = mode === 'partial' && rules.has(key);
        try {
          if (exists) await rules.update(key, text);
          else await rules.create(text, { defaultId: key });
        } catch (e) {
          const keepStopped =
            mode === 'full' ||
            EXTENSION_SECTIONS.some((k) => Object.keys(notes[k]).length > 0) ||
            Object.keys(notes.nativePlugins).length > 0;
          if (!keepStopped || !needsMissingExtension(e)) throw e;
          // the bundle's definition is what is kept (and exported), stopped until Eddy has what it needs
          if (exists) await rules.delete(key);
          await rules.create(text, { defaultId: key, keepUnplannable: true });
          notes.rules[key] = `${message(e).replace(/^Update rule error: /, '')}: the rule was imported stopped`;
        }
      });
    }
  }
}
