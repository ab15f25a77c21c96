/**
 * `/plugins/...` (docs/rest-api.md §10): plugin management with eKuiper's statuses and texts. Native plugins cannot be
 * installed (extensions/plugins.ts): create bodies are decoded and checked, then refused with a 400 saying why; their
 * lists are empty and look-ups 404 with code 1002 (docs/compatibility.md D1). Portable plugins are installed and run
 * (extensions/plugins-portable.ts).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { asEddyError, field, readJson, rethrowing, sendJson, sendText } from './http.js';
import { EDDY_VERSION } from './root.js';
import { NATIVE_TYPES, prebuiltPlugins, refuseInstall, type PluginRequest } from '../extensions/plugins.js';
import type { PortableManager } from '../extensions/plugins-portable.js';

type NameParams = { Params: { name: string } };

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v;
}

/** The plugin body decoded the way Go fills eKuiper's struct: case-insensitive keys, typed fields. */
function readPluginRequest(req: FastifyRequest, prefix: string, struct: string): PluginRequest {
  const body = readJson(req, prefix);
  const out: PluginRequest = { name: '', file: '', shellParas: [], functions: [] };
  if (body === null) return out;
  const fail = (v: unknown, key: string, goType: string) =>
    new EddyError(
      ErrorCode.Undefined,
      `${prefix}json: cannot unmarshal ${jsonKind(v)} into Go struct field ${struct.split('.').pop()}.${key} of type ${goType}`,
    );
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new EddyError(
      ErrorCode.Undefined,
      `${prefix}json: cannot unmarshal ${jsonKind(body)} into Go value of type ${struct}`,
    );
  }
  const obj = body as Record<string, unknown>;
  for (const key of ['name', 'file'] as const) {
    const v = field(obj, key);
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') throw fail(v, key, 'string');
    out[key] = v;
  }
  for (const key of ['shellParas', 'functions'] as const) {
    const v = field(obj, key);
    if (v === undefined || v === null) continue;
    if (!Array.isArray(v)) throw fail(v, key, '[]string');
    for (const x of v) if (typeof x !== 'string') throw fail(x, key, 'string');
    out[key] = v as string[];
  }
  return out;
}

export function registerPluginRoutes(
  http: FastifyInstance,
  opts: { pluginHosts: string; portables: PortableManager },
): void {
  const version = EDDY_VERSION.split('-')[0];

  for (const type of NATIVE_TYPES) {
    const bodyPrefix = `Invalid body: Error decoding the ${type} plugin json: `;
    http.get(`/plugins/${type}`, async (_req, reply) => sendJson(reply, 200, []));

    http.post(`/plugins/${type}`, async (req) => {
      const body = readPluginRequest(req, bodyPrefix, 'plugin.IOPlugin');
      refuseInstall(body, `${type} plugins create command error`);
    });

    http.get(`/plugins/${type}/prebuild`, async (_req, reply) =>
      sendJson(reply, 200, prebuiltPlugins(type, opts.pluginHosts, version)),
    );

    http.get<NameParams>(`/plugins/${type}/:name`, async (req) => {
      throw new EddyError(ErrorCode.NotFound, `describe ${type} plugin ${req.params.name} error: not found`);
    });

    http.delete<NameParams>(`/plugins/${type}/:name`, async (req) => {
      const { name } = req.params;
      throw new EddyError(ErrorCode.NotFound, `delete ${type} plugin ${name} error: invalid name ${name}: not exist`);
    });

    http.put<NameParams>(`/plugins/${type}/:name`, async (req) => {
      readPluginRequest(req, bodyPrefix, 'plugin.IOPlugin');
      const { name } = req.params;
      throw new EddyError(
        ErrorCode.NotFound,
        `update ${type} plugin ${name} error, cannot delete old version: invalid name ${name}: not exist`,
      );
    });
  }

  http.post<NameParams>('/plugins/functions/:name/register', async (req) => {
    const { name } = req.params;
    const body = readPluginRequest(req, `Invalid body: Error decoding the function list json: `, 'server.fileContent');
    if (body.functions.length === 0) {
      throw new EddyError(
        ErrorCode.Undefined,
        `function plugins ${name} regiser functions error: property 'functions' must not be empty`,
      );
    }
    throw new EddyError(ErrorCode.NotFound, `register functions plugin ${name} error: not found`);
  });

  http.get('/plugins/udfs', async (_req, reply) => sendJson(reply, 200, []));
  http.get<NameParams>('/plugins/udfs/:name', async (req) => {
    throw new EddyError(ErrorCode.NotFound, `describe function ${req.params.name} error: not found`);
  });

  const portables = opts.portables;
  const portablePrefix = 'Invalid body: Error decoding the portable plugin json: ';
  // list: names (docs/compatibility.md K18); describe: the descriptor object (docs/compatibility.md K19)
  http.get('/plugins/portables', async (_req, reply) => sendJson(reply, 200, portables.names()));
  http.post('/plugins/portables', async (req, reply) => {
    const body = readPluginRequest(req, portablePrefix, 'plugin.IOPlugin');
    await rethrowing(() => portables.create(body), asEddyError('portable plugin create command error'));
    return sendText(reply, 201, `portable plugin ${body.name.trim()} is created`);
  });
  http.get<NameParams>('/plugins/portables/:name', async (req, reply) => {
    const info = portables.describe(req.params.name);
    if (!info) throw new EddyError(ErrorCode.NotFound, `describe portable plugin ${req.params.name} error: not found`);
    return sendJson(reply, 200, info);
  });
  http.delete<NameParams>('/plugins/portables/:name', async (req, reply) => {
    const { name } = req.params;
    await rethrowing(() => portables.delete(name), asEddyError(`delete portable plugin ${name} error`));
    return sendText(reply, 200, `portable plugin ${name} is deleted`);
  });
  // eKuiper ignores the failure to delete the old version, so PUT also creates
  http.put<NameParams>('/plugins/portables/:name', async (req, reply) => {
    const body = readPluginRequest(req, portablePrefix, 'plugin.IOPlugin');
    await rethrowing(
      () => portables.update(req.params.name, body),
      asEddyError('portable plugin update command error'),
    );
    return sendText(reply, 200, `portable plugin ${body.name.trim()} is updated`);
  });
}
