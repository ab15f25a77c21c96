/**
 * The rules REST API (docs/rest-api.md §4): CRUD, lifecycle, status, topology, explain, validate, CPU usage and tags,
 * with eKuiper's statuses and message texts. Fixed three-segment routes (`/rules/status/all`, `/rules/usage/cpu`,
 * `/rules/tags/match`) never collide with `/rules/{id}`; `GET /rules/validate` is "describe rule validate".
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode, toEddyError } from '../core/errors.js';
import { field, rawBody, readJsonObject, sendEmpty, sendError, sendJson, sendText } from './http.js';
import { RuleDefError } from '../rules/definition.js';
import type { RuleService } from '../rules/service.js';
import type { ValueObject } from '../values/value.js';

/** Request body as text; fastify skips bodies of GET requests, so those are read from the socket here. */
async function bodyText(req: FastifyRequest): Promise<string> {
  if (req.body !== undefined && req.body !== null) return rawBody(req);
  if (req.method !== 'GET') return '';
  let text = '';
  for await (const chunk of req.raw) text += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
  return text;
}

/**
 * The rule addressed by the path: its id, or the name of exactly one rule (the brief: "the id or name"). Waits for
 * the stored rules to be restored at boot.
 */
async function idOf(req: FastifyRequest, rules: RuleService): Promise<string> {
  await rules.whenRestored();
  const key = (req.params as { id: string }).id;
  return rules.resolve(key) ?? key;
}

/** `/rules/` and ids holding an encoded `/` address no rule (one path segment each, docs/rest-api.md §1.2). */
function badPath(reply: FastifyReply, id: string): FastifyReply | undefined {
  if (id === '' || id.includes('/')) return reply.code(404).type('text/plain; charset=utf-8').send('404 page not found\n');
  return undefined;
}

function fail(reply: FastifyReply, err: unknown, prefix?: string, fallback: number = ErrorCode.Undefined): FastifyReply {
  return sendError(reply, toEddyError(err, fallback, prefix));
}

/** Tag lists from `{"tags": [...]}` and/or `{"keys": [...]}` (both accepted, united; docs/rest-api.md §4.16). */
function decodeTags(text: string, allowEmptyBody: boolean): string[] {
  if (allowEmptyBody && text.trim() === '') return [];
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new EddyError(ErrorCode.Undefined, `decode body error: ${text.trim() === '' ? 'EOF' : (e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new EddyError(ErrorCode.Undefined, 'decode body error: the body must be a JSON object');
  }
  const out: string[] = [];
  for (const [k, list] of Object.entries(v as Record<string, unknown>)) {
    const key = k.toLowerCase();
    if (key !== 'tags' && key !== 'keys') continue;
    if (list === null) continue;
    if (!Array.isArray(list) || list.some((t) => typeof t !== 'string')) {
      throw new EddyError(ErrorCode.Undefined, `decode body error: ${k} must be an array of strings`);
    }
    for (const t of list as string[]) if (!out.includes(t)) out.push(t);
  }
  return out;
}

export function registerRuleRoutes(http: FastifyInstance, rules: RuleService): void {
  // ---------------------------------------------------------------------------------------- fixed routes

  http.post('/rules', async (req, reply) => {
    await rules.whenRestored();
    try {
      const id = await rules.create(rawBody(req));
      return sendText(reply, 201, `Rule ${id} was created successfully.`);
    } catch (err) {
      return fail(reply, err);
    }
  });

  http.get('/rules', async (_req, reply) => {
    await rules.whenRestored();
    return sendJson(reply, 200, rules.list());
  });

  http.post('/rules/validate', async (req, reply) => {
    const text = rawBody(req);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (e) {
      const msg = text.trim() === '' ? 'EOF' : (e as Error).message;
      return sendError(reply, new EddyError(ErrorCode.Undefined, `invalid rule json: Parse rule ${text} error : ${msg}.`));
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return sendError(reply, new EddyError(ErrorCode.Undefined, 'invalid rule json: the body must be a JSON object'));
    }
    try {
      const result = rules.validate(text, body as Record<string, unknown>);
      return sendJson(reply, 200, result);
    } catch (err) {
      const msg = err instanceof RuleDefError ? `invalid rule json: ${err.detail}` : err instanceof Error ? err.message : String(err);
      return sendText(reply, 422, msg);
    }
  });

  http.get('/rules/status/all', async (_req, reply) => {
    await rules.whenRestored();
    return sendJson(reply, 200, rules.statusAll());
  });

  http.get('/rules/usage/cpu', async (_req, reply) => {
    await rules.whenRestored();
    return sendJson(reply, 200, rules.cpuUsage());
  });

  http.get('/rules/tags/match', async (req, reply) => {
    await rules.whenRestored();
    try {
      const tags = decodeTags(await bodyText(req), true);
      return sendJson(reply, 200, rules.matchTags(tags));
    } catch (err) {
      return fail(reply, err);
    }
  });

  // ---------------------------------------------------------------------------------------- one rule

  http.get('/rules/:id', async (req, reply) => {
    const id = await idOf(req, rules);
    const bad = badPath(reply, id);
    if (bad) return bad;
    if (!rules.has(id)) return sendError(reply, new EddyError(ErrorCode.NotFound, `Describe rule error: Rule ${id} is not found.`));
    // the stored text as is (docs/rest-api.md §4.4)
    return reply.code(200).type('application/json').send(rules.describe(id));
  });

  http.put('/rules/:id', async (req, reply) => {
    const id = await idOf(req, rules);
    const bad = badPath(reply, id);
    if (bad) return bad;
    try {
      await rules.update(id, rawBody(req));
      return sendText(reply, 200, `Rule ${id} was updated successfully.`);
    } catch (err) {
      return fail(reply, err);
    }
  });

  http.delete('/rules/:id', async (req, reply) => {
    const id = await idOf(req, rules);
    const bad = badPath(reply, id);
    if (bad) return bad;
    if (!rules.has(id)) return sendError(reply, new EddyError(ErrorCode.NotFound, `Delete rule error: ${id} is not found`));
    try {
      await rules.delete(id);
      return sendText(reply, 200, `Rule ${id} is dropped.`);
    } catch (err) {
      return fail(reply, err, 'Delete rule error');
    }
  });

  for (const action of ['start', 'restart'] as const) {
    http.post(`/rules/:id/${action}`, async (req, reply) => {
      const id = await idOf(req, rules);
      const bad = badPath(reply, id);
      if (bad) return bad;
      const prefix = `${action} rule error`;
      if (!rules.has(id)) {
        return sendError(reply, new EddyError(ErrorCode.NotFound, `${prefix}: Rule ${id} is not found in registry, please check if it is created`));
      }
      try {
        await rules[action](id);
        return sendText(reply, 200, `Rule ${id} was ${action}ed`);
      } catch (err) {
        return fail(reply, err, prefix, ErrorCode.Rule);
      }
    });
  }

  http.post('/rules/:id/stop', async (req, reply) => {
    const id = await idOf(req, rules);
    const bad = badPath(reply, id);
    if (bad) return bad;
    if (!rules.has(id)) return sendError(reply, new EddyError(ErrorCode.NotFound, `stop rule error: Rule ${id} was not found.`));
    try {
      await rules.stop(id);
      return sendText(reply, 200, `Rule ${id} was stopped.`);
    } catch (err) {
      return fail(reply, err, 'stop rule error', ErrorCode.Rule);
    }
  });

  // docs/rest-api.md §16.6: type 1 moves a running rule's source to another offset
  http.put('/rules/:id/reset_state', async (req, reply) => {
    const id = await idOf(req, rules);
    const bad = badPath(reply, id);
    if (bad) return bad;
    try {
      const body = readJsonObject(req, 'decode body error: ');
      const type = field(body, 'type');
      if (type !== 1) return sendError(reply, new EddyError(ErrorCode.Undefined, `unknown stateType:${typeof type === 'number' ? type : 0}`));
      if (!rules.has(id)) return sendError(reply, new EddyError(ErrorCode.NotFound, `Rule ${id} is not found in registry`));
      const params = field(body, 'params');
      const p = typeof params === 'object' && params !== null && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
      const streamName = field(p, 'streamName');
      const input = field(p, 'input');
      await rules.resetOffset(
        id,
        typeof streamName === 'string' ? streamName : '',
        typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as ValueObject) : {},
      );
      return sendText(reply, 200, 'success');
    } catch (err) {
      return fail(reply, err);
    }
  });

  http.get('/rules/:id/status', async (req, reply) => {
    const id = await idOf(req, rules);
    const bad = badPath(reply, id);
    if (bad) return bad;
    if (!rules.has(id)) return sendError(reply, new EddyError(ErrorCode.NotFound, `get rule status error: Rule ${id} is not found`));
    const status = rules.status(id);
    if (status.status !== 'running') return sendJson(reply, 200, status);
    return reply.code(200).type('application/json').send(JSON.stringify(status, null, 2));
  });

  http.get('/rules/:id/topo', async (req, reply) => {
    const id = await idOf(req, rules);
    const bad = badPath(reply, id);
    if (bad) return bad;
    if (!rules.has(id)) return sendError(reply, new EddyError(ErrorCode.NotFound, `get rule topo error: Rule ${id} is not found`));
    try {
      return sendJson(reply, 200, rules.topo(id));
    } catch (err) {
      return fail(reply, err, 'get rule topo error', ErrorCode.General);
    }
  });

  http.get('/rules/:id/explain', async (req, reply) => {
    const id = await idOf(req, rules);
    const bad = badPath(reply, id);
    if (bad) return bad;
    if (!rules.has(id)) return sendError(reply, new EddyError(ErrorCode.NotFound, `explain rules error: Rule ${id} is not found.`));
    try {
      return sendText(reply, 200, rules.explain(id));
    } catch (err) {
      return fail(reply, err, 'explain rules error', ErrorCode.Plan);
    }
  });

  // ---------------------------------------------------------------------------------------- tags

  const tagRoute = (method: 'PUT' | 'PATCH' | 'DELETE', apply: (id: string, tags: string[]) => Promise<void>) => {
    http.route({
      method,
      url: '/rules/:id/tags',
      handler: async (req, reply) => {
        const id = await idOf(req, rules);
        const bad = badPath(reply, id);
        if (bad) return bad;
        try {
          const tags = decodeTags(await bodyText(req), false);
          if (!rules.has(id)) throw new EddyError(ErrorCode.NotFound, `Get rule error: Rule ${id} is not found.`);
          await apply(id, tags);
          return sendEmpty(reply, 200);
        } catch (err) {
          return fail(reply, err);
        }
      },
    });
  };
  tagRoute('PUT', (id, tags) => rules.setTags(id, tags));
  tagRoute('PATCH', (id, tags) => rules.addTags(id, tags));
  tagRoute('DELETE', (id, tags) => rules.removeTags(id, tags));
}
