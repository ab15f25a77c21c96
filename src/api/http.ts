/**
 * Shared helpers of the REST layer: body decoding, text/JSON replies, case-insensitive request fields, and the typed
 * failures route handlers throw. Routes never answer a failure themselves: they throw an {@link EddyError} (answered
 * as eKuiper's `{"error", "message"}` body) or a {@link PlainTextFailure}, and the one error handler of
 * `api/server.ts` ({@link sendFailure}) answers it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode, isDefect, toEddyError } from '../core/errors.js';
import { firstJsonValue } from '../core/gojson.js';
export { field } from '../core/fields.js';

/** Raw request body as text (every content type is read as text; routes decode JSON themselves). */
export function rawBody(req: FastifyRequest): string {
  const b = req.body;
  if (b === undefined || b === null) return '';
  if (typeof b === 'string') return b;
  if (Buffer.isBuffer(b)) return b.toString('utf8');
  return JSON.stringify(b);
}

/**
 * Decodes the JSON body. On failure throws EddyError(1000) with `<prefix><decoder message>`, the shape eKuiper
 * uses (e.g. `Invalid body: Error decoding the statement descriptor: `).
 */
export function readJson(req: FastifyRequest, prefix: string, code: number = ErrorCode.Undefined): unknown {
  // eKuiper's handlers read the first JSON value of the body with Go's stream decoder: its messages (`EOF`,
  // `invalid character 'x' looking for beginning of value`) and its tolerance of trailing text are kept
  const first = firstJsonValue(rawBody(req));
  if ('error' in first) throw new EddyError(code, `${prefix}${first.error}`);
  return JSON.parse(first.value);
}

/** Like {@link readJson} but the body must be a JSON object. */
export function readJsonObject(
  req: FastifyRequest,
  prefix: string,
  code: number = ErrorCode.Undefined,
): Record<string, unknown> {
  const v = readJson(req, prefix, code);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new EddyError(code, `${prefix}the body must be a JSON object`);
  }
  return v as Record<string, unknown>;
}

export function sendText(reply: FastifyReply, status: number, text: string): FastifyReply {
  return reply.code(status).type('text/plain; charset=utf-8').send(text);
}

export function sendJson(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type('application/json').send(JSON.stringify(body));
}

/** JSON already serialised (the rules listings keep theirs encoded, rules/listing.ts). */
export function sendJsonText(reply: FastifyReply, status: number, json: string | Buffer): FastifyReply {
  return reply.code(status).type('application/json').send(json);
}

export function sendEmpty(reply: FastifyReply, status = 200): FastifyReply {
  return reply.code(status).send();
}

/** Sends a downloadable file (`/data/export`, `/ruleset/export`). */
export function sendDownload(reply: FastifyReply, filename: string, text: string): FastifyReply {
  return reply
    .code(200)
    .header('Content-Type', 'application/octet-stream')
    .header('Content-Disposition', `Attachment; filename=${filename}`)
    .send(text);
}

/**
 * A failure eKuiper answers as plain text rather than as its JSON error body: the router's `404 page not found`,
 * a 422 validation verdict, a 401 token check, a 416 range.
 */
export class PlainTextFailure extends Error {
  constructor(
    readonly status: number,
    readonly text: string,
    /** extra response headers (`X-Content-Type-Options`, `Content-Range`) */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(text);
    this.name = 'PlainTextFailure';
  }
}

/**
 * Runs `action` (sync or async) and rethrows its failure as `translate` makes it: the one place where a route turns a
 * lower layer's failure into the typed error its endpoint answers with.
 */
export function rethrowing<T>(action: () => T, translate: (err: unknown) => unknown): T {
  let result: T;
  try {
    result = action();
  } catch (err) {
    throw translate(err);
  }
  if (result instanceof Promise) {
    return result.catch((err: unknown) => {
      throw translate(err);
    }) as T;
  }
  return result;
}

/**
 * A translation for {@link rethrowing}: an EddyError keeps its code, another refusal gets `fallback`; `prefix: ` goes
 * in front of the message when given (eKuiper's per-endpoint prefixes). A defect passes unchanged (answered 500).
 */
export function asEddyError(prefix?: string, fallback: number = ErrorCode.Undefined): (err: unknown) => unknown {
  return (err) => toEddyError(err, fallback, prefix);
}

/**
 * A translation for {@link rethrowing}: `<prefix><message>` with `code`, whatever code the refusal carried. A defect
 * passes unchanged (answered 500).
 */
export function restated(prefix: string, code: number = ErrorCode.Undefined): (err: unknown) => unknown {
  return (err) => (isDefect(err) ? err : new EddyError(code, `${prefix}${(err as Error).message}`));
}

/** Answers a failure a route threw: plain text as it asks, anything else as eKuiper's JSON error body. */
export function sendFailure(reply: FastifyReply, err: EddyError | PlainTextFailure): FastifyReply {
  if (err instanceof EddyError) return sendError(reply, err);
  for (const [name, value] of Object.entries(err.headers)) reply.header(name, value);
  return reply.code(err.status).type('text/plain; charset=utf-8').send(err.text);
}

export function sendError(reply: FastifyReply, err: EddyError): FastifyReply {
  return reply
    .code(err.status)
    .type('application/json')
    .header('X-Content-Type-Options', 'nosniff')
    .send(`${JSON.stringify({ error: err.code, message: err.message })}\n`);
}
