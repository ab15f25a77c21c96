/**
 * `/eddy/queries` (Eddy's own, docs/rest-api.md §16.18): ad-hoc SELECTs for `eddy query`, run as temporary rules that
 * are never stored (rules/queries.ts). `POST` plans one and answers where its rows will be read; the query runs while
 * a reader is connected to that websocket path on the data server.
 */
import type { FastifyInstance } from 'fastify';
import { asEddyError, readJsonObject, rethrowing, sendJson, sendText } from './http.js';
import type { QueryService } from '../rules/queries.js';

export function registerQueryRoutes(http: FastifyInstance, queries: QueryService): void {
  http.post('/eddy/queries', async (req, reply) => {
    const body = readJsonObject(req, 'Invalid body: ');
    return sendJson(reply, 201, await rethrowing(() => queries.create(body.sql), asEddyError('create query error')));
  });

  http.get('/eddy/queries', async (_req, reply) => sendJson(reply, 200, queries.list()));

  http.delete<{ Params: { id: string } }>('/eddy/queries/:id', async (req, reply) => {
    await queries.delete(req.params.id);
    return sendText(reply, 200, `Query ${req.params.id} was stopped`);
  });
}
