/**
 * The file sink (docs/runtime.md §3.6 file): writes each payload to `path` (a template: one open file per rendered
 * path; the folder is created). `lines` separates items by a newline, `json` writes `[` item `,` item `]` (the `]`
 * on close), `csv` writes an optional header then the delimited rows. Files roll after `rollingCount` items or
 * `rollingInterval` ms; a rolled name gets a timestamp by `rollingNamePattern`. Files are truncated when opened.
 */
import { mkdir, open, readFile, writeFile, type FileHandle } from 'node:fs/promises';
import { basename, dirname, extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { FileRoots } from '../../core/files.js';
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { isObject, type Value } from '../../values/value.js';
import { propBool, propInt, propString, propStringList } from '../props.js';

function bad(msg: string): EddyError {
  return new EddyError(ErrorCode.Executor, msg);
}

interface OpenFile {
  name: string;
  handle: FileHandle;
  count: number;
  openedAt: number;
  /** bytes not yet written; one write loop per file keeps them in order */
  chunks: Buffer[];
  pendingBytes: number;
  writing: Promise<void> | undefined;
  /** a failed write, reported by the next send */
  error: Error | undefined;
  /** a csv header line precedes the rows */
  csvHeader: boolean;
}

/** Pending bytes above which a send waits for the disk (backpressure). */
const HIGH_WATER = 1 << 20;

const COMMA = Buffer.from(',');
const NEWLINE = Buffer.from('\n');

export class FileSink implements SinkConnector {
  private path = 'cache';
  private fileType: 'lines' | 'json' | 'csv' = 'lines';
  private hasHeader = false;
  private delimiter = ',';
  private fields: string[] | undefined;
  private rollingInterval = 0;
  private checkInterval = 300000;
  private rollingCount = 1000000;
  private namePattern = '';
  private gzip = false;
  private sendSingle = false;
  private readonly files = new Map<string, OpenFile>();
  private timer: NodeJS.Timeout | undefined;

  /** with authentication on, the folders the sink may write into (src/core/files.ts) */
  constructor(private readonly roots?: FileRoots) {}

  provision(_ctx: SinkContext, props: Props): void {
    try {
      this.path = propString(props, 'path', 'cache');
      // a templated path is checked per file it opens
      const denied = this.path.includes('{{') ? undefined : this.roots?.problem(this.path);
      if (denied) throw bad(denied);
      const ft = propString(props, 'fileType', 'lines');
      if (ft !== 'lines' && ft !== 'json' && ft !== 'csv')
        throw bad(`fileType must be one of lines, json or csv, got ${ft}`);
      this.fileType = ft;
      if (ft === 'csv' && propString(props, 'format', 'json').toLowerCase() !== 'delimited')
        throw bad('format must be delimited when fileType is csv');
      this.hasHeader = propBool(props, 'hasHeader', false);
      this.delimiter = propString(props, 'delimiter', ',') || ',';
      this.fields = propStringList(props, 'fields');
      this.rollingInterval = propInt(props, 'rollingInterval', 0);
      this.checkInterval = propInt(props, 'checkInterval', 300000);
      this.rollingCount = propInt(props, 'rollingCount', 1000000);
      if (this.rollingInterval < 0 || this.rollingCount < 0 || this.checkInterval < 0)
        throw bad('rolling settings must not be negative');
      if (this.rollingInterval === 0 && this.rollingCount === 0)
        throw bad('one of rollingInterval and rollingCount must be set');
      this.namePattern = propString(props, 'rollingNamePattern', '');
      if (!['', 'none', 'prefix', 'suffix'].includes(this.namePattern))
        throw bad(`rollingNamePattern must be prefix, suffix or none`);
      const comp = propString(props, 'compression', '');
      if (comp && comp !== 'gzip') throw bad(`compression ${comp} is not supported`);
      this.gzip = comp === 'gzip';
      this.sendSingle = propBool(props, 'sendSingle', false);
    } catch (e) {
      throw e instanceof EddyError ? e : bad((e as Error).message);
    }
  }

  async connect(_ctx: SinkContext): Promise<void> {
    if (this.rollingInterval > 0 && this.checkInterval > 0) {
      this.timer = setInterval(() => void this.rollOld(), this.checkInterval);
      this.timer.unref();
    }
  }

  private async rollOld(): Promise<void> {
    const now = Date.now();
    for (const [p, f] of [...this.files]) if (now - f.openedAt >= this.rollingInterval) await this.closeFile(p, f);
  }

  private fileName(rendered: string): string {
    const ts = Date.now();
    if (this.namePattern === 'prefix') return join(dirname(rendered), `${ts}-${basename(rendered)}`);
    if (this.namePattern === 'suffix') {
      const ext = extname(rendered);
      return rendered.slice(0, rendered.length - ext.length) + `-${ts}${ext}`;
    }
    return rendered;
  }

  private async openFile(rendered: string, first: Value): Promise<OpenFile> {
    const name = this.fileName(rendered);
    const denied = this.roots?.problem(name);
    if (denied) throw new Error(denied);
    await mkdir(dirname(name), { recursive: true });
    const handle = await open(name, 'w');
    const f: OpenFile = {
      name,
      handle,
      count: 0,
      openedAt: Date.now(),
      chunks: [],
      pendingBytes: 0,
      writing: undefined,
      error: undefined,
      csvHeader: false,
    };
    let header = '';
    if (this.fileType === 'json') header = '[';
    else if (this.fileType === 'csv' && this.hasHeader) {
      const row = Array.isArray(first) ? first[0] : first;
      const cols = this.fields ?? (isObject(row) ? Object.keys(row).sort() : []);
      header = cols.join(this.delimiter);
      f.csvHeader = true;
    }
    if (header) this.append(f, Buffer.from(header));
    this.files.set(rendered, f);
    return f;
  }

  async collect(ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const item = this.sendSingle ? payload.rows[0] : payload.rows;
    const rendered = this.path.includes('{{') ? ctx.render(this.path, item) : this.path;
    let f = this.files.get(rendered);
    if (!f) f = await this.openFile(rendered, payload.data as Value);
    if (f.error) {
      const err = f.error;
      f.error = undefined;
      throw err;
    }
    if (f.count > 0 || f.csvHeader) this.append(f, this.fileType === 'json' ? COMMA : NEWLINE);
    this.append(f, payload.bytes);
    f.count++;
    this.flushSoon(f);
    if (f.pendingBytes > HIGH_WATER) await f.writing;
    if (this.rollingCount > 0 && f.count >= this.rollingCount) await this.closeFile(rendered, f);
  }

  private append(f: OpenFile, bytes: Uint8Array): void {
    f.chunks.push(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    f.pendingBytes += bytes.byteLength;
  }

  /** Starts the file's write loop unless it runs; the loop writes everything pending, coalesced. */
  private flushSoon(f: OpenFile): void {
    if (f.writing || f.chunks.length === 0) return;
    f.writing = (async () => {
      while (f.chunks.length > 0) {
        const data = f.chunks.length === 1 ? f.chunks[0] : Buffer.concat(f.chunks);
        f.chunks = [];
        f.pendingBytes = 0;
        try {
          await f.handle.write(data);
        } catch (e) {
          f.error = e as Error;
        }
      }
      f.writing = undefined;
    })();
  }

  private async closeFile(key: string, f: OpenFile): Promise<void> {
    if (this.files.get(key) === f) this.files.delete(key);
    while (f.writing) await f.writing;
    const tail = this.fileType === 'json' ? Buffer.from(']') : Buffer.alloc(0);
    const rest = Buffer.concat([...f.chunks, tail]);
    if (rest.length) await f.handle.write(rest);
    await f.handle.close();
    // compressed files are written plain and compressed as a whole when closed
    if (this.gzip) await writeFile(f.name, gzipSync(await readFile(f.name)));
  }

  async close(_ctx: SinkContext): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const [k, f] of [...this.files]) await this.closeFile(k, f);
  }
}
