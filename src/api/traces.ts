/**
 * Rule tracing over REST (docs/rest-api.md §4.17, eKuiper 2.x's routes): `POST /rules/{id}/trace/start` with
 * `{"strategy": "always" | "head"}`, `POST /rules/{id}/trace/stop`, `GET /trace/rule/{id}` (the rule's recent trace
 * ids, newest first) and `GET /trace/{traceId}` (one trace: the source's span with the spans of the nodes its record
 * went on to under `ChildSpan`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { TraceStrategy } from '../contracts/index.js';
import type { RuleService } from '../rules/service.js';
import { field, rawBody, readJsonObject, sendJson, sendText } from './http.js';

async function existingRule(req: FastifyRequest, rules: RuleService): Promise<string> {
  await rules.whenRestored();
  const key = (req.params as { id: string }).id;
  const id = rules.resolve(key) ?? key;
  if (!rules.has(id)) throw new EddyError(ErrorCode.NotFound, `rule ${id} not found`);
  return id;
}

/** The body's strategy; an empty body means `always`. */
function strategyOf(req: FastifyRequest): TraceStrategy {
  if (req.body === undefined || req.body === null || rawBody(req).trim() === '') return 'always';
  const v = field(readJsonObject(req, 'decode body error: '), 'strategy') ?? 'always';
  if (v !== 'always' && v !== 'head') {
    throw new EddyError(ErrorCode.Undefined, `trace strategy must be "always" or "head", got ${JSON.stringify(v)}`);
  }
  return v;
}

export function registerTraceRoutes(http: FastifyInstance, rules: RuleService): void {
  http.post('/rules/:id/trace/start', async (req, reply) => {
    const strategy = strategyOf(req);
    const id = await existingRule(req, rules);
    rules.trace(id, strategy);
    return sendText(reply, 200, `Rule ${id} trace started with strategy ${strategy}`);
  });
  http.post('/rules/:id/trace/stop', async (req, reply) => {
    const id = await existingRule(req, rules);
    rules.trace(id, null);
    return sendText(reply, 200, `Rule ${id} trace stopped`);
  });
  http.get('/trace/rule/:id', async (req, reply) => {
    const id = await existingRule(req, rules);
    return sendJson(reply, 200, rules.traces.ruleTraces(id));
  });
  http.get('/trace/:traceId', (req, reply) => {
    const traceId = (req.params as { traceId: string }).traceId;
    const tree = rules.traces.trace(traceId);
    if (!tree) throw new EddyError(ErrorCode.NotFound, `trace ${traceId} not found`);
    return sendJson(reply, 200, tree);
  });
}
