/**
 * `/plugins/...` (docs/rest-api.md §10): plugin management with eKuiper's statuses and texts. Native plugins are ES
 * modules (extensions/plugins-native.ts, docs/plugins.md); look-ups of missing ones 404 with code 1002
 * (docs/compatibility.md D1). Portable plugins run as child processes (extensions/plugins-portable.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { asEddyError, field, readJson, rethrowing, sendJson, sendText } from './http.js';
import { EDDY_VERSION } from './root.js';
import { NATIVE_TYPES, prebuiltPlugins, type PluginRequest } from '../extensions/plugins.js';
import type { NativeManager } from '../extensions/plugins-native.js';
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
  opts: {
    pluginHosts: string;
    portables: PortableManager;
    natives: NativeManager;
    /** `?stop=1`: the server exits after answering (docs/rest-api.md §10.2) */
    requestExit?: (code: number) => void;
  },
): void {
  const version = EDDY_VERSION.split('-')[0];
  const natives = opts.natives;
  const stopAfter = (req: FastifyRequest, reply: FastifyReply): boolean => {
    const stop = (req.query as Record<string, unknown> | undefined)?.stop === '1' && opts.requestExit !== undefined;
    if (stop) {
      const exit = opts.requestExit!;
      reply.raw.once('finish', () => setTimeout(() => exit(100), 1000).unref());
    }
    return stop;
  };

  for (const type of NATIVE_TYPES) {
    const bodyPrefix = `Invalid body: Error decoding the ${type} plugin json: `;
    http.get(`/plugins/${type}`, async (_req, reply) => sendJson(reply, 200, natives.names(type)));

    http.post(`/plugins/${type}`, async (req, reply) => {
      const body = readPluginRequest(req, bodyPrefix, 'plugin.IOPlugin');
      await rethrowing(() => natives.create(type, body), asEddyError(`${type} plugins create command error`));
      return sendText(reply, 201, `${type} plugin ${body.name.trim()} is created`);
    });

    http.get(`/plugins/${type}/prebuild`, async (_req, reply) =>
      sendJson(reply, 200, prebuiltPlugins(type, opts.pluginHosts, version)),
    );

    http.get<NameParams>(`/plugins/${type}/:name`, async (req, reply) => {
      const info = natives.describe(type, req.params.name);
      if (!info) throw new EddyError(ErrorCode.NotFound, `describe ${type} plugin ${req.params.name} error: not found`);
      return sendJson(reply, 200, info);
    });

    http.delete<NameParams>(`/plugins/${type}/:name`, async (req, reply) => {
      const { name } = req.params;
      await rethrowing(() => natives.delete(type, name), asEddyError(`delete ${type} plugin ${name} error`));
      const stop = stopAfter(req, reply);
      return sendText(
        reply,
        200,
        stop
          ? `${type} plugin ${name} is deleted and Eddy will be stopped`
          : `${type} plugin ${name} is deleted and Eddy must restart for the change to take effect.`,
      );
    });

    http.put<NameParams>(`/plugins/${type}/:name`, async (req, reply) => {
      const body = readPluginRequest(req, bodyPrefix, 'plugin.IOPlugin');
      const { name } = req.params;
      await rethrowing(
        () => natives.update(type, name, body),
        asEddyError(`update ${type} plugin ${name} error, cannot delete old version`),
      );
      return sendText(reply, 200, `plugin ${name} is updated and Eddy must restart for the change to take effect.`);
    });
  }

  http.post<NameParams>('/plugins/functions/:name/register', async (req, reply) => {
    const { name } = req.params;
    const body = readPluginRequest(req, `Invalid body: Error decoding the function list json: `, 'server.fileContent');
    if (body.functions.length === 0) {
      throw new EddyError(
        ErrorCode.Undefined,
        `function plugins ${name} regiser functions error: property 'functions' must not be empty`,
      );
    }
    await rethrowing(
      () => natives.registerFunctions(name, body.functions),
      asEddyError(`register functions plugin ${name} error`),
    );
    return sendText(reply, 200, `function plugin ${name} function list is registered`);
  });

  // WebAssembly function plugins (eKuiper 1.14 with its wasm build tag; docs/rest-api.md §10.6)
  const wasmPrefix = 'Invalid body: Error decoding the wasm plugin json: ';
  http.get('/plugins/wasm', async (_req, reply) => sendJson(reply, 200, natives.names('wasm')));
  http.post('/plugins/wasm', async (req, reply) => {
    const body = readPluginRequest(req, wasmPrefix, 'plugin.IOPlugin');
    await rethrowing(() => natives.create('wasm', body), asEddyError('wasm plugin create command error'));
    return sendText(reply, 201, `wasm plugin ${body.name.trim()} is created`);
  });
  http.get<NameParams>('/plugins/wasm/:name', async (req, reply) => {
    const info = natives.describe('wasm', req.params.name);
    if (!info) throw new EddyError(ErrorCode.NotFound, `describe wasm plugin ${req.params.name} error: not found`);
    return sendJson(reply, 200, info);
  });
  http.delete<NameParams>('/plugins/wasm/:name', async (req, reply) => {
    const { name } = req.params;
    await rethrowing(() => natives.delete('wasm', name), asEddyError(`delete wasm plugin ${name} error`));
    const stop = stopAfter(req, reply);
    return sendText(
      reply,
      200,
      stop
        ? `wasm plugin ${name} is deleted and Eddy will be stopped`
        : `wasm plugin ${name} is deleted and Eddy must restart for the change to take effect.`,
    );
  });

  http.get('/plugins/udfs', async (_req, reply) => sendJson(reply, 200, natives.udfs()));
  http.get<NameParams>('/plugins/udfs/:name', async (req, reply) => {
    const u = natives.udf(req.params.name);
    if (!u) throw new EddyError(ErrorCode.NotFound, `describe function ${req.params.name} error: not found`);
    return sendJson(reply, 200, u);
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
