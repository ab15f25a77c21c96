/**
 * `log/stream.log` with eKuiper's rotation keys (docs/runtime.md §10.4): the live file always has that name; a
 * rotation renames it to `stream.log.<YYYY-MM-DD_hh-mm-ss>` (local time) and opens a new one. It rotates every
 * `basic.rotateTime` hours (periods counted from the Unix epoch) and, when `basic.rotateSize` is above 0, as soon as the
 * file reaches that many bytes. Rotated files are then deleted past `basic.rotateCount` files when `rotateSize` is set,
 * else once older than `basic.maxAge` hours, as eKuiper does.
 *
 * Worker threads write the same file through their own descriptors; only the main thread rotates, and a follower
 * reopens the path when it finds that the file it holds was renamed.
 */
import { fstatSync, mkdirSync, openSync, readdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import pino from 'pino';

export interface RotationSettings {
  /** hours between rotations; 0 = never by time */
  rotateTimeHours: number;
  /** hours a rotated file is kept when no size limit is set; 0 = forever */
  maxAgeHours: number;
  /** bytes at which the file is rotated; 0 = no size limit */
  rotateSizeBytes: number;
  /** rotated files kept when `rotateSizeBytes` is set; 0 = all */
  rotateCount: number;
}

type Boom = ReturnType<typeof pino.destination> & { fd: number };

const HOUR_MS = 3_600_000;
/** how often the live file is looked at: its real size (worker threads write it too), or whether it was renamed */
const CHECK_MS = 1000;
const pad = (n: number) => String(n).padStart(2, '0');

/** `stream.log.2026-11-28_14-05-09`: eKuiper's suffix for a rotated log file, in local time */
export function rotatedName(file: string, at: Date): string {
  const d = at;
  return `${file}.${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}_${pad(d.getHours())}-${pad(d.getMinutes())}-${pad(d.getSeconds())}`;
}

export class RotatingLogFile {
  private boom: Boom | undefined;
  /** destinations of renamed files still writing out what they had buffered */
  private readonly draining = new Set<Boom>();
  private size = 0;
  private nextRotation = Infinity;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly path: string,
    private readonly settings: RotationSettings,
    /** false on worker threads: they follow the main thread's renames instead of rotating themselves */
    private readonly rotates: boolean,
  ) {}

  write(line: string): void {
    // after the server's shutdown nothing is left to log
    if (this.closed) return;
    this.boom ??= this.open();
    if (this.rotates) {
      // lines counted in UTF-16 units: close enough to bytes for a threshold
      this.size += line.length;
      const limit = this.settings.rotateSizeBytes;
      if ((limit > 0 && this.size >= limit) || Date.now() >= this.nextRotation) this.rotate();
    }
    this.boom.write(line);
  }

  /** Calls `cb` once what is buffered is written, in order (a synchronous flush could overtake a write in flight). */
  flush(cb?: (err?: Error) => void): void {
    const boom = this.boom;
    if (!boom) {
      cb?.();
      return;
    }
    try {
      boom.flush(cb);
    } catch (err) {
      cb?.(err as Error);
    }
  }

  /** Writes out what is buffered — a write still in flight included — and closes the file (at most `ms` waited). */
  async close(ms = 2000): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.boom) this.retire(this.boom);
    this.boom = undefined;
    let timer: NodeJS.Timeout | undefined;
    const drained = Promise.all(
      [...this.draining].map((b) => new Promise<void>((resolve) => b.once('close', () => resolve()))),
    );
    await Promise.race([drained, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /**
   * Opens the live path now, writes in the background. The file is opened synchronously because a rotation renames
   * the path: a destination still opening by name when a burst rotated again would open the next live file, and its
   * lines would land after newer ones, in a file that pruning keeps while their own is deleted.
   */
  private destination(): Boom {
    let fd: number | undefined;
    try {
      mkdirSync(dirname(this.path), { recursive: true });
      fd = openSync(this.path, 'a');
    } catch {
      // reported by the destination's own open below (and ignored there)
    }
    const boom = (
      fd === undefined
        ? pino.destination({ dest: this.path, mkdir: true, sync: false })
        : pino.destination({ fd, sync: false })
    ) as Boom;
    // a log file that cannot be written (its folder removed, a full disk) must not bring the server down
    boom.on('error', () => undefined);
    return boom;
  }

  /**
   * Lets a destination write out what it buffered, into the file it has open (renamed by now), then close. A fresh
   * destination per file, rather than SonicBoom's reopen(), keeps the lines in order and loses none when a rotation
   * meets a write in flight or the shutdown.
   */
  private retire(boom: Boom): void {
    this.draining.add(boom);
    boom.once('close', () => this.draining.delete(boom));
    boom.end();
  }

  /** The live path was renamed: the next lines go to a new file under that name. */
  private replace(): void {
    if (this.boom) this.retire(this.boom);
    this.boom = this.destination();
  }

  private open(): Boom {
    if (this.rotates) {
      let existing: { size: number; mtimeMs: number } | undefined;
      try {
        existing = statSync(this.path);
      } catch {
        // a new file
      }
      this.size = existing?.size ?? 0;
      this.armTime();
      // a file left from an earlier period is rotated before the first line of this one
      if (existing && existing.mtimeMs < this.periodStart()) this.renameLive(new Date(existing.mtimeMs));
      this.prune();
    }
    this.timer = setInterval(() => this.check(), CHECK_MS);
    this.timer.unref();
    return this.destination();
  }

  private periodStart(): number {
    const period = this.settings.rotateTimeHours * HOUR_MS;
    return period > 0 ? Math.floor(Date.now() / period) * period : -Infinity;
  }

  private armTime(): void {
    const period = this.settings.rotateTimeHours * HOUR_MS;
    this.nextRotation = period > 0 ? (Math.floor(Date.now() / period) + 1) * period : Infinity;
  }

  /** once a second: the real size (the workers' lines included), or, on a worker, whether the file was renamed */
  private check(): void {
    const boom = this.boom;
    if (!boom || boom.fd < 0) return;
    try {
      if (this.rotates) {
        this.size = statSync(this.path).size;
        const limit = this.settings.rotateSizeBytes;
        if ((limit > 0 && this.size >= limit) || Date.now() >= this.nextRotation) this.rotate();
      } else if (statSync(this.path).ino !== fstatSync(boom.fd).ino) {
        this.replace();
      }
    } catch {
      // renamed and not yet created again: this thread creates it
      if (!this.rotates) this.replace();
    }
  }

  private rotate(): void {
    this.renameLive(new Date());
    this.size = 0;
    this.armTime();
    // lines still buffered go to the renamed file; the next ones to a new file under the live name
    if (this.boom) this.replace();
    this.prune();
  }

  private renameLive(at: Date): void {
    const base = rotatedName(this.path, at);
    // several rotations within one second: `.1`, `.2`, … after the highest suffix there, never a lower free one (the
    // pruning may have deleted the older files of this second, and a reused name would sort among the oldest)
    let highest = -1;
    try {
      const name = basename(base);
      for (const n of readdirSync(dirname(this.path))) {
        if (n === name) highest = Math.max(highest, 0);
        else if (n.startsWith(`${name}.`) && /^\d+$/.test(n.slice(name.length + 1)))
          highest = Math.max(highest, Number(n.slice(name.length + 1)));
      }
    } catch {
      // no folder yet: nothing to rename either
    }
    const target = highest < 0 ? base : `${base}.${highest + 1}`;
    try {
      renameSync(this.path, target);
    } catch {
      // nothing to rename yet
    }
  }

  /** Deletes rotated files past `rotateCount` (with a size limit) or older than `maxAge` (without). */
  private prune(): void {
    const dir = dirname(this.path);
    const prefix = `${basename(this.path)}.`;
    let rotated: Array<{ file: string; mtimeMs: number }>;
    try {
      rotated = readdirSync(dir)
        .filter((n) => n.startsWith(prefix) && /^\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d(\.\d+)?$/.test(n.slice(prefix.length)))
        .map((n) => ({ file: join(dir, n), mtimeMs: statSync(join(dir, n)).mtimeMs }))
        // newest first by name (the rotation time, then `.10` after `.9`), not by mtime: lines still buffered when
        // a file was renamed reach it later and can leave an older file with the newer mtime
        .sort((a, b) => b.file.localeCompare(a.file, 'en', { numeric: true }));
    } catch {
      return;
    }
    const { rotateSizeBytes, rotateCount, maxAgeHours } = this.settings;
    const doomed =
      rotateSizeBytes > 0
        ? rotateCount > 0
          ? rotated.slice(rotateCount)
          : []
        : maxAgeHours > 0
          ? rotated.filter((r) => r.mtimeMs < Date.now() - maxAgeHours * HOUR_MS)
          : [];
    for (const { file } of doomed) {
      try {
        unlinkSync(file);
      } catch {
        // already gone
      }
    }
  }
}
