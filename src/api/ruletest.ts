/**
 * `/ruletest` (docs/rest-api.md §16.4): rule trial runs with mock data whose results are pushed on the data server's
 * websocket endpoint `/test/<id>`. Errors are error objects (400; 404 with code 1002 for an unknown trial, docs/compatibility.md D1).
 */
import type { FastifyInstance } from 'fastify';
import { asEddyError, readJsonObject, rethrowing, sendJson, sendText } from './http.js';
import type { RuleTestService } from '../rules/trial.js';

type IdParams = { Params: { id: string } };

export function registerRuleTestRoutes(http: FastifyInstance, trials: RuleTestService): void {
  http.post('/ruletest', async (req, reply) => {
    const body = readJsonObject(req, 'Invalid body: ');
    return sendJson(reply, 200, await rethrowing(() => trials.create(body), asEddyError('create test rule error')));
  });

  http.post<IdParams>('/ruletest/:id/start', async (req, reply) => {
    const { id } = req.params;
    await rethrowing(() => trials.start(id), asEddyError('start test rule error'));
    return sendText(reply, 200, `Test rule ${id} was started`);
  });

  http.delete<IdParams>('/ruletest/:id', async (req, reply) => {
    const { id } = req.params;
    await trials.delete(id);
    return sendText(reply, 200, `Test rule ${id} was stopped`);
  });
}
