/**
 * Cluster mode's REST surface (docs/cluster.md §5): `GET /cluster`, and the forwarding that lets any node answer for
 * any rule. A command on one rule (update, delete, start, stop, restart, reset_state) and its full status are
 * forwarded to the node running the rule, which executes it exactly as a single node would and writes the store (the
 * other nodes follow through the change feed); the answer comes back as that node gave it. A request that was already
 * forwarded, or whose rule runs nowhere else (or whose node cannot be reached), is answered here.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Cluster } from '../cluster/index.js';
import type { RuleService } from '../rules/service.js';
import { rawBody, sendJson } from './http.js';

/** Marks a forwarded request, which is never forwarded again. */
const FORWARDED_HEADER = 'x-eddy-forwarded-by';
const FORWARD_TIMEOUT_MS = 30_000;

/** The rule routes answered by the node running the rule. */
const FORWARDED = new Set([
  'PUT /rules/:id',
  'DELETE /rules/:id',
  'POST /rules/:id/start',
  'POST /rules/:id/stop',
  'POST /rules/:id/restart',
  'PUT /rules/:id/reset_state',
  'GET /rules/:id/status',
]);

async function ruleOf(req: FastifyRequest, rules: RuleService): Promise<string | undefined> {
  if (!FORWARDED.has(`${req.method} ${req.routeOptions.url}`)) return undefined;
  if (req.headers[FORWARDED_HEADER] !== undefined) return undefined;
  await rules.whenRestored();
  const key = (req.params as { id?: string }).id ?? '';
  return rules.resolve(key) ?? key;
}

/** Registers `GET /cluster` and the forwarding hook; call before the rule routes. */
export function registerClusterRoutes(http: FastifyInstance, cluster: Cluster, rules: RuleService): void {
  http.get('/cluster', async (_req, reply) => sendJson(reply, 200, cluster.view()));

  http.addHook('preHandler', async (req, reply) => {
    const id = await ruleOf(req, rules);
    if (id === undefined) return;
    const target = cluster.forwardTarget(id);
    if (target === undefined) return;
    const headers: Record<string, string> = { [FORWARDED_HEADER]: cluster.nodeId };
    for (const name of ['authorization', 'content-type']) {
      const v = req.headers[name];
      if (typeof v === 'string') headers[name] = v;
    }
    const hasBody = req.method !== 'GET' && req.method !== 'DELETE';
    let res: Response;
    try {
      res = await fetch(target + req.url, {
        method: req.method,
        headers,
        ...(hasBody ? { body: rawBody(req) } : {}),
        signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
      });
    } catch (err) {
      // the node running the rule is unreachable: this node answers from what it knows
      req.log.warn({ err, target }, 'cannot forward a request about rule %s; answering it here', id);
      return;
    }
    const text = await res.text();
    return reply
      .code(res.status)
      .header('content-type', res.headers.get('content-type') ?? 'text/plain; charset=utf-8')
      .send(text);
  });
}
