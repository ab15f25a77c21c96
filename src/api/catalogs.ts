/**
 * What eKuiper's UI builds its function and operator palettes from (docs/rest-api.md §16.13): `GET /metadata/functions`
 * and `GET /metadata/operators`, generated from Eddy's own registries (functions/catalog.ts, the operators of
 * plan/graph-validate.ts) and handed in by the composition root. Also `GET|POST /stop` (docs/rest-api.md §16.10).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { sendJson, sendText } from './http.js';

function loopback(req: FastifyRequest): boolean {
  const ip = req.socket.remoteAddress ?? '';
  return ip === '127.0.0.1' || ip === '::1' || ip === '::ffff:127.0.0.1';
}

export function registerCatalogRoutes(
  http: FastifyInstance,
  opts: {
    functionCatalog: () => unknown[];
    operatorCatalog: () => unknown[];
    authentication: boolean;
    requestExit?: (code: number) => void;
  },
): void {
  http.get('/metadata/functions', async (_req, reply) => sendJson(reply, 200, opts.functionCatalog()));
  http.get('/metadata/operators', async (_req, reply) => sendJson(reply, 200, opts.operatorCatalog()));
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
