/**
 * Data bundle endpoints (docs/rest-api.md §7): export, import (full / `partial=1` / `stop=1`), import status, and the
 * asynchronous import with its task endpoints.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { rawBody, readJson, rethrowing, sendJson, sendText } from './http.js';
import { sendDownload } from './download.js';
import {
  importSource,
  parseBundle,
  sourceTypeProblem,
  sourceText,
  type Bundle,
  type ImportSource,
} from '../bundle/bundle.js';
import type { BundleService, ImportControl } from '../bundle/service.js';
import { firstJsonValue } from '../core/gojson.js';
import { TaskNotFound, type TaskManager, type TaskOutcome } from '../bundle/tasks.js';

export interface DataRouteDeps {
  bundle: BundleService;
  tasks: TaskManager;
  /** called about a second after a successful `stop=1` import answered; the server should exit with `code` */
  requestExit?: (code: number) => void;
}

type Outcome = { ok: true; body: unknown } | { ok: false; message: string; cancelled?: boolean };

/** Runs one import request to its outcome; never throws for a bad bundle. */
async function runImport(
  bundle: BundleService,
  src: ImportSource,
  partial: boolean,
  ctl?: ImportControl,
): Promise<Outcome> {
  let text: string;
  try {
    text = await sourceText(src, bundle.fileRoots);
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  }
  let parsed: Bundle;
  try {
    parsed = parseBundle(text);
  } catch (e) {
    return { ok: false, message: `configuration unmarshal with error ${(e as Error).message}` };
  }
  const res = await bundle.import(parsed, partial, ctl);
  if (res.cancelled) {
    return {
      ok: false,
      cancelled: true,
      message: partial
        ? 'the import was cancelled; the items imported before stay'
        : 'the import was cancelled; the previous data was restored',
    };
  }
  if (res.failed) return { ok: false, message: JSON.stringify(res.status) };
  // the items Eddy could not install (and rules kept stopped for want of them) are named; all empty otherwise
  return { ok: true, body: { ErrorMsg: '', ConfigResponse: res.status } };
}

/**
 * The `{content, file}` body of an import, decoded as eKuiper's Go decoder does (errors `<prefix>EOF`,
 * `<prefix>unexpected EOF`, `<prefix>invalid character ...`, `<prefix>json: cannot unmarshal ...`); a JSON `null`
 * decodes to an empty body. `structName` is the Go type eKuiper decodes into.
 */
export function readImportBody(req: FastifyRequest, prefix: string, structName: string): Record<string, unknown> {
  const text = rawBody(req);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    const first = firstJsonValue(text);
    if ('error' in first) throw new EddyError(ErrorCode.Undefined, `${prefix}${first.error}`);
    v = JSON.parse(first.value);
  }
  if (v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) {
    const kind = Array.isArray(v) ? 'array' : typeof v === 'boolean' ? 'bool' : typeof v;
    throw new EddyError(
      ErrorCode.Undefined,
      `${prefix}json: cannot unmarshal ${kind} into Go value of type server.${structName}`,
    );
  }
  const body = v as Record<string, unknown>;
  const problem = sourceTypeProblem(body, structName);
  if (problem !== undefined) throw new EddyError(ErrorCode.Undefined, `${prefix}${problem}`);
  return body;
}

function flags(req: FastifyRequest): { partial: boolean; stop: boolean } {
  const q = req.query as Record<string, string | undefined>;
  const partial = q.partial === '1';
  return { partial, stop: !partial && q.stop === '1' };
}

/** eKuiper's text for an import body with both or neither of `content` and `file` (`/ruleset/import` adds `: bad request`). */
export function sourceProblem(problem: 'both' | 'neither', suffix = ''): string {
  const text =
    problem === 'both'
      ? 'Invalid body: Cannot specify both content and file'
      : 'Invalid body: must specify content or file';
  return text + suffix;
}

function checkedSource(body: Record<string, unknown>): ImportSource {
  const src = importSource(body);
  if ('problem' in src) throw new EddyError(ErrorCode.Undefined, sourceProblem(src.problem));
  return src;
}

function taskError(e: unknown): unknown {
  return e instanceof TaskNotFound ? new EddyError(ErrorCode.NotFound, e.message) : e;
}

export function registerDataRoutes(http: FastifyInstance, deps: DataRouteDeps): void {
  const { bundle, tasks } = deps;

  http.get('/data/export', async (req, reply) => sendDownload(req, reply, JSON.stringify(await bundle.exportAll())));

  http.post('/data/export', async (req, reply) => {
    let ids: string[] = [];
    try {
      const v = readJson(req, '');
      if (Array.isArray(v)) ids = v.filter((x): x is string => typeof x === 'string');
    } catch {
      // a body that is not a JSON array exports for no rule (eKuiper)
    }
    return sendDownload(req, reply, JSON.stringify(await bundle.exportRules(ids)));
  });

  http.post('/data/import', async (req, reply) => {
    const body = readImportBody(req, 'Invalid body: Error decoding json: ', 'configurationInfo');
    const src = checkedSource(body);
    const { partial, stop } = flags(req);
    const out = await runImport(bundle, src, partial);
    if (!out.ok) throw new EddyError(ErrorCode.Undefined, out.message);
    if (stop && deps.requestExit) {
      const exit = deps.requestExit;
      reply.raw.once('finish', () => setTimeout(() => exit(100), 1000).unref());
    }
    return sendJson(reply, 200, out.body);
  });

  http.get('/data/import/status', async (_req, reply) => sendJson(reply, 200, await bundle.lastStatus()));

  http.post('/async/data/import', async (req, reply) => {
    const body = readImportBody(req, 'Invalid body: Error decoding json: ', 'configurationInfo');
    const { partial, stop } = flags(req);
    const id = await tasks.start(async (ctl): Promise<TaskOutcome> => {
      const src = importSource(body);
      if ('problem' in src) {
        return { status: 'error', message: sourceProblem(src.problem) };
      }
      const out = await runImport(bundle, src, partial, ctl);
      if (out.ok) {
        if (stop && deps.requestExit) {
          const exit = deps.requestExit;
          setTimeout(() => exit(100), 1000).unref();
        }
        return { status: 'finish', message: JSON.stringify(out.body) };
      }
      return { status: out.cancelled ? 'cancel' : 'error', message: out.message };
    });
    return sendJson(reply, 200, { id });
  });

  http.get<{ Params: { id: string } }>('/async/task/:id', async (req, reply) => {
    return sendJson(reply, 200, await rethrowing(() => tasks.get(req.params.id), taskError));
  });

  // Eddy's own: items applied so far, for progress bars (the CLI's and the console's imports)
  http.get<{ Params: { id: string } }>('/async/task/:id/progress', async (req, reply) => {
    try {
      return sendJson(reply, 200, await tasks.progress(req.params.id));
    } catch (e) {
      throw taskError(e);
    }
  });

  http.post<{ Params: { id: string } }>('/async/task/:id/cancel', async (req, reply) => {
    await rethrowing(() => tasks.cancel(req.params.id), taskError);
    return sendText(reply, 200, 'cancel success');
  });
}
