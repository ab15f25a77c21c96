/**
 * The file source (docs/runtime.md §2.5 file): reads a file, or every file of a folder, relative to `path`, as `json`
 * (one array of objects), `csv` (header or `columns` or `cols0…`) or `lines` (each line decoded with FORMAT).
 * Reads once, or every `interval` ms; afterwards keeps, deletes or moves the file. A table gets each complete read
 * as one batch event.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, stat, unlink, copyFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { FileRoots } from '../../core/files.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { ValueObject } from '../../values/value.js';
import { parseJsonExact } from '../formats/jsonparse.js';
import { propBool, propInt, propString, propStringList } from '../props.js';
import { transientError } from '../../contracts/failures.js';

const FILE_TYPES = ['json', 'csv', 'lines'] as const;
type FileType = (typeof FILE_TYPES)[number];

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

/** Splits CSV text into records (RFC 4180 quoting, `delimiter` separated). */
export function parseCsv(text: string, delimiter: string): string[][] {
  const out: string[][] = [];
  let rec: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  const n = text.length;
  let atFieldStart = true;
  while (i < n) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        continue;
      }
      field += c;
      i++;
      continue;
    }
    if (c === '"' && atFieldStart) {
      quoted = true;
      atFieldStart = false;
      i++;
      continue;
    }
    if (c === delimiter) {
      rec.push(field);
      field = '';
      atFieldStart = true;
      i++;
      continue;
    }
    if (c === '\r' && text[i + 1] === '\n') {
      i++;
      continue;
    }
    if (c === '\n') {
      rec.push(field);
      if (!(rec.length === 1 && rec[0] === '')) out.push(rec);
      rec = [];
      field = '';
      atFieldStart = true;
      i++;
      continue;
    }
    field += c;
    atFieldStart = false;
    i++;
  }
  if (field !== '' || rec.length > 0) {
    rec.push(field);
    out.push(rec);
  }
  return out;
}

export class FileSource implements SourceConnector {
  private held = false;
  private release: (() => void) | undefined;
  private fileType: FileType = 'json';
  private root = '';
  private target = '';
  private interval = 0;
  private sendInterval = 0;
  private action = 0;
  private moveTo = '';
  private hasHeader = false;
  private columns: string[] | undefined;
  private ignoreStart = 0;
  private ignoreEnd = 0;
  private delimiter = ',';
  private decompression: 'gzip' | undefined;
  private isTable = false;
  private batchable = true;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private reading: Promise<void> | undefined;

  /** with authentication on, the folders the source may read (src/core/files.ts) */
  constructor(private readonly roots?: FileRoots) {}

  provision(ctx: ConnectorContext, datasource: string, props: Props): void {
    try {
      const ft = propString(props, 'fileType', 'json');
      if (!(FILE_TYPES as readonly string[]).includes(ft)) throw bad(`file type ${ft} is not supported`);
      this.fileType = ft as FileType;
      const path = propString(props, 'path');
      if (!path) throw bad('missing property Path');
      this.root = resolveRoot(path, ctx.dataDir);
      this.target = join(this.root, datasource);
      this.interval = propInt(props, 'interval', 0);
      this.sendInterval = propInt(props, 'sendInterval', 0);
      if (this.interval < 0 || this.sendInterval < 0) throw bad('interval and sendInterval must not be negative');
      this.action = propInt(props, 'actionAfterRead', 0);
      if (this.action < 0 || this.action > 2) throw bad(`actionAfterRead must be 0, 1 or 2, got ${this.action}`);
      this.moveTo = propString(props, 'moveTo', '');
      if (this.action === 2 && !this.moveTo) throw bad('missing property moveTo');
      const denied =
        this.roots?.problem(this.target) ?? (this.action === 2 ? this.roots?.problem(this.moveTo) : undefined);
      if (denied) throw bad(denied);
      this.hasHeader = propBool(props, 'hasHeader', false);
      this.columns = propStringList(props, 'columns');
      this.ignoreStart = propInt(props, 'ignoreStartLines', 0);
      this.ignoreEnd = propInt(props, 'ignoreEndLines', 0);
      const d = propString(props, 'delimiter', ',');
      this.delimiter = d ? d[0] : ',';
      const dc = propString(props, 'decompression', '');
      if (dc && dc !== 'gzip') throw bad(`decompression ${dc} is not supported`);
      this.decompression = dc ? 'gzip' : undefined;
      this.isTable = propBool(props, 'isTable', false);
      // a table gets whole reads as one batch; lines in a non-JSON format go row by row through their decoder
      this.batchable = this.fileType !== 'lines' || propString(props, 'format', 'json').toLowerCase() === 'json';
    } catch (e) {
      throw e instanceof EddyError ? e : bad((e as Error).message);
    }
  }

  async connect(
    ctx: ConnectorContext,
    emit: (ev: SourceEvent) => void,
    onError: (err: Error) => void,
    onEnd?: () => void,
  ): Promise<void> {
    this.closed = false;
    const once = async (): Promise<void> => {
      try {
        await this.readAll(emit);
      } catch (e) {
        if (!this.closed) {
          ctx.logger.warn('file source %s: %s', this.target, (e as Error).message);
          // a periodic reader tries again at the next interval; a one-time read ends with the error
          onError(this.interval > 0 ? transientError(e as Error) : (e as Error));
        }
      }
    };
    const run = (): void => {
      if (this.closed || this.reading) return;
      this.reading = once().finally(() => {
        this.reading = undefined;
        if (this.interval <= 0 && !this.closed && onEnd) onEnd();
      });
    };
    run();
    if (this.interval > 0) this.timer = setInterval(run, this.interval);
    // a table starts with its content loaded, so the first events already join against it
    if (this.isTable) await this.reading;
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    // a read held back by back-pressure wakes up and sees the close
    this.resume();
    await this.reading?.catch(() => undefined);
  }

  /** back-pressure: a file can always wait */
  canPause(): boolean {
    return true;
  }

  pause(): void {
    this.held = true;
  }

  resume(): void {
    this.held = false;
    const r = this.release;
    this.release = undefined;
    r?.();
  }

  private async readAll(emit: (ev: SourceEvent) => void): Promise<void> {
    const st = await stat(this.target);
    const files = st.isDirectory()
      ? (await readdir(this.target, { withFileTypes: true }))
          .filter((d) => d.isFile())
          .map((d) => join(this.target, d.name))
          .sort()
      : [this.target];
    const batch: ValueObject[] = [];
    for (const file of files) {
      if (this.closed) return;
      const rows = await this.readFile(file);
      if (this.isTable && this.batchable) {
        for (const r of rows) {
          if (!(r instanceof Uint8Array)) batch.push(r);
          else for (const o of jsonRows(r)) batch.push(o);
        }
      } else {
        const it = rows[Symbol.iterator]();
        let row = it.next();
        for (let i = 0; !row.done; i++) {
          if (this.closed) return;
          // held back by a full sink: wait for the release (a yield now and then lets the rule drain meanwhile)
          if (this.held) await new Promise<void>((r) => (this.release = r));
          emit(this.event(row.value, file));
          row = it.next();
          if (this.sendInterval > 0 && !row.done) await new Promise((r) => setTimeout(r, this.sendInterval));
          else if ((i & 1023) === 1023) await new Promise((r) => setImmediate(r));
        }
      }
      await this.afterRead(file);
    }
    if (this.isTable && this.batchable && !this.closed) emit(this.event(batch, this.target));
  }

  /** CSV records are text: the runtime types the stream's declared fields (docs/runtime.md §2.2) */
  private event(payload: SourceEvent['payload'], file: string): SourceEvent {
    const ev: SourceEvent = { payload, meta: { file }, timestamp: Date.now() };
    if (this.fileType === 'csv') ev.textCells = true;
    return ev;
  }

  private async readFile(file: string): Promise<Iterable<ValueObject | Uint8Array>> {
    let buf = await readFile(file);
    if (this.decompression === 'gzip') buf = gunzipSync(buf);
    // a JSON line becomes values that keep nothing of its bytes: a view into the file's suffices; other formats may
    // keep bytes in a row (binary, protobuf), which would hold the whole file
    if (this.fileType === 'lines') return linePayloads(buf, this.ignoreStart, this.ignoreEnd, !this.batchable);
    let text = buf.toString('utf8');
    if (this.fileType === 'json') {
      const v = parseJsonExact(text);
      const list = Array.isArray(v) ? v : [v];
      for (const r of list)
        if (!r || typeof r !== 'object' || Array.isArray(r)) throw new Error(`file ${file}: not an array of objects`);
      return list as ValueObject[];
    }
    if (this.ignoreStart > 0 || this.ignoreEnd > 0) {
      const lines = text.split('\n');
      if (lines.length && lines[lines.length - 1] === '') lines.pop();
      text = lines.slice(this.ignoreStart, Math.max(this.ignoreStart, lines.length - this.ignoreEnd)).join('\n');
    }
    const records = parseCsv(text, this.delimiter);
    let header: string[] | undefined;
    if (this.hasHeader) header = records.shift();
    else if (this.columns && this.columns.length) header = this.columns;
    return records.map((rec) => {
      const row: ValueObject = {};
      rec.forEach((v, i) => (row[header && i < header.length ? header[i] : `cols${i}`] = v));
      return row;
    });
  }

  private async afterRead(file: string): Promise<void> {
    if (this.action === 1) await unlink(file);
    else if (this.action === 2) {
      await mkdir(this.moveTo, { recursive: true });
      const dest = join(this.moveTo, basename(file));
      try {
        await rename(file, dest);
      } catch {
        await copyFile(file, dest);
        await unlink(file);
      }
    }
  }
}

/**
 * The payloads of a `lines` file: each line (without its `\r`) that is not blank, after `ignoreStart` lines and before
 * the last `ignoreEnd`. Made one at a time as the rule takes them: making every line's bytes at once held a whole
 * file's records on the heap (200,000 lines of 40 bytes: about 40 MB, which the garbage collector then marked over
 * and over while the rule drained them; bench/server-cores.ts).
 */
function* linePayloads(buf: Buffer, ignoreStart: number, ignoreEnd: number, copy: boolean): Generator<Uint8Array> {
  if (buf.length === 0) return;
  // a file ending in a newline has no line after it
  const end = buf[buf.length - 1] === 0x0a ? buf.length - 1 : buf.length;
  let lines = 0;
  if (ignoreEnd > 0) for (let at = 0; at <= end; lines++) at = nextBreak(buf, at, end) + 1;
  const last = ignoreEnd > 0 ? lines - ignoreEnd : Infinity;
  for (let n = 0, at = 0; at <= end && n < last; n++) {
    const stop = nextBreak(buf, at, end);
    const start = at;
    at = stop + 1;
    if (n < ignoreStart) continue;
    const e = stop > start && buf[stop - 1] === 0x0d ? stop - 1 : stop;
    if (blank(buf, start, e)) continue;
    yield copy ? new Uint8Array(buf.subarray(start, e)) : buf.subarray(start, e);
  }
}

/** The index of the next `\n` from `at`, or `end`. */
function nextBreak(buf: Buffer, at: number, end: number): number {
  const i = buf.indexOf(0x0a, at);
  return i < 0 || i > end ? end : i;
}

/** Whether bytes `s`…`e` hold only what String.prototype.trim removes. */
function blank(buf: Buffer, s: number, e: number): boolean {
  for (let i = s; i < e; i++) {
    const b = buf[i];
    if (b === 0x20 || (b >= 0x09 && b <= 0x0d)) continue;
    if (b < 0x80) return false;
    // a character beyond ASCII: trim also removes the no-break and other Unicode spaces
    return buf.toString('utf8', s, e).trim() === '';
  }
  return true;
}

/** A JSON line as rows: an object is one row, an array of objects one row each. */
function jsonRows(line: Uint8Array): ValueObject[] {
  const v = parseJsonExact(Buffer.from(line).toString('utf8'));
  const list = Array.isArray(v) ? v : [v];
  return list.filter((o): o is ValueObject => !!o && typeof o === 'object' && !Array.isArray(o));
}

/** A relative `path` is looked up from the working directory, then from the home (parent of the data dir). */
function resolveRoot(path: string, dataDir: string): string {
  if (isAbsolute(path)) return path;
  const candidates = [resolve(process.cwd(), path), resolve(dirname(dataDir), path)];
  return candidates.find((c) => existsSync(c)) ?? candidates[0];
}
