/**
 * The image sink (docs/runtime.md §3.6 image; docs/connectors.md image): every row field holding bytes is an image,
 * saved in `path` as `<field><YYYY-MM-DD_hh-mm-ss-nnnnnnnnn>.<imageFormat>` (local time, nanosecond digits to
 * keep names apart). An image already in `imageFormat` is written as it is; a JPEG for a png sink (or the reverse)
 * is converted through `ffmpeg`; bytes that are neither fail the send. At start and then every 3 minutes, files of
 * that format older than `maxAge` hours are deleted, then the oldest beyond `maxCount`.
 */
import { mkdirSync } from 'node:fs';
import { readdir, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { Props, SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { isObject, type Value } from '../../values/value.js';
import { runFfmpeg } from './ffmpeg.js';
import { propInt, propString } from '../props.js';

type ImageFormat = 'jpeg' | 'png';
const CLEAN_EVERY_MS = 3 * 60_000;
const CONVERT_TIMEOUT_MS = 30_000;

function sniff(b: Uint8Array): ImageFormat | undefined {
  if (b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length > 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png';
  return undefined;
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

let lastMs = 0;
let sameMs = 0;
/** Local time with nanosecond digits (the millisecond, then a counter), strictly increasing within the process. */
function stamp(): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    sameMs = 0;
  } else sameMs++;
  const d = new Date(lastMs);
  const nanos = d.getMilliseconds() * 1_000_000 + Math.min(sameMs, 999_999);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}_${pad(d.getHours())}-${pad(d.getMinutes())}-${pad(d.getSeconds())}-${pad(nanos, 9)}`;
}

export class ImageSink implements SinkConnector {
  private path = '';
  private format: ImageFormat = 'jpeg';
  private maxAgeHours = 72;
  private maxCount = 1000;
  private timer: NodeJS.Timeout | undefined;
  private cleaning: Promise<void> | undefined;

  provision(_ctx: SinkContext, props: Props): void {
    try {
      this.path = propString(props, 'path', '');
      if (this.path === '') throw new Error('path is required');
      const fmt = propString(props, 'imageFormat', '');
      if (fmt !== 'jpeg' && fmt !== 'png')
        throw new Error(
          `${fmt === '' ? 'imageFormat is required' : `invalid image format: ${fmt}`}, should be jpeg or png`,
        );
      this.format = fmt;
      this.maxAgeHours = propInt(props, 'maxAge', 72);
      this.maxCount = propInt(props, 'maxCount', 1000);
      if (this.maxAgeHours < 0) throw new Error(`maxAge must be positive, got ${this.maxAgeHours}`);
      if (this.maxCount < 0) throw new Error(`maxCount must be positive, got ${this.maxCount}`);
    } catch (e) {
      throw new EddyError(ErrorCode.Executor, `image sink: ${(e as Error).message}`);
    }
  }

  async connect(ctx: SinkContext): Promise<void> {
    mkdirSync(this.path, { recursive: true });
    await this.clean(ctx);
    this.timer = setInterval(() => void this.clean(ctx), CLEAN_EVERY_MS);
    this.timer.unref();
  }

  private clean(ctx: SinkContext): Promise<void> {
    this.cleaning ??= this.cleanOnce()
      .catch((e: Error) => ctx.logger.warn('image sink cleanup of %s: %s', this.path, e.message))
      .finally(() => (this.cleaning = undefined));
    return this.cleaning;
  }

  private async cleanOnce(): Promise<void> {
    const ext = `.${this.format}`;
    const files: Array<{ file: string; mtime: number }> = [];
    for (const name of await readdir(this.path)) {
      if (!name.endsWith(ext)) continue;
      const file = join(this.path, name);
      try {
        const st = await stat(file);
        if (st.isFile()) files.push({ file, mtime: st.mtimeMs });
      } catch {
        // removed meanwhile
      }
    }
    const oldest = Date.now() - this.maxAgeHours * 3_600_000;
    const kept: typeof files = [];
    for (const f of files) {
      if (this.maxAgeHours > 0 && f.mtime < oldest) await unlink(f.file).catch(() => undefined);
      else kept.push(f);
    }
    if (this.maxCount > 0 && kept.length > this.maxCount) {
      kept.sort((a, b) => a.mtime - b.mtime);
      for (const f of kept.slice(0, kept.length - this.maxCount)) await unlink(f.file).catch(() => undefined);
    }
  }

  private async image(bytes: Uint8Array): Promise<Uint8Array> {
    const kind = sniff(bytes);
    if (kind === undefined) throw new Error('image: unknown format');
    if (kind === this.format) return bytes;
    const codec = this.format === 'png' ? 'png' : 'mjpeg';
    return runFfmpeg(
      ['-f', 'image2pipe', '-i', 'pipe:0', '-frames:v', '1', '-f', 'image2', '-c:v', codec, 'pipe:1'],
      bytes,
      CONVERT_TIMEOUT_MS,
    );
  }

  async collect(_ctx: SinkContext, payload: SinkPayload): Promise<void> {
    const data: Value = payload.data;
    const rows = Array.isArray(data) ? data : [data];
    for (const row of rows) {
      if (!isObject(row)) continue;
      for (const [field, v] of Object.entries(row)) {
        if (!(v instanceof Uint8Array)) continue;
        const img = await this.image(v);
        await writeFile(join(this.path, `${field}${stamp()}.${this.format}`), img);
      }
    }
  }

  async close(_ctx: SinkContext): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.cleaning;
  }
}
