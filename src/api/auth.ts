/**
 * Optional JWT authentication (`basic.authentication: true`, docs/rest-api.md §16.9): every matched route except `/` and
 * `/ping` needs `Authorization: <raw JWT>` signed RS256 by a key whose PEM file in `etc/mgmt/` is named by the
 * token's `iss` claim, with `eKuiper` in `aud` and an `exp` claim (src/core/jwt.ts). Failures are 401 with a plain-text reason.
 */
import type { FastifyInstance } from 'fastify';
import { AuthError, verifyToken } from '../core/jwt.js';

export { verifyToken } from '../core/jwt.js';

/** Installs the check on every matched route but `/`, `/ping` and the console's static files. */
export function registerAuth(http: FastifyInstance, mgmtDir: string): void {
  http.addHook('preHandler', async (req, reply) => {
    if (req.is404 || req.method === 'OPTIONS') return;
    const path = req.url.split('?')[0];
    // the console's static files hold no data; its API calls are checked like any other
    if (path === '/' || path === '/ping' || path === '/console' || path.startsWith('/console/')) return;
    try {
      verifyToken(String(req.headers.authorization ?? ''), mgmtDir);
    } catch (e) {
      const msg = e instanceof AuthError ? e.message : `validate token error: ${(e as Error).message}`;
      return reply.code(401).type('text/plain; charset=utf-8').header('X-Content-Type-Options', 'nosniff').send(`${msg}\n`);
    }
  });
}
