/**
 * Optional JWT authentication (`basic.authentication: true`, docs/rest-api.md §16.9): every matched route except `/` and
 * `/ping` needs `Authorization: <raw JWT>` signed RS256 by a key whose PEM file in `etc/mgmt/` is named by the
 * token's `iss` claim, with `eKuiper` in `aud`. Failures are 401 with a plain-text reason.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PlainTextFailure, rethrowing } from './http.js';

class AuthError extends Error {}

function b64urlJson(part: string): Record<string, unknown> {
  const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new AuthError('validate token error: malformed token');
  return v as Record<string, unknown>;
}

/** Finds `etc/mgmt/<iss>` case-insensitively and loads it as a public key. */
function issuerKey(mgmtDir: string, iss: string): KeyObject {
  if (!existsSync(mgmtDir) || iss.includes('/') || iss.includes('\\')) {
    throw new AuthError(`validate token error: cannot find the public key of issuer ${iss}`);
  }
  const file = readdirSync(mgmtDir).find((f) => f.toLowerCase() === iss.toLowerCase());
  if (!file) throw new AuthError(`validate token error: cannot find the public key of issuer ${iss}`);
  return createPublicKey(readFileSync(join(mgmtDir, file)));
}

/** Verifies a token and returns its claims; throws AuthError with the 401 text. */
export function verifyToken(token: string, mgmtDir: string, nowSeconds = Date.now() / 1000): Record<string, unknown> {
  if (!token) throw new AuthError('missing_token');
  const parts = token.split('.');
  if (parts.length !== 3) throw new AuthError('validate token error: token contains an invalid number of segments');
  const malformed = (e: unknown): unknown => (e instanceof AuthError ? e : new AuthError('validate token error: malformed token'));
  const header = rethrowing(() => b64urlJson(parts[0]), malformed);
  const claims = rethrowing(() => b64urlJson(parts[1]), malformed);
  if (header.alg !== 'RS256') throw new AuthError(`validate token error: unexpected signing method: ${String(header.alg)}`);
  const iss = typeof claims.iss === 'string' ? claims.iss : '';
  const key = issuerKey(mgmtDir, iss);
  const ok = verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2], 'base64url'));
  if (!ok) throw new AuthError('validate token error: crypto/rsa: verification error');
  const num = (k: string) => (typeof claims[k] === 'number' ? (claims[k] as number) : undefined);
  const exp = num('exp');
  if (exp !== undefined && nowSeconds > exp) throw new AuthError('validate token error: token is expired');
  const nbf = num('nbf');
  if (nbf !== undefined && nowSeconds < nbf) throw new AuthError('validate token error: token is not valid yet');
  const iat = num('iat');
  if (iat !== undefined && nowSeconds + 1 < iat) throw new AuthError('validate token error: token used before issued');
  const aud = claims.aud;
  const auds = Array.isArray(aud) ? aud.map(String) : typeof aud === 'string' ? [aud] : [];
  if (!auds.includes('eKuiper')) throw new AuthError(`audience field should contain eKuiper, but got [${auds.join(' ')}]`);
  return claims;
}

/** A failed check: 401 with the reason as plain text. */
function unauthorized(e: unknown): PlainTextFailure {
  const msg = e instanceof AuthError ? e.message : `validate token error: ${(e as Error).message}`;
  return new PlainTextFailure(401, `${msg}\n`, { 'X-Content-Type-Options': 'nosniff' });
}

/** Installs the check on every matched route but `/` and `/ping`. */
export function registerAuth(http: FastifyInstance, mgmtDir: string): void {
  http.addHook('preHandler', async (req) => {
    if (req.is404 || req.method === 'OPTIONS') return;
    const path = req.url.split('?')[0];
    if (path === '/' || path === '/ping') return;
    rethrowing(() => verifyToken(String(req.headers.authorization ?? ''), mgmtDir), unauthorized);
  });
}
