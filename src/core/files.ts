/**
 * File helpers shared by uploads, schemas and imports: safe names, reading `file`/`http`/`https` URLs, and writes
 * that never leave a half-written or empty file behind (docs/compatibility.md D6–D8).
 *
 * Trust model: `file://` URLs given over the API are read only inside the configured folders ({@link FileRoots}: the
 * home's `data/` folder and `basic.fileAccessRoots`), so the API cannot read or copy arbitrary local files. https
 * certificates are verified (Node's default).
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { idTooLong } from './limits.js';

/** Reads and downloads give up after 5 minutes, like eKuiper. */
const DOWNLOAD_TIMEOUT_MS = 5 * 60 * 1000;

/** Prefix of the temporary files written next to their target; listings hide them. */
export const TEMP_PREFIX = '.eddy-tmp-';

/**
 * Why `name` cannot be used as a file name inside a managed folder, or undefined when it can.
 * `strict` adds the `[A-Za-z0-9_.-]+` rule that schema names follow.
 */
export function badFileName(name: string, strict = false): string | undefined {
  if (name === '') return 'the name is empty';
  const long = idTooLong('name', name);
  if (long) return `invalid ${long}`;
  if (name === '.' || name === '..') return `invalid name ${name}`;
  if (/[/\\\0]/.test(name)) return `invalid name ${name}: it must not contain path separators or NUL`;
  if (name.startsWith(TEMP_PREFIX)) return `invalid name ${name}`;
  if (strict && !/^[A-Za-z0-9_.-]+$/.test(name))
    return `invalid name ${name}: only letters, digits, '_', '.' and '-' are allowed`;
  return undefined;
}

/**
 * The folders that paths given over the API (`file://` URLs, file source and sink paths) may point into. Paths are
 * compared after resolving symbolic links, so a link inside a root cannot lead out of it.
 */
export class FileRoots {
  private readonly real: readonly string[];

  constructor(readonly roots: readonly string[]) {
    this.real = roots.map((r) => realPathOf(resolve(r)));
  }

  /** Why `path` (absolute, or relative to the working folder) may not be used, or undefined when it may. */
  problem(path: string): string | undefined {
    if (insideAny(this.real, path)) return undefined;
    return `access to ${path} is denied: it is outside the folders the API may use (${this.roots.join(', ')}; basic.fileAccessRoots)`;
  }
}

/** Whether `path`, symbolic links resolved, lies inside one of `realRoots` (themselves resolved). */
function insideAny(realRoots: readonly string[], path: string): boolean {
  const target = realPathOf(resolve(path));
  return realRoots.some((root) => {
    const rel = relative(root, target);
    return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
  });
}

/** A schema import naming a file outside the schema folders (README "Input limits and file access"). */
export class ImportRefused extends Error {
  constructor(target: string) {
    super(`import "${target}" is refused: a schema may import only files inside the schema folders`);
  }
}

/** Whether an import path leaves whatever folder it is resolved against: absolute, or climbing out with `..`. */
export function importLeavesFolder(target: string): boolean {
  if (isAbsolute(target)) return true;
  const n = normalize(target);
  return n === '..' || n.startsWith(`..${sep}`);
}

/**
 * The file an `import "<target>"` of a schema stands for: the first of `dirs` that holds it, else the folder of the
 * importing file `origin`. Throws {@link ImportRefused}, before anything is opened, when that file is not inside one of
 * `dirs` once symbolic links are resolved: an import must not make the server read, or quote in an error, a file
 * elsewhere (`/etc/shadow`). The root file (no `origin`) is the caller's choice and passes as it is.
 */
export function confinedImport(dirs: readonly string[], origin: string, target: string): string {
  if (!origin) return target;
  if (importLeavesFolder(target)) throw new ImportRefused(target);
  const candidates = [...dirs.map((d) => join(d, target)), join(dirname(origin), target)];
  const chosen = candidates.find((p) => existsSync(p)) ?? candidates[0];
  if (
    !insideAny(
      dirs.map((d) => realPathOf(resolve(d))),
      chosen,
    )
  )
    throw new ImportRefused(target);
  return chosen;
}

/** `path` with symbolic links resolved; for a path that does not exist yet, its nearest existing ancestor's. */
function realPathOf(path: string): string {
  let head = path;
  const tail: string[] = [];
  while (!existsSync(head)) {
    const parent = dirname(head);
    if (parent === head) return path;
    tail.unshift(basename(head));
    head = parent;
  }
  try {
    return join(realpathSync(head), ...tail);
  } catch {
    return path;
  }
}

/**
 * Reads the resource behind a `file://`, `http://` or `https://` URL; with `roots`, a `file://` URL must point inside
 * one of them. Error messages follow eKuiper's
 * (`stat <path>: no such file or directory`, `unsupported url scheme ftp`,
 * `cannot download the file with status: 404 Not Found`).
 */
export async function readUrl(uri: string, roots?: FileRoots): Promise<Buffer> {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new Error(`invalid url ${uri}`);
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (scheme === 'file') {
    let path: string;
    try {
      path = fileURLToPath(url);
    } catch (e) {
      throw new Error(`invalid file url ${uri}: ${(e as Error).message}`);
    }
    const denied = roots?.problem(path);
    if (denied) throw new Error(denied);
    try {
      const st = await stat(path);
      if (st.isDirectory()) throw new Error(`read ${path}: is a directory`);
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (err.code === 'ENOENT') throw new Error(`stat ${path}: no such file or directory`);
      if (err.code === 'EACCES') throw new Error(`stat ${path}: permission denied`);
      throw err;
    }
    return readFile(path);
  }
  if (scheme !== 'http' && scheme !== 'https') throw new Error(`unsupported url scheme ${scheme}`);
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), redirect: 'follow' });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    throw new Error(`cannot download ${uri}: ${cause ?? (e as Error).message}`);
  }
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`cannot download the file with status: ${res.status} ${res.statusText}`.trimEnd());
  }
  return Buffer.from(await res.arrayBuffer());
}

/** A temporary path in `dir`, hidden from listings, for a write that is renamed into place on success. */
export function tempPath(dir: string): string {
  return join(dir, `${TEMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`);
}

/**
 * Writes `data` to `dir/name` through a temporary file renamed into place, so the target is either the old file or
 * the complete new one. `check` may inspect the temporary file before the rename and throw to abandon the write.
 */
export async function writeAtomic(
  dir: string,
  name: string,
  data: Uint8Array | string,
  check?: (tmp: string) => Promise<void> | void,
): Promise<string> {
  const tmp = tempPath(dir);
  const target = join(dir, name);
  try {
    await writeFile(tmp, data);
    if (check) await check(tmp);
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return target;
}
