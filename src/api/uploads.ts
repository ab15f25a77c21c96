/**
 * `POST/GET /config/uploads`, `DELETE /config/uploads/{fileName}` (docs/rest-api.md §12).
 * Multipart parsing is registered only in this route's scope: every other endpoint keeps reading bodies as text.
 */
import multipart from '@fastify/multipart';
import { basename } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { DEFAULT_MAX_BODY_SIZE } from '../core/limits.js';
import { field, rawBody, restated, rethrowing, sendJson, sendText } from './http.js';
import { UploadError, UploadNotFound, UploadTooLarge, type UploadsService } from '../catalog/uploads.js';

/** `maxFileSize`: the largest uploaded file (`basic.maxBodySize`); a larger one is answered 413 and not kept. */
export function registerUploadRoutes(
  http: FastifyInstance,
  uploads: UploadsService,
  maxFileSize: number = DEFAULT_MAX_BODY_SIZE,
): void {
  void http.register(async (scope) => {
    await scope.register(multipart, {
      limits: { fileSize: maxFileSize, files: 16, parts: 1000 },
      throwFileSizeLimit: true,
    });

    scope.post('/config/uploads', async (req, reply) => {
      const media = mediaType(req);
      const path =
        media === 'application/json' ? await uploadJson(req, uploads) : await uploadMultipart(req, uploads, media);
      return sendText(reply, 201, path);
    });

    scope.get('/config/uploads', async (_req, reply) => {
      return sendJson(
        reply,
        200,
        await rethrowing(() => uploads.list(), restated('Error reading the file upload dir: ')),
      );
    });

    scope.delete<{ Params: { fileName: string } }>('/config/uploads/:fileName', async (req, reply) => {
      await rethrowing(
        () => uploads.remove(req.params.fileName),
        (e) =>
          restated(
            'Error deleting the file: ',
            e instanceof UploadNotFound ? ErrorCode.NotFound : ErrorCode.Undefined,
          )(e),
      );
      return sendText(reply, 200, 'ok');
    });
  });
}

function mediaType(req: FastifyRequest): string {
  return String(req.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
}

async function uploadJson(req: FastifyRequest, uploads: UploadsService): Promise<string> {
  const text = rawBody(req);
  const body: unknown = rethrowing(
    () => JSON.parse(text),
    (e) =>
      new EddyError(
        ErrorCode.Undefined,
        `Invalid body: Error decoding file json: ${text.trim() === '' ? 'EOF' : (e as Error).message}`,
      ),
  );
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new EddyError(ErrorCode.Undefined, 'Invalid body: Error decoding file json: the body must be a JSON object');
  }
  const obj = body as Record<string, unknown>;
  const str = (k: string): string => {
    const v = field(obj, k);
    return typeof v === 'string' ? v : '';
  };
  const name = str('name');
  const content = str('content');
  const file = str('file');
  if (name === '')
    throw new EddyError(ErrorCode.Undefined, 'Invalid body: missing necessary field: invalid body: name is required');
  if (content === '' && file === '') {
    throw new EddyError(
      ErrorCode.Undefined,
      'Invalid body: missing necessary field: invalid body: content or FilePath is required',
    );
  }
  rethrowing(() => uploads.pathOf(name), restated('Invalid body: '));
  return rethrowing(() => uploads.install({ name, content, file }), restated('Upload error: getFile has error: '));
}

async function uploadMultipart(req: FastifyRequest, uploads: UploadsService, media: string): Promise<string> {
  if (media !== 'multipart/form-data' || !req.isMultipart()) {
    throw new EddyError(
      ErrorCode.Undefined,
      "Error parse the multi part form: request Content-Type isn't multipart/form-data",
    );
  }
  const stored = await rethrowing(
    () => storeUploadFile(req, uploads),
    (e) => {
      if (e instanceof EddyError) return e;
      if ((e as { statusCode?: number }).statusCode === 413) return tooLarge();
      return restated('Error parse the multi part form: ')(e);
    },
  );
  if (stored === undefined) throw new EddyError(ErrorCode.Undefined, 'Error Retrieving the File: http: no such file');
  return stored;
}

function tooLarge(): EddyError {
  return new EddyError(ErrorCode.Undefined, 'the uploaded file is larger than basic.maxBodySize', 413);
}

/** Stores the first `uploadFile` part and drains every other part; its stored path, or undefined when none came. */
async function storeUploadFile(req: FastifyRequest, uploads: UploadsService): Promise<string | undefined> {
  let stored: string | undefined;
  for await (const part of req.parts()) {
    if (part.type !== 'file') continue;
    if (part.fieldname !== 'uploadFile' || stored !== undefined) {
      part.file.resume();
      continue;
    }
    // browsers may send a full client path; only its last segment names the file
    const name = basename(part.filename.replace(/\\/g, '/'));
    stored = await rethrowing(
      () => uploads.installStream(name, part.file, () => part.file.truncated),
      (e) => {
        part.file.resume();
        if (e instanceof UploadTooLarge || (e as { statusCode?: number }).statusCode === 413) return tooLarge();
        return e instanceof UploadError
          ? new EddyError(ErrorCode.Undefined, `Invalid body: ${e.message}`)
          : restated('Upload error: ')(e);
      },
    );
  }
  return stored;
}
