/**
 * `/streams` and `/tables` (docs/rest-api.md §3): one handler family parameterised by kind.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Catalog } from '../catalog/catalog.js';
import type { StreamKind } from '../catalog/types.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import { field, readJson, rethrowing, sendJson, sendText } from './http.js';

/** The `sql` of a `{"sql": ...}` body; a missing or empty field is an empty statement (eKuiper). */
function statementOf(req: FastifyRequest): string {
  const body = readJson(req, 'Invalid body: Error decoding the statement descriptor: ');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new EddyError(
      ErrorCode.Undefined,
      `Invalid body: Error decoding the statement descriptor: the body must be a JSON object with a "sql" string`,
    );
  }
  const sql = field(body as Record<string, unknown>, 'sql');
  if (sql === undefined || sql === null) return '';
  if (typeof sql !== 'string') {
    throw new EddyError(
      ErrorCode.Undefined,
      'Invalid body: Error decoding the statement descriptor: "sql" must be a string',
    );
  }
  return sql;
}

/** A coded failure gets `prefix: ` in front of its message; anything else goes to the handler as it is. */
function prefixedAs(prefix: string): (err: unknown) => unknown {
  return (err) => (err instanceof EddyError ? err.withPrefix(prefix) : err);
}

export function registerStreamRoutes(http: FastifyInstance, catalog: Catalog): void {
  for (const kind of ['stream', 'table'] as const satisfies readonly StreamKind[]) {
    const base = `/${kind}s`;
    const Word = kind === 'stream' ? 'Stream' : 'Table';

    http.post(base, async (req, reply) => sendText(reply, 201, await catalog.exec(statementOf(req), kind)));

    http.get(base, async (req, reply) => {
      if (kind === 'stream')
        return sendJson(
          reply,
          200,
          catalog.list('stream').map((d) => d.name),
        );
      const q = req.query as Record<string, string | undefined>;
      return sendJson(
        reply,
        200,
        catalog.listTables(q.kind).map((d) => d.name),
      );
    });

    // eKuiper's list with type and format (docs/rest-api.md §16.3), used by its UI
    http.get(`/${kind}details`, async (req, reply) => {
      const q = req.query as Record<string, string | undefined>;
      const defs = kind === 'stream' ? catalog.list('stream') : catalog.listTables(q.kind);
      return sendJson(
        reply,
        200,
        defs.map((d) => ({
          name: d.name,
          type: (d.options.TYPE ?? 'mqtt').toLowerCase(),
          format: (d.options.FORMAT ?? 'json').toLowerCase(),
        })),
      );
    });

    http.get<{ Params: { id: string } }>(`${base}/:id`, async (req, reply) => {
      const def = catalog.require(kind, req.params.id, (c) => `describe ${kind} error: Describe ${kind} fails, ${c}.`);
      return sendJson(reply, 200, catalog.describeJson(def));
    });

    http.get<{ Params: { id: string } }>(`${base}/:id/schema`, async (req, reply) => {
      const def = catalog.require(
        kind,
        req.params.id,
        (c) => `get schema of ${kind} error: Describe ${kind} fails, ${c}.`,
      );
      return sendJson(
        reply,
        200,
        rethrowing(() => catalog.schemaJson(def), prefixedAs(`get schema of ${kind} error`)),
      );
    });

    http.put<{ Params: { id: string } }>(`${base}/:id`, async (req, reply) => {
      const sql = statementOf(req);
      await catalog.replace(kind, req.params.id, sql);
      return sendText(reply, 200, `${Word} ${req.params.id} is replaced.`);
    });

    http.delete<{ Params: { id: string } }>(`${base}/:id`, async (req, reply) => {
      await rethrowing(() => catalog.drop(kind, req.params.id), prefixedAs(`delete ${kind} error`));
      return sendText(reply, 200, `${Word} ${req.params.id} is dropped.`);
    });
  }
}
