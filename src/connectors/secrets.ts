/**
 * Secret masking shared by the config-key endpoints, connection checks and rule describe (docs/rest-api.md §5.3):
 * `password`/`token` values read as `******`, URL passwords are masked inside the URL, and a masked value written
 * back is restored from what is stored so that GET → edit → PUT round-trips.
 */

export const MASK = '******';

function isSecretName(name: string): boolean {
  const l = name.toLowerCase();
  return l === 'password' || l === 'token';
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/** `scheme://user:pw@host/...` → the same URL with the password replaced by the mask; other strings unchanged. */
export function maskUrl(url: string): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#@]*)@/.exec(url);
  if (!m) return url;
  const userInfo = m[2];
  const colon = userInfo.indexOf(':');
  if (colon < 0) return url;
  return `${m[1]}${userInfo.slice(0, colon)}:${MASK}@${url.slice(m[0].length)}`;
}

function urlHasMaskedPassword(url: string): boolean {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#@]*)@/.exec(url);
  return !!m && m[1].includes(':') && m[1].slice(m[1].indexOf(':') + 1) === MASK;
}

/** A deep copy of `v` with every secret masked. */
export function maskSecrets<T>(v: T): T {
  if (Array.isArray(v)) return v.map((e) => maskSecrets(e)) as T;
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(v)) {
    if (isSecretName(k) && !Array.isArray(val) && !isPlainObject(val)) out[k] = MASK;
    else if (k.toLowerCase() === 'url' && typeof val === 'string') out[k] = maskUrl(val);
    else out[k] = maskSecrets(val);
  }
  return out as T;
}

/**
 * Replaces masked secrets of `incoming` (in place) by the values of `stored` at the same place: a `password`/`token`
 * equal to the mask takes the stored value; a `url` whose password is the mask takes the stored url.
 */
export function restoreSecrets(incoming: unknown, stored: unknown): void {
  if (Array.isArray(incoming) && Array.isArray(stored)) {
    for (let i = 0; i < incoming.length && i < stored.length; i++) {
      if (isPlainObject(incoming[i]) || Array.isArray(incoming[i])) restoreSecrets(incoming[i], stored[i]);
    }
    return;
  }
  if (!isPlainObject(incoming) || !isPlainObject(stored)) return;
  for (const [k, val] of Object.entries(incoming)) {
    if (!(k in stored)) continue;
    const old = stored[k];
    if (isSecretName(k) && val === MASK && old !== undefined && old !== MASK) incoming[k] = old;
    else if (
      k.toLowerCase() === 'url' &&
      typeof val === 'string' &&
      urlHasMaskedPassword(val) &&
      typeof old === 'string'
    ) {
      incoming[k] = old;
    } else if (isPlainObject(val) || Array.isArray(val)) restoreSecrets(val, old);
  }
}

/** A deep copy with object keys in ascending order at every level (Go's map encoding order). */
export function sortKeysDeep<T>(v: T): T {
  if (Array.isArray(v)) return v.map((e) => sortKeysDeep(e)) as T;
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeysDeep(v[k]);
  return out as T;
}
