/**
 * What eKuiper's UI builds its function and operator palettes from (docs/rest-api.md §16.13): `GET /metadata/functions`
 * and `GET /metadata/operators`, in the shape of eKuiper's `etc/functions/*.json` and `etc/ops/*.json` files but
 * generated from Eddy's own registries — every SQL function the function registry holds (built-ins, plugin,
 * WebAssembly, script and service functions), and every graph-rule operator the graph planner accepts with its
 * input and output kinds (plan/graph-validate.ts). Also `GET|POST /stop` (docs/rest-api.md §16.10).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { FunctionRegistry } from '../functions/registry.js';
import { createBuiltinRegistry } from '../functions/index.js';
import { OP_IO, ioDescription } from '../plan/graph-validate.js';
import { sendJson, sendText } from './http.js';

const same = (text: string) => ({ en_US: text, zh_CN: text });

const ABOUT = (description: string) => ({
  trial: false,
  author: { name: 'Eddy', email: '', company: '', website: '' },
  helpUrl: same('https://ekuiper.org/docs/en/v1.14/sqls/functions/overview.html'),
  description: same(description),
});

/** Where the functions that are not built-ins come from: the plugin (native or wasm) providing each. */
export interface FunctionOrigins {
  udf(name: string): { plugin: string } | undefined;
}

function functionEntry(name: string, kind: string) {
  const aggregate = kind === 'aggregate';
  return {
    name,
    example: `${name}(col1)`,
    ...(aggregate ? { aggregate: true } : {}),
    hint: same(`${kind} function ${name}`),
    args: [],
    return: { type: 'any', hint: same('result') },
    node: { category: 'function', icon: 'iconPath', label: same(name) },
  };
}

/** The function groups: `internal` (built-ins), one per plugin, and `external` (scripts, services, portables). */
export function functionCatalog(functions: FunctionRegistry, origins: FunctionOrigins): unknown[] {
  const builtins = createBuiltinRegistry();
  const groups = new Map<string, Array<ReturnType<typeof functionEntry>>>([['internal', []]]);
  const add = (group: string, entry: ReturnType<typeof functionEntry>) =>
    groups.set(group, [...(groups.get(group) ?? []), entry]);
  for (const name of functions.names().sort()) {
    const def = functions.get(name);
    if (!def) continue;
    const entry = functionEntry(def.name, def.kind);
    if (builtins.get(name) === def || builtins.has(name)) add('internal', entry);
    else add(origins.udf(name)?.plugin ?? 'external', entry);
  }
  return [...groups].map(([name, fns]) => ({
    about: ABOUT(
      name === 'internal'
        ? 'Built-in SQL functions'
        : name === 'external'
          ? 'JavaScript, external service and portable plugin functions'
          : `Functions of plugin ${name}`,
    ),
    name,
    functions: fns,
  }));
}

/** Graph-rule operators with their input and output kinds. */
export function operatorCatalog(): unknown[] {
  return Object.entries(OP_IO).map(([name, [input, output]]) => ({
    name,
    about: ABOUT(`graph rule operator ${name}`),
    properties: [],
    node: {
      display: true,
      category: 'op',
      input: ioDescription(input),
      output: ioDescription(output),
      icon: 'iconPath',
      label: { en: name, zh: name },
    },
  }));
}

function loopback(req: FastifyRequest): boolean {
  const ip = req.socket.remoteAddress ?? '';
  return ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';
}

export function registerCatalogRoutes(
  http: FastifyInstance,
  opts: {
    functions: FunctionRegistry;
    origins: FunctionOrigins;
    authentication: boolean;
    requestExit?: (code: number) => void;
  },
): void {
  http.get('/metadata/functions', async (_req, reply) =>
    sendJson(reply, 200, functionCatalog(opts.functions, opts.origins)),
  );
  http.get('/metadata/operators', async (_req, reply) => sendJson(reply, 200, operatorCatalog()));
  // eKuiper leaves /stop open without authentication (docs/compatibility.md D25): here it needs the token, or a
  // request from the loopback interface
  const stop = async (req: FastifyRequest, reply: Parameters<typeof sendText>[0]) => {
    if (!opts.authentication && !loopback(req))
      throw new EddyError(
        ErrorCode.Undefined,
        'stop is accepted only from the loopback interface while authentication is off',
        403,
      );
    const exit = opts.requestExit;
    if (exit) reply.raw.once('finish', () => setTimeout(() => exit(0), 200).unref());
    return sendText(reply, 200, 'stop success');
  };
  http.get('/stop', stop);
  http.post('/stop', stop);
}
