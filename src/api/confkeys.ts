/**
 * Config-key endpoints (rest-api.md §5, §16.11, §16.12): `GET /metadata/{sources|sinks|connections}/yaml/{name}`,
 * `PUT` and `DELETE /metadata/{sources|sinks|connections}/{name}/confKeys/{confKey}`. Secrets are masked on read and
 * restored when a masked value is written back.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from './errors.js';
import { rawBody, sendEmpty, sendJson } from './http.js';
import type { Connectors } from '../connectors/index.js';
import type { ConfKind } from '../connectors/confkeys.js';
import type { Props } from '../runtime/contracts.js';
import { maskSecrets, restoreSecrets, sortKeysDeep } from '../connectors/secrets.js';

const KINDS: readonly ConfKind[] = ['sources', 'sinks', 'connections'];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether config keys of `kind`/`name` can be read or deleted (a type Eddy knows, or one with stored keys). */
export function isKnownType(c: Connectors, kind: ConfKind, name: string): boolean {
  if (c.confKeys.hasUser(kind, name) || c.confKeys.hasDefaults(kind, name)) return true;
  if (kind === 'sources') return c.registry.sourceTypes().includes(name);
  if (kind === 'sinks') return c.registry.sinkTypes().includes(name);
  return name === 'mqtt';
}

function notFound(kind: ConfKind, name: string): EddyError {
  return new EddyError(ErrorCode.NotFound, `This plugin was not found:${kind}.${name}`);
}

/**
 * The properties of a PUT body: the object itself, or — the brief's shape — `{<confKey>: {...}}` unwrapped when it
 * is the only member.
 */
function bodyProps(req: FastifyRequest, name: string, confKey: string): Props {
  const text = rawBody(req);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    const msg = text.trim() === '' ? 'EOF' : (e as Error).message;
    throw new EddyError(ErrorCode.ConfKey, `Type conversion failed:${name}.${msg}`);
  }
  if (!isObject(v)) {
    throw new EddyError(ErrorCode.ConfKey, `Type conversion failed:${name}.the body must be a JSON object`);
  }
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === confKey && isObject(v[confKey])) return v[confKey] as Props;
  return v as Props;
}

export function registerConfKeyRoutes(http: FastifyInstance, connectors: Connectors): void {
  for (const kind of KINDS) {
    http.get<{ Params: { name: string } }>(`/metadata/${kind}/yaml/:name`, async (req, reply) => {
      const { name } = req.params;
      if (!isKnownType(connectors, kind, name)) throw notFound(kind, name);
      return sendJson(reply, 200, sortKeysDeep(maskSecrets(connectors.confKeys.merged(kind, name))));
    });

    http.put<{ Params: { name: string; confKey: string } }>(`/metadata/${kind}/:name/confKeys/:confKey`, async (req, reply) => {
      const { name, confKey } = req.params;
      const props = bodyProps(req, name, confKey);
      const stored = connectors.confKeys.user(kind, name)[confKey];
      if (stored) restoreSecrets(props, stored);
      const validate = connectors.registry.propsValidator(kind, name);
      if (validate) {
        try {
          validate(props);
        } catch (err) {
          throw new EddyError(ErrorCode.ConfKey, err instanceof Error ? err.message : String(err));
        }
      }
      await connectors.confKeys.put(kind, name, confKey, props);
      return sendEmpty(reply, 200);
    });

    http.delete<{ Params: { name: string; confKey: string } }>(`/metadata/${kind}/:name/confKeys/:confKey`, async (req, reply) => {
      const { name, confKey } = req.params;
      if (!isKnownType(connectors, kind, name)) throw notFound(kind, name);
      await connectors.confKeys.delete(kind, name, confKey);
      return sendEmpty(reply, 200);
    });
  }
}
