/**
 * `/ruletest` (docs/rest-api.md §16.4): rule trial runs with mock data whose results are pushed on the data server's
 * websocket endpoint `/test/<id>`. Errors are error objects (400; 404 with code 1002 for an unknown trial, docs/compatibility.md D1).
 */
import type { FastifyInstance } from 'fastify';
import { ErrorCode, toEddyError } from '../core/errors.js';
import { readJsonObject, sendJson, sendText } from './http.js';
import type { RuleTestService } from '../rules/trial.js';

type IdParams = { Params: { id: string } };

export function registerRuleTestRoutes(http: FastifyInstance, trials: RuleTestService): void {
  http.post('/ruletest', async (req, reply) => {
    const body = readJsonObject(req, 'Invalid body: ');
    try {
      return sendJson(reply, 200, await trials.create(body));
    } catch (e) {
      throw toEddyError(e, ErrorCode.Undefined, 'create test rule error');
    }
  });

  http.post<IdParams>('/ruletest/:id/start', async (req, reply) => {
    const { id } = req.params;
    try {
      await trials.start(id);
    } catch (e) {
      throw toEddyError(e, ErrorCode.Undefined, 'start test rule error');
    }
    return sendText(reply, 200, `Test rule ${id} was started`);
  });

  http.delete<IdParams>('/ruletest/:id', async (req, reply) => {
    const { id } = req.params;
    await trials.delete(id);
    return sendText(reply, 200, `Test rule ${id} was stopped`);
  });
}
