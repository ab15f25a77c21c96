/**
 * Reading extension archives (zip) safely: every entry must stay inside the target folder (no zip-slip,
 * docs/compatibility.md D6), and extraction goes to a staging folder first so that a failed install leaves nothing behind.
 */
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import AdmZip from 'adm-zip';

export interface ArchiveEntry {
  /** normalised relative path with `/` separators */
  path: string;
  data: Buffer;
}

/** The file entries of a zip; throws when the archive is unreadable or an entry would escape its folder. */
export function readZip(bytes: Buffer): ArchiveEntry[] {
  let zip: AdmZip;
  try {
    zip = new AdmZip(bytes);
  } catch (e) {
    throw new Error(`invalid zip file: ${(e as Error).message}`);
  }
  const out: ArchiveEntry[] = [];
  for (const e of zip.getEntries()) {
    const raw = e.entryName.replace(/\\/g, '/');
    if (raw.includes('\0') || isAbsolute(raw) || /^[A-Za-z]:/.test(raw))
      throw new Error(`invalid zip entry ${e.entryName}: absolute path`);
    const rel = normalize(raw).split(sep).join('/');
    if (rel === '..' || rel.startsWith('../'))
      throw new Error(`invalid zip entry ${e.entryName}: it leads outside the target folder`);
    if (e.isDirectory) continue;
    out.push({ path: rel, data: e.getData() });
  }
  return out;
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
