/**
 * Optional JWT authentication (`basic.authentication: true`, docs/rest-api.md §16.9): every matched route except `/` and
 * `/ping` needs `Authorization: <raw JWT>` signed RS256 by a key whose PEM file in `etc/mgmt/` is named by the
 * token's `iss` claim, with `eKuiper` in `aud` and an `exp` claim (src/core/jwt.ts). Failures are 401 with a plain-text reason.
 */
import type { FastifyInstance } from 'fastify';
import { AuthError, verifyToken } from '../core/jwt.js';
import { PlainTextFailure, rethrowing } from './http.js';

export { verifyToken } from '../core/jwt.js';

/** A failed check: 401 with the reason as plain text. */
function unauthorized(e: unknown): PlainTextFailure {
  const msg = e instanceof AuthError ? e.message : `validate token error: ${(e as Error).message}`;
  return new PlainTextFailure(401, `${msg}\n`, { 'X-Content-Type-Options': 'nosniff' });
}

/** Installs the check on every matched route but `/`, `/ping` and the console's static files. */
export function registerAuth(http: FastifyInstance, mgmtDir: string): void {
  http.addHook('preHandler', async (req) => {
    if (req.is404 || req.method === 'OPTIONS') return;
    const path = req.url.split('?')[0];
    // the console's static files hold no data; its API calls are checked like any other
    if (path === '/' || path === '/ping' || path === '/console' || path.startsWith('/console/')) return;
    const header = String(req.headers.authorization ?? '');
    rethrowing(() => verifyToken(path === METRICS_PATH ? scrapeToken(header) : header, mgmtDir), unauthorized);
  });
}

const METRICS_PATH = '/metrics';
const BEARER = /^Bearer +/i;

/**
 * The token of a metrics scrape: the raw JWT as on every route, or `Bearer <JWT>`, the only form a Prometheus scrape
 * configuration can send (`authorization: {credentials: …}`).
 */
function scrapeToken(header: string): string {
  return header.replace(BEARER, '');
}

/**
 * The check of the metrics server of its own (`prometheusPort` ≠ `restPort`), which holds every rule's name: the
 * reason for a 401, or undefined when the scrape's token is valid.
 */
export function metricsAuth(mgmtDir: string): (authorization: string | undefined) => string | undefined {
  return (authorization) => {
    try {
      verifyToken(scrapeToken(authorization ?? ''), mgmtDir);
      return undefined;
    } catch (e) {
      return unauthorized(e).text;
    }
  };
}
