/**
 * Configuration-file uploads (docs/rest-api.md §12): files in `<data>/uploads`, each write atomic, and an install record
 * `{name, content, file}` per upload in store namespace `uploads` so that data export can carry it (docs/rest-api.md §7.1).
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { KVStore } from '../store/kv.js';
import { TEMP_PREFIX, badFileName, readUrl, tempPath, writeAtomic, type FileRoots } from '../core/files.js';
import { recordFields } from '../core/fields.js';

export const UPLOADS_NS = 'uploads';

/** Multipart uploads larger than this are stored but not recorded for export (the bundle holds text only). */
const MAX_RECORDED_BYTES = 10 * 1024 * 1024;

/** The install record of one upload, also the value format of the bundle's `uploads` items. */
export interface UploadRecord {
  name: string;
  content: string;
  file: string;
}

export class UploadError extends Error {}

/** The upload was cut at the size limit: nothing of it is kept. */
export class UploadTooLarge extends Error {}

export class UploadsService {
  constructor(
    readonly dir: string,
    private readonly store: KVStore,
    /** folders a `file://` URL may point into (all when absent) */
    private readonly fileRoots?: FileRoots,
  ) {}

  /** Absolute path of the upload `name`; throws UploadError for names that would escape the folder. */
  pathOf(name: string): string {
    const bad = badFileName(name);
    if (bad) throw new UploadError(bad);
    return join(this.dir, name);
  }

  /**
   * Stores an upload given as text or as a URL to fetch (content wins when both are given, as in eKuiper) and
   * records it. Returns the absolute path.
   */
  async install(rec: UploadRecord): Promise<string> {
    this.pathOf(rec.name);
    const data = rec.content !== '' ? rec.content : await readUrl(rec.file, this.fileRoots);
    await mkdir(this.dir, { recursive: true });
    const path = await writeAtomic(this.dir, rec.name, data);
    await this.store.set(
      UPLOADS_NS,
      rec.name,
      JSON.stringify({ name: rec.name, content: rec.content, file: rec.file }),
    );
    return path;
  }

  /**
   * Stores a multipart upload streamed from `body`. It is recorded (content as text) when it is valid UTF-8 of a
   * reasonable size, so that export carries it too (docs/compatibility.md D14); otherwise any older record of that name is dropped.
   */
  async installStream(name: string, body: Readable, truncated: () => boolean = () => false): Promise<string> {
    const target = this.pathOf(name);
    // nothing may be awaited before the pipeline is attached: a request body that fails meanwhile (truncated form)
    // would be destroyed unobserved, and a pipeline from a destroyed stream never settles
    mkdirSync(this.dir, { recursive: true });
    if (body.destroyed) throw new Error('the upload ended early');
    const tmp = tempPath(this.dir);
    try {
      await pipeline(body, createWriteStream(tmp));
      if (truncated()) throw new UploadTooLarge('the uploaded file is larger than basic.maxBodySize');
      await rename(tmp, target);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    const text = await readTextIfSmall(target);
    if (text === undefined) await this.store.delete(UPLOADS_NS, name);
    else await this.store.set(UPLOADS_NS, name, JSON.stringify({ name, content: text, file: '' }));
    return target;
  }

  /**
   * Cluster mode: an upload another node recorded (`text`, its record) or removed (undefined), docs/cluster.md §2: the
   * file here follows, from the record's content, else from its URL. Uploads too large to be recorded stay on the
   * node that received them.
   */
  async applyStored(name: string, text: string | undefined): Promise<void> {
    this.pathOf(name);
    if (text === undefined) {
      await rm(join(this.dir, name), { force: true });
      return;
    }
    const rec = JSON.parse(text) as Partial<UploadRecord>;
    const data = rec.content ? rec.content : await readUrl(rec.file ?? '', this.fileRoots);
    await mkdir(this.dir, { recursive: true });
    await writeAtomic(this.dir, name, data);
  }

  /** Absolute paths of every entry of the folder, sorted by name. */
  async list(): Promise<string[]> {
    const names = (await readdir(this.dir)).filter((n) => !n.startsWith(TEMP_PREFIX)).sort();
    return names.map((n) => join(this.dir, n));
  }

  /** Deletes the file and its record; rejects with ENOENT-style text when there is no such file. */
  async remove(name: string): Promise<void> {
    const path = this.pathOf(name);
    try {
      await rm(path);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code === 'ENOENT') throw new UploadNotFound(`remove ${path}: no such file or directory`);
      if (err.code === 'EISDIR' || err.code === 'ERR_FS_EISDIR')
        throw new UploadError(`remove ${path}: is a directory`);
      throw e;
    }
    await this.store.delete(UPLOADS_NS, name);
  }

  /** Install records in upload order: file name → record JSON text (the bundle's `uploads` section). */
  async records(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const [k, v] of await this.store.entries(UPLOADS_NS)) out[k] = v;
    return out;
  }

  /** Forgets every record (full import); the files stay. */
  async clearRecords(): Promise<void> {
    await this.store.clear(UPLOADS_NS);
  }

  /** What {@link restore} needs to undo an import writing the uploads `names`: their files and every record. */
  async snapshot(names: readonly string[]): Promise<UploadsSnapshot> {
    const files = new Map<string, Buffer | null>();
    for (const name of names) {
      if (badFileName(name)) continue;
      try {
        files.set(name, await readFile(join(this.dir, name)));
      } catch {
        files.set(name, null);
      }
    }
    return { files, records: await this.store.entries(UPLOADS_NS) };
  }

  /** Puts back the files and records of a snapshot (files absent at snapshot time are removed). */
  async restore(snap: UploadsSnapshot): Promise<void> {
    for (const [name, bytes] of snap.files) {
      if (bytes === null) await rm(join(this.dir, name), { force: true });
      else await writeAtomic(this.dir, name, bytes);
    }
    await this.store.clear(UPLOADS_NS);
    await this.store.batch(snap.records.map(([key, value]) => ({ ns: UPLOADS_NS, key, value })));
  }
}

export interface UploadsSnapshot {
  /** file name → content before the import, null when it did not exist */
  files: Map<string, Buffer | null>;
  records: Array<[string, string]>;
}

export class UploadNotFound extends Error {}

async function readTextIfSmall(path: string): Promise<string | undefined> {
  const st = await stat(path);
  if (st.size > MAX_RECORDED_BYTES) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(await readFile(path));
  } catch {
    return undefined;
  }
}

/** Parses one bundle `uploads` item (JSON text of an {@link UploadRecord}); throws with a readable reason. */
export function parseUploadRecord(key: string, text: string): UploadRecord {
  const pick = recordFields(text, 'upload', (msg) => new UploadError(msg));
  const rec: UploadRecord = { name: pick('name') || key, content: pick('content'), file: pick('file') };
  if (rec.content === '' && rec.file === '') throw new UploadError('invalid body: content or FilePath is required');
  const bad = badFileName(rec.name);
  if (bad) throw new UploadError(bad);
  return rec;
}
