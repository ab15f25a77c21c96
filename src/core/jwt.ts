/**
 * Verification of the JWTs of `basic.authentication` (docs/rest-api.md §16.9), shared by the REST API and the data
 * server: RS256 signed by a key whose PEM file in `etc/mgmt/` is named by the token's `iss` claim, `eKuiper` in `aud`,
 * and an `exp` claim that has not passed.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A refused token; the message is the 401 text. */
export class AuthError extends Error {}

function b64urlJson(part: string): Record<string, unknown> {
  const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new AuthError('validate token error: malformed token');
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
  let header: Record<string, unknown>;
  let claims: Record<string, unknown>;
  try {
    header = b64urlJson(parts[0]);
    claims = b64urlJson(parts[1]);
  } catch (e) {
    if (e instanceof AuthError) throw e;
    throw new AuthError('validate token error: malformed token');
  }
  if (header.alg !== 'RS256')
    throw new AuthError(`validate token error: unexpected signing method: ${String(header.alg)}`);
  const iss = typeof claims.iss === 'string' ? claims.iss : '';
  const key = issuerKey(mgmtDir, iss);
  const ok = verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2], 'base64url'));
  if (!ok) throw new AuthError('validate token error: crypto/rsa: verification error');
  const num = (k: string) => (typeof claims[k] === 'number' ? (claims[k] as number) : undefined);
  const exp = num('exp');
  // a token that never expires cannot be revoked short of changing the key: refused (eKuiper accepts it)
  if (exp === undefined) throw new AuthError('validate token error: token has no expiry (exp claim)');
  if (nowSeconds > exp) throw new AuthError('validate token error: token is expired');
  const nbf = num('nbf');
  if (nbf !== undefined && nowSeconds < nbf) throw new AuthError('validate token error: token is not valid yet');
  const iat = num('iat');
  if (iat !== undefined && nowSeconds + 1 < iat) throw new AuthError('validate token error: token used before issued');
  const aud = claims.aud;
  const auds = Array.isArray(aud) ? aud.map(String) : typeof aud === 'string' ? [aud] : [];
  if (!auds.includes('eKuiper'))
    throw new AuthError(`audience field should contain eKuiper, but got [${auds.join(' ')}]`);
  return claims;
}
