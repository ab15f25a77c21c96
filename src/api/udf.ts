/**
 * `/udf/javascript` and `/udf/javascript/{id}` (docs/rest-api.md §16.17): JavaScript functions. eKuiper's texts; a
 * missing function is 404 with code 1002 (docs/compatibility.md D1). As in eKuiper, PUT creates or replaces the function named by the
 * body's `id`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { asEddyError, readJson, restated, rethrowing, sendJson, sendText } from './http.js';
import { decodeScript, type ScriptRecord, type ScriptService } from '../extensions/scripts.js';

type IdParams = { Params: { id: string } };

export function registerUdfRoutes(http: FastifyInstance, scripts: ScriptService): void {
  http.get('/udf/javascript', async (_req, reply) => sendJson(reply, 200, scripts.ids()));

  http.post('/udf/javascript', async (req, reply) => {
    const rec = readScript(req, 'Invalid body: Error decoding the new javascript function json: ');
    await rethrowing(() => scripts.create(rec), asEddyError('javascript function create command error'));
    return sendText(reply, 201, `javascript function ${rec.id} is created`);
  });

  http.get<IdParams>('/udf/javascript/:id', async (req, reply) => {
    const { id } = req.params;
    const rec = scripts.get(id);
    if (rec === undefined)
      throw new EddyError(ErrorCode.NotFound, `describe javascript function ${id} error: not found`);
    return sendJson(reply, 200, rec);
  });

  http.put<IdParams>('/udf/javascript/:id', async (req, reply) => {
    const rec = readScript(req, 'Invalid body: Error decoding the javascript function json: ');
    await rethrowing(() => scripts.upsert(rec), asEddyError('javascript function update command error'));
    return sendText(reply, 200, `javascript function ${rec.id} is updated`);
  });

  http.delete<IdParams>('/udf/javascript/:id', async (req, reply) => {
    const { id } = req.params;
    await rethrowing(() => scripts.delete(id), asEddyError(`delete javascript function ${id} error`));
    return sendText(reply, 200, `javascript function ${id} is deleted`);
  });
}

function readScript(req: FastifyRequest, prefix: string): ScriptRecord {
  const body = readJson(req, prefix);
  return rethrowing(() => decodeScript(body), restated(prefix));
}
