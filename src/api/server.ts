/**
 * The fastify instance with eKuiper's transport conventions (docs/rest-api.md §1): every body read as text, errors as
 * `{"error", "message"}`, `404 page not found` for unknown paths, 405 for known paths with another method, CORS.
 */
import { createRequire } from 'node:module';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { EddyError, ErrorCode, isDefect } from '../core/errors.js';
import { DEFAULT_MAX_BODY_SIZE, MAX_ID_LENGTH, TOO_DEEP_MESSAGE, jsonTooDeep } from '../core/limits.js';
import { PlainTextFailure, sendError, sendFailure } from './http.js';
import type { Logger } from '../config/log.js';

const CORS_METHODS = new Set(['POST', 'GET', 'PUT', 'DELETE', 'HEAD', 'PATCH']);
const CORS_HEADERS = new Set([
  'accept',
  'accept-language',
  'content-type',
  'content-language',
  'origin',
  'authorization',
]);

/** A dot segment, also percent-encoded (`%2e`), as Go's router sees it after decoding. */
function dotSegment(seg: string): 0 | 1 | 2 {
  const s = seg.replace(/%2e/gi, '.');
  return s === '.' ? 1 : s === '..' ? 2 : 0;
}

/**
 * The path with double slashes and `.`/`..` segments resolved, keeping a trailing slash (Go's `path.Clean` as
 * eKuiper's router applies it). Returns its argument unchanged when already clean.
 */
export function cleanPath(path: string): string {
  if (path === '') return '/';
  const out: string[] = [];
  const segs = path.split('/');
  let changed = !path.startsWith('/');
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i];
    const last = i === segs.length - 1;
    if (seg === '') {
      // the leading '' and a trailing slash are legitimate; any other empty segment is a double slash
      if (i !== 0 && !last) changed = true;
      continue;
    }
    const dots = dotSegment(seg);
    if (dots === 1) changed = true;
    else if (dots === 2) {
      changed = true;
      out.pop();
    } else out.push(seg);
  }
  if (!changed) return path;
  const trailing = path.endsWith('/') && out.length > 0;
  return `/${out.join('/')}${trailing ? '/' : ''}`;
}

/** `url` with every `%2F` of its path decoded (the query is left alone). */
function decodeSlashes(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (!/%2f/i.test(path)) return url;
  return path.replace(/%2f/gi, '/') + (q < 0 ? '' : url.slice(q));
}

/** A CORS pre-flight (`OPTIONS` with `Origin`), docs/rest-api.md §1.6. */
function preflight(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const method = req.headers['access-control-request-method'];
  if (!method) return reply.code(400).send();
  if (!CORS_METHODS.has(String(method).toUpperCase())) return reply.code(405).send();
  const asked = String(req.headers['access-control-request-headers'] ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  if (asked.some((h) => !CORS_HEADERS.has(h.toLowerCase()))) return reply.code(403).send();
  const nonSimple = asked.filter((h) => !['accept', 'accept-language', 'content-language'].includes(h.toLowerCase()));
  if (nonSimple.length > 0) reply.header('Access-Control-Allow-Headers', nonSimple.join(', '));
  if (!['GET', 'HEAD', 'POST'].includes(String(method).toUpperCase())) {
    reply.header('Access-Control-Allow-Methods', String(method).toUpperCase());
  }
  return reply.code(200).send();
}

/** Requests answered 500: a defect ({@link isDefect}) or a framework failure, each logged with its stack. */
const unexpectedErrors = new WeakMap<FastifyInstance, number>();

/**
 * How many requests of `http` ended in an unexpected error, answered 500 and logged as `unexpected error in …`
 * (`GET /eddy/server` `restUnexpectedErrors`, `eddy_rest_unexpected_errors_total` of `GET /metrics`).
 */
export function unexpectedErrorCount(http: FastifyInstance): number {
  return unexpectedErrors.get(http) ?? 0;
}

type Compilers = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/**
 * Fastify's schema compilers (ajv, fast-json-stringify), loaded the first time a route asks for one. No route declares
 * a schema, and fastify loaded both with every server: about a tenth of the time a start takes to answer `/ping`.
 */
function lazyCompilers(): Compilers {
  // resolved from fastify's own folder, as fastify resolves them
  const load = createRequire(createRequire(import.meta.url).resolve('fastify'));
  const later = (name: string) => (externalSchemas?: unknown, options?: unknown) =>
    (load(name) as () => (s: unknown, o: unknown) => unknown)()(externalSchemas, options);
  return {
    buildValidator: later('@fastify/ajv-compiler') as Compilers['buildValidator'],
    buildSerializer: later('@fastify/fast-json-stringify-compiler') as Compilers['buildSerializer'],
  };
}

export interface HttpLimits {
  /** largest request body in bytes (`basic.maxBodySize`); larger bodies are answered 413 */
  maxBodySize?: number;
}

export function createHttp(logger: Logger, limits: HttpLimits = {}): FastifyInstance {
  const maxBodySize =
    limits.maxBodySize && limits.maxBodySize > 0 ? Math.floor(limits.maxBodySize) : DEFAULT_MAX_BODY_SIZE;
  const http = Fastify({
    // request logs are info-level: the REST component logs warnings and errors only
    loggerInstance: logger.child({ component: 'rest' }, { level: 'warn' }) as unknown as FastifyBaseLogger,
    // so no request is logged, and a request needs no logger of its own (fastify made a child logger for each, a few
    // percent of the main thread's CPU while thousands of rules were created): a failure's line names its request
    childLoggerFactory: (restLogger) => restLogger,
    bodyLimit: maxBodySize,
    // every id that can be created can be addressed (src/core/limits.ts)
    routerOptions: { maxParamLength: MAX_ID_LENGTH },
    // eKuiper reads bodies on GET and DELETE too (tags match, websocket endpoints)
    return503OnClosing: true,
    // eKuiper's routes take only the methods they name: HEAD on a GET route is 405 like any other method
    exposeHeadRoutes: false,
    // routes match the decoded path (docs/rest-api.md §1.2): an encoded `/` separates segments like a plain one
    rewriteUrl: (req) => decodeSlashes(req.url ?? '/'),
    forceCloseConnections: true,
    schemaController: { compilersFactory: lazyCompilers() },
    // the router's own refusals (a bad percent-escape, an over-long id) in eKuiper's error shape
    frameworkErrors: (err, _req, reply) => {
      const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
      const text = tooLong
        ? `a path segment is longer than the ${MAX_ID_LENGTH} characters an id may have`
        : err.message;
      return sendError(reply, new EddyError(ErrorCode.Undefined, text, tooLong ? 414 : 400));
    },
  });

  http.removeAllContentTypeParsers();
  http.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => {
    // bodies are JSON for every route that reads one: nesting is bounded before any handler recurses into it
    if (typeof body === 'string' && jsonTooDeep(body)) {
      done(new EddyError(ErrorCode.Undefined, `Invalid body: ${TOO_DEEP_MESSAGE}`), undefined);
      return;
    }
    done(null, body);
  });

  const routes: Array<{ method: string; re: RegExp }> = [];
  http.addHook('onRoute', (opts) => {
    const methods = Array.isArray(opts.method) ? opts.method : [opts.method];
    const re = new RegExp(
      `^${opts.url.replace(/[.*+?^${}()|[\]\\]/g, (c) => (c === '*' ? '.*' : `\\${c}`)).replace(/:[A-Za-z_]+/g, '[^/]+')}$`,
    );
    for (const m of methods) routes.push({ method: m, re });
  });

  // a callback rather than an async hook: no promise per request
  http.addHook('onRequest', (req, reply, done) => {
    const origin = req.headers.origin;
    if (origin) {
      reply.header('Access-Control-Allow-Origin', '*');
      // the CORS layer wraps the router: a pre-flight never reaches it
      if (req.method === 'OPTIONS') {
        preflight(req, reply);
        return;
      }
    }
    // eKuiper's router answers an unclean path (`//rules`, `/rules/./x`) with a redirect to its clean form
    const q = req.url.indexOf('?');
    const path = q < 0 ? req.url : req.url.slice(0, q);
    // (absolute-form targets such as `http://host/x` and `*` are not paths: left to the router)
    const clean = path.startsWith('/') ? cleanPath(path) : path;
    if (clean === path) {
      done();
      return;
    }
    reply
      .code(301)
      .header('Location', clean + (q < 0 ? '' : req.url.slice(q)))
      .send();
  });

  http.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0];
    if (req.method === 'OPTIONS') return reply.code(200).send();
    if (routes.some((r) => r.method !== req.method && r.re.test(path))) return reply.code(405).send();
    // Go's http.Error: plain text, nosniff, a trailing newline
    return reply
      .code(404)
      .type('text/plain; charset=utf-8')
      .header('X-Content-Type-Options', 'nosniff')
      .send('404 page not found\n');
  });

  // the one place a failure is answered (routes throw typed errors, api/http.ts), by the error's class: a refusal is
  // the client's (4xx, eKuiper's body), anything else a bug (500, its stack logged once here and counted)
  http.setErrorHandler((err, req, reply) => {
    if (err instanceof EddyError || err instanceof PlainTextFailure) return sendFailure(reply, err);
    const fe = err as { statusCode?: number; message?: string };
    if (fe.statusCode === 413) {
      const text = `request body is too large: the limit is ${maxBodySize} bytes (basic.maxBodySize)`;
      return sendError(reply, new EddyError(ErrorCode.Undefined, text, 413));
    }
    // fastify's own refusals (an unsupported media type, a bad header) carry their 4xx status
    if (fe.statusCode !== undefined && fe.statusCode >= 400 && fe.statusCode < 500) {
      return sendError(reply, new EddyError(ErrorCode.Undefined, fe.message ?? 'bad request', fe.statusCode));
    }
    // a lower layer's refusal the route let through untranslated: still the client's input
    if (!isDefect(err) && fe.statusCode === undefined) {
      return sendError(reply, new EddyError(ErrorCode.Undefined, fe.message ?? String(err)));
    }
    unexpectedErrors.set(http, (unexpectedErrors.get(http) ?? 0) + 1);
    req.log.error({ err }, 'unexpected error in %s %s', req.method, req.url);
    const text = err instanceof Error ? err.message : String(err);
    return sendError(reply, new EddyError(ErrorCode.Undefined, `internal error: ${text}`, 500));
  });

  return http;
}
