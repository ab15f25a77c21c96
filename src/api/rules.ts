/**
 * The rules REST API (docs/rest-api.md §4): CRUD, lifecycle, status, topology, explain, validate, CPU usage and tags,
 * with eKuiper's statuses and message texts. Fixed three-segment routes (`/rules/status/all`, `/rules/usage/cpu`,
 * `/rules/tags/match`) never collide with `/rules/{id}`; `GET /rules/validate` is "describe rule validate".
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode, isDefect } from '../core/errors.js';
import {
  PlainTextFailure,
  asEddyError,
  field,
  rawBody,
  readJsonObject,
  rethrowing,
  sendEmpty,
  sendJson,
  sendJsonText,
  sendText,
} from './http.js';
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
 * the stored rules to be restored at boot. `/rules/` and ids holding an encoded `/` address no rule (one path segment
 * each, docs/rest-api.md §1.2).
 */
async function ruleIdOf(req: FastifyRequest, rules: RuleService): Promise<string> {
  await rules.whenRestored();
  const key = (req.params as { id: string }).id;
  const id = rules.resolve(key) ?? key;
  if (id === '' || id.includes('/')) throw new PlainTextFailure(404, '404 page not found\n');
  return id;
}

/** Throws eKuiper's not-found error, worded as the endpoint words it, when no rule has this id. */
function requireRule(rules: RuleService, id: string, message: string): void {
  if (!rules.has(id)) throw new EddyError(ErrorCode.NotFound, message);
}

/** Tag lists from `{"tags": [...]}` and/or `{"keys": [...]}` (both accepted, united; docs/rest-api.md §4.16). */
function decodeTags(text: string, allowEmptyBody: boolean): string[] {
  if (allowEmptyBody && text.trim() === '') return [];
  const v: unknown = rethrowing(
    () => JSON.parse(text),
    (e) =>
      new EddyError(ErrorCode.Undefined, `decode body error: ${text.trim() === '' ? 'EOF' : (e as Error).message}`),
  );
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

type RuleHandler = (rules: RuleService, req: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

// ---------------------------------------------------------------------------------------- fixed routes

const createRule: RuleHandler = async (rules, req, reply) => {
  await rules.whenRestored();
  const id = await rethrowing(() => rules.create(rawBody(req)), asEddyError());
  return sendText(reply, 201, `Rule ${id} was created successfully.`);
};

const listRules: RuleHandler = async (rules, _req, reply) => {
  await rules.whenRestored();
  return sendJsonText(reply, 200, rules.listJson());
};

/** The body of `POST /rules/validate` as a JSON object, with the endpoint's decode messages. */
function validationBody(text: string): Record<string, unknown> {
  const body: unknown = rethrowing(
    () => JSON.parse(text),
    (e) => {
      const msg = text.trim() === '' ? 'EOF' : (e as Error).message;
      return new EddyError(ErrorCode.Undefined, `invalid rule json: Parse rule ${text} error : ${msg}.`);
    },
  );
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new EddyError(ErrorCode.Undefined, 'invalid rule json: the body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** A rule that fails validation is answered 422 with the reason as plain text (a defect stays one: 500). */
function validationVerdict(err: unknown): unknown {
  if (isDefect(err)) return err;
  return new PlainTextFailure(
    422,
    err instanceof RuleDefError ? `invalid rule json: ${err.detail}` : (err as Error).message,
  );
}

const validateRule: RuleHandler = async (rules, req, reply) => {
  const text = rawBody(req);
  const body = validationBody(text);
  return sendJson(
    reply,
    200,
    rethrowing(() => rules.validate(text, body), validationVerdict),
  );
};

const allStatuses: RuleHandler = async (rules, _req, reply) => {
  await rules.whenRestored();
  return sendJsonText(reply, 200, rules.statusAllJson());
};

const cpuUsage: RuleHandler = async (rules, _req, reply) => {
  await rules.whenRestored();
  return sendJson(reply, 200, rules.cpuUsage());
};

const matchTags: RuleHandler = async (rules, req, reply) => {
  await rules.whenRestored();
  const tags = decodeTags(await bodyText(req), true);
  return sendJson(reply, 200, rules.matchTags(tags));
};

// ---------------------------------------------------------------------------------------- one rule

const describeRule: RuleHandler = async (rules, req, reply) => {
  const id = await ruleIdOf(req, rules);
  requireRule(rules, id, `Describe rule error: Rule ${id} is not found.`);
  // the stored text as is (docs/rest-api.md §4.4)
  return reply.code(200).type('application/json').send(rules.describe(id));
};

const updateRule: RuleHandler = async (rules, req, reply) => {
  const id = await ruleIdOf(req, rules);
  await rethrowing(() => rules.update(id, rawBody(req)), asEddyError());
  return sendText(reply, 200, `Rule ${id} was updated successfully.`);
};

const deleteRule: RuleHandler = async (rules, req, reply) => {
  const id = await ruleIdOf(req, rules);
  requireRule(rules, id, `Delete rule error: ${id} is not found`);
  await rethrowing(() => rules.delete(id), asEddyError('Delete rule error'));
  return sendText(reply, 200, `Rule ${id} is dropped.`);
};

/** `POST /rules/{id}/start` and `/restart`: the same answer shapes, worded after the action. */
function startOrRestart(action: 'start' | 'restart'): RuleHandler {
  return async (rules, req, reply) => {
    const id = await ruleIdOf(req, rules);
    const prefix = `${action} rule error`;
    requireRule(rules, id, `${prefix}: Rule ${id} is not found in registry, please check if it is created`);
    await rethrowing(() => rules[action](id), asEddyError(prefix, ErrorCode.Rule));
    return sendText(reply, 200, `Rule ${id} was ${action}ed`);
  };
}

const stopRule: RuleHandler = async (rules, req, reply) => {
  const id = await ruleIdOf(req, rules);
  requireRule(rules, id, `stop rule error: Rule ${id} was not found.`);
  await rethrowing(() => rules.stop(id), asEddyError('stop rule error', ErrorCode.Rule));
  return sendText(reply, 200, `Rule ${id} was stopped.`);
};

/** The object at `name` in `obj`, or an empty object when it is anything else. */
function objectField(obj: Record<string, unknown>, name: string): Record<string, unknown> {
  const v = field(obj, name);
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

// docs/rest-api.md §16.6: type 1 moves a running rule's source to another offset
const resetState: RuleHandler = async (rules, req, reply) => {
  const id = await ruleIdOf(req, rules);
  const body = readJsonObject(req, 'decode body error: ');
  const type = field(body, 'type');
  if (type !== 1) throw new EddyError(ErrorCode.Undefined, `unknown stateType:${typeof type === 'number' ? type : 0}`);
  requireRule(rules, id, `Rule ${id} is not found in registry`);
  const params = objectField(body, 'params');
  const streamName = field(params, 'streamName');
  const input = objectField(params, 'input') as ValueObject;
  await rethrowing(() => rules.resetOffset(id, typeof streamName === 'string' ? streamName : '', input), asEddyError());
  return sendText(reply, 200, 'success');
};

const ruleStatus: RuleHandler = async (rules, req, reply) => {
  const id = await ruleIdOf(req, rules);
  requireRule(rules, id, `get rule status error: Rule ${id} is not found`);
  const status = rules.status(id);
  if (status.status !== 'running') return sendJson(reply, 200, status);
  return reply
    .code(200)
    .type('application/json')
    .send(JSON.stringify(status, null, 2));
};

const ruleTopology: RuleHandler = async (rules, req, reply) => {
  const id = await ruleIdOf(req, rules);
  requireRule(rules, id, `get rule topo error: Rule ${id} is not found`);
  return sendJson(
    reply,
    200,
    rethrowing(() => rules.topo(id), asEddyError('get rule topo error', ErrorCode.General)),
  );
};

const explainRule: RuleHandler = async (rules, req, reply) => {
  const id = await ruleIdOf(req, rules);
  requireRule(rules, id, `explain rules error: Rule ${id} is not found.`);
  return sendText(
    reply,
    200,
    rethrowing(() => rules.explain(id), asEddyError('explain rules error', ErrorCode.Plan)),
  );
};

// ---------------------------------------------------------------------------------------- tags

/** `PUT`, `PATCH` and `DELETE /rules/{id}/tags`: decode the tag list, then `apply` it to the rule. */
function changeTags(apply: (rules: RuleService, id: string, tags: string[]) => Promise<void>): RuleHandler {
  return async (rules, req, reply) => {
    const id = await ruleIdOf(req, rules);
    const tags = decodeTags(await bodyText(req), false);
    requireRule(rules, id, `Get rule error: Rule ${id} is not found.`);
    await rethrowing(() => apply(rules, id, tags), asEddyError());
    return sendEmpty(reply, 200);
  };
}

export function registerRuleRoutes(http: FastifyInstance, rules: RuleService): void {
  const route = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, handler: RuleHandler): void => {
    http.route({ method, url, handler: (req, reply) => handler(rules, req, reply) });
  };
  route('POST', '/rules', createRule);
  route('GET', '/rules', listRules);
  route('POST', '/rules/validate', validateRule);
  route('GET', '/rules/status/all', allStatuses);
  route('GET', '/rules/usage/cpu', cpuUsage);
  route('GET', '/rules/tags/match', matchTags);
  route('GET', '/rules/:id', describeRule);
  route('PUT', '/rules/:id', updateRule);
  route('DELETE', '/rules/:id', deleteRule);
  route('POST', '/rules/:id/start', startOrRestart('start'));
  route('POST', '/rules/:id/restart', startOrRestart('restart'));
  route('POST', '/rules/:id/stop', stopRule);
  route('PUT', '/rules/:id/reset_state', resetState);
  route('GET', '/rules/:id/status', ruleStatus);
  route('GET', '/rules/:id/topo', ruleTopology);
  route('GET', '/rules/:id/explain', explainRule);
  route(
    'PUT',
    '/rules/:id/tags',
    changeTags((rules, id, tags) => rules.setTags(id, tags)),
  );
  route(
    'PATCH',
    '/rules/:id/tags',
    changeTags((rules, id, tags) => rules.addTags(id, tags)),
  );
  route(
    'DELETE',
    '/rules/:id/tags',
    changeTags((rules, id, tags) => rules.removeTags(id, tags)),
  );
}
