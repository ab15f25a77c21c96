/**
 * Reading extension archives (zip) safely: every entry must stay inside the target folder (no zip-slip,
 * docs/compatibility.md D6), the archive is bounded (entry count, unpacked size, compression ratio: a small zip must
 * not unpack to gigabytes) and checked before anything is written, and extraction goes to a staging folder first so
 * that a failed install leaves nothing behind. Plugins and services share this reader.
 */
import { spawn } from 'node:child_process';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import type AdmZip from 'adm-zip';
import { lazyRequire } from '../core/lazy.js';

/** the zip reader, required by the first archive read (core/lazy.ts) */
const admZip = lazyRequire<typeof AdmZip>('adm-zip');

export interface ArchiveLimits {
  readonly entries: number;
  readonly unpackedBytes: number;
  readonly ratio: number;
  readonly ratioFloorBytes: number;
}

/** The bounds of an archive (docs/plugins.md §7). */
export const ARCHIVE_LIMITS: ArchiveLimits = {
  /** files and folders */
  entries: 10_000,
  /** bytes of every entry unpacked */
  unpackedBytes: 256 * 1024 * 1024,
  /** unpacked / compressed bytes of one entry larger than `ratioFloorBytes` */
  ratio: 200,
  ratioFloorBytes: 1024 * 1024,
};

/** Unpacks one entry within `budget` bytes; the declared size is not trusted (inflation stops past it). */
function entryData(e: AdmZip.IZipEntry, budget: number, limits: ArchiveLimits): Buffer {
  const declared = e.header.size;
  const packed = e.header.compressedSize;
  if (declared > budget) throw new Error(`invalid zip file: it unpacks to more than ${limits.unpackedBytes} bytes`);
  if (declared > limits.ratioFloorBytes && declared > packed * limits.ratio)
    throw new Error(`invalid zip file: entry ${e.entryName} is compressed more than ${limits.ratio} to 1`);
  const method = e.header.method;
  if (method !== 0 && method !== 8) return e.getData();
  const raw = e.getCompressedData();
  let data: Buffer;
  try {
    data = method === 0 ? raw : inflateRawSync(raw, { maxOutputLength: Math.max(declared, 1) });
  } catch (err) {
    throw new Error(
      `invalid zip file: entry ${e.entryName} cannot be unpacked within its size: ${(err as Error).message}`,
    );
  }
  if (data.length !== declared) throw new Error(`invalid zip file: entry ${e.entryName} does not match its size`);
  return data;
}

export interface ArchiveEntry {
  /** normalised relative path with `/` separators */
  path: string;
  data: Buffer;
}

/** The file entries of a zip; throws when the archive is unreadable or an entry would escape its folder. */
export function readZip(bytes: Buffer, limits: ArchiveLimits = ARCHIVE_LIMITS): ArchiveEntry[] {
  let zip: AdmZip;
  try {
    zip = new (admZip())(bytes);
  } catch (e) {
    throw new Error(`invalid zip file: ${(e as Error).message}`);
  }
  const all = zip.getEntries();
  if (all.length > limits.entries) throw new Error(`invalid zip file: more than ${limits.entries} entries`);
  // every path is checked before anything is unpacked: a slip is refused without inflating the rest
  for (const e of all) entryPath(e);
  let budget = limits.unpackedBytes;
  const out: ArchiveEntry[] = [];
  for (const e of all) {
    if (e.isDirectory) continue;
    const data = entryData(e, budget, limits);
    budget -= data.length;
    out.push({ path: entryPath(e), data });
  }
  return out;
}

/** The normalised path of an entry; throws when it would leave the target folder. */
function entryPath(e: AdmZip.IZipEntry): string {
  const raw = e.entryName.replace(/\\/g, '/');
  if (raw.includes('\0') || isAbsolute(raw) || /^[A-Za-z]:/.test(raw))
    throw new Error(`invalid zip entry ${e.entryName}: absolute path`);
  const rel = normalize(raw).split(sep).join('/');
  if (rel === '..' || rel.startsWith('../'))
    throw new Error(`invalid zip entry ${e.entryName}: it leads outside the target folder`);
  return rel;
}

/** Writes entries under `dir` (created as needed). Paths were checked by {@link readZip}. */
export async function writeEntries(dir: string, entries: readonly ArchiveEntry[]): Promise<void> {
  for (const e of entries) {
    const target = join(dir, e.path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, e.data);
  }
}

/** Moves every entry from `from` to `to`, replacing existing files, then removes `from`. */
export async function moveEntries(from: string, to: string, entries: readonly ArchiveEntry[]): Promise<void> {
  for (const e of entries) {
    const target = join(to, e.path);
    await mkdir(dirname(target), { recursive: true });
    await rename(join(from, e.path), target);
  }
  await rm(from, { recursive: true, force: true });
}

/**
 * Runs an archive's `install.sh` in `dir` with `params` (`shellParas`) within `timeoutMs`; its output goes to `log`
 * and, when it fails, into the error.
 */
export function runInstallScript(
  dir: string,
  params: readonly string[],
  timeoutMs: number,
  log: (line: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('/bin/sh', ['install.sh', ...params], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    const take = (d: Buffer) => {
      const text = d.toString();
      out = (out + text).slice(-8192);
      for (const line of text.split('\n')) if (line.trim() !== '') log(line);
    };
    p.stdout.on('data', take);
    p.stderr.on('data', take);
    const timer = setTimeout(() => {
      // the script's whole process group: a command it started must not outlive the install
      try {
        if (p.pid !== undefined) process.kill(-p.pid, 'SIGKILL');
      } catch {
        p.kill('SIGKILL');
      }
      reject(new Error(`install.sh did not finish within ${timeoutMs} ms: ${out.trim()}`));
    }, timeoutMs);
    p.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    p.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`install.sh exited with ${code}: ${out.trim()}`));
    });
  });
}
