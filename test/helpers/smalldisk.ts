/**
 * A small file system of its own (tmpfs, needs root) mounted on a folder, for tests that fill the disk for real:
 * `fill()` writes a filler file until the file system answers ENOSPC, `free()` removes it.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface SmallDisk {
  readonly dir: string;
  /** writes until the file system is full; resolves with the bytes written */
  fill(): number;
  /** removes the filler */
  free(): void;
  unmount(): void;
}

/** Whether this process may mount a tmpfs (root on Linux). */
export function canMount(): boolean {
  return process.platform === 'linux' && process.getuid?.() === 0;
}

export function mountSmallDisk(dir: string, bytes: number): SmallDisk {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir]);
  const filler = join(dir, 'filler.bin');
  let mounted = true;
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(16 * 1024, 1);
      let written = 0;
      try {
        // down to single bytes, so that not even a small append fits
        for (let size = chunk.length; size >= 1; size = Math.floor(size / 4)) {
          for (;;) {
            try {
              written += writeSync(fd, chunk, 0, size);
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
              throw e;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
      return written;
    },
    free() {
      rmSync(filler, { force: true });
    },
    unmount() {
      if (!mounted) return;
      mounted = false;
      execFileSync('umount', ['-l', dir]);
    },
  };
}
