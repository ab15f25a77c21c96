/**
 * `/services` and `/services/functions` (docs/rest-api.md §11.2): external services and their SQL functions, with
 * eKuiper's texts; every missing resource is 404 with code 1002 (docs/compatibility.md D1). Function list = names (docs/compatibility.md K20), function describe
 * = the brief's keys plus eKuiper's (docs/compatibility.md K21).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { field, readJson, sendJson, sendText } from './http.js';
import type { ServiceManager } from '../extensions/services.js';

type NameParams = { Params: { name: string } };

// eKuiper's decoding-error prefix has a literal `%s` (docs/rest-api.md §11.2)
const BODY_PREFIX = 'Invalid body: Error decoding the %s service request payload: ';

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v;
}

/** `{name, file}` decoded the way Go's decoder fills eKuiper's struct (case-insensitive keys, typed strings). */
function readRequest(req: FastifyRequest): { name: string; file: string } {
  const body = readJson(req, BODY_PREFIX);
  const out = { name: '', file: '' };
  if (body === null) return out;
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new EddyError(
      ErrorCode.Undefined,
      `${BODY_PREFIX}json: cannot unmarshal ${jsonKind(body)} into Go value of type service.ServiceCreationRequest`,
    );
  }
  for (const key of ['name', 'file'] as const) {
    const v = field(body as Record<string, unknown>, key);
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') {
      throw new EddyError(
        ErrorCode.Undefined,
        `${BODY_PREFIX}json: cannot unmarshal ${jsonKind(v)} into Go struct field ServiceCreationRequest.${key} of type string`,
      );
    }
    out[key] = v;
  }
  return out;
}

export function registerServiceRoutes(http: FastifyInstance, services: ServiceManager): void {
  http.get('/services', async (_req, reply) => sendJson(reply, 200, services.names()));

  http.post('/services', async (req, reply) => {
    const { name, file } = readRequest(req);
    await services.create(name, file);
    return sendText(reply, 201, `service ${name} is created`);
  });

  http.get('/services/functions', async (_req, reply) => sendJson(reply, 200, services.functionNames()));

  http.get<NameParams>('/services/functions/:name', async (req, reply) =>
    sendJson(reply, 200, services.describeFunction(req.params.name)),
  );

  http.get<NameParams>('/services/:name', async (req, reply) =>
    sendJson(reply, 200, services.describe(req.params.name)),
  );

  http.put<NameParams>('/services/:name', async (req, reply) => {
    const { file } = readRequest(req);
    const { name } = req.params;
    await services.update(name, file);
    return sendText(reply, 200, `service ${name} is updated`);
  });

  http.delete<NameParams>('/services/:name', async (req, reply) => {
    const { name } = req.params;
    await services.delete(name);
    return sendText(reply, 200, `service ${name} is deleted`);
  });
}
