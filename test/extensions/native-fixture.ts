/**
 * Native plugin archives for tests: the samples of examples/plugins/ zipped as a user would zip them (the folder's
 * contents at the archive root), variants with files changed, and a small HTTP server that serves them.
 */
import { createServer, type Server } from 'node:http';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import AdmZip from 'adm-zip';

export const EXAMPLES = new URL('../../examples/plugins/', import.meta.url).pathname;

function filesOf(dir: string, root = dir, out: Record<string, Buffer> = {}): Record<string, Buffer> {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) filesOf(full, root, out);
    else out[relative(root, full)] = readFileSync(full);
  }
  return out;
}

/** The zip of a sample folder (`sources/counter`), with `changes` applied (a null removes a file). */
export function sampleZip(sample: string, changes: Record<string, string | Buffer | null> = {}): Buffer {
  const files: Record<string, Buffer> = filesOf(join(EXAMPLES, sample));
  for (const [p, v] of Object.entries(changes)) {
    if (v === null) delete files[p];
    else files[p] = typeof v === 'string' ? Buffer.from(v) : v;
  }
  return zipOf(files);
}

export function zipOf(files: Record<string, string | Buffer>): Buffer {
  const zip = new AdmZip();
  for (const [p, v] of Object.entries(files)) zip.addFile(p, typeof v === 'string' ? Buffer.from(v) : v);
  return zip.toBuffer();
}

/** Serves archives over HTTP: `put(name, bytes)` returns the URL. */
export interface ArchiveServer {
  put(name: string, bytes: Buffer): string;
  close(): Promise<void>;
}

export async function serveArchives(): Promise<ArchiveServer> {
  const files = new Map<string, Buffer>();
  const server: Server = createServer((req, res) => {
    const body = files.get(req.url ?? '');
    if (!body) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/zip', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    put(name, bytes) {
      files.set(`/${name}`, bytes);
      return `http://127.0.0.1:${port}/${name}`;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Writes an archive under `dir` and returns its `file://` URL. */
export function fileUrl(dir: string, name: string, bytes: Buffer): string {
  mkdirSync(dir, { recursive: true });
  const p = join(dir, name);
  writeFileSync(p, bytes);
  return pathToFileURL(p).href;
}
