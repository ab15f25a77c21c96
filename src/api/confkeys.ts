/**
 * Config-key endpoints (docs/rest-api.md §5, §16.11, §16.12): `GET /metadata/{sources|sinks|connections}/yaml/{name}`,
 * `PUT` and `DELETE /metadata/{sources|sinks|connections}/{name}/confKeys/{confKey}`. Secrets are masked on read and
 * restored when a masked value is written back. Also the UI metadata (docs/rest-api.md §16.13: `/metadata/sources[?kind=]`,
 * `/metadata/sinks`, `/metadata/connections` and their `/{name}`) and the config-key overviews
 * `/metadata/resources` and `/metadata/resource?sourceType=` (docs/rest-api.md §16.14, docs/rest-api.md §16.15; masked, docs/compatibility.md D23).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { rawBody, restated, rethrowing, sendEmpty, sendJson } from './http.js';
import type { Connectors } from '../connectors/index.js';
import type { ConfKind } from '../connectors/confkeys.js';
import type { Props } from '../contracts/index.js';
import { maskSecrets, restoreSecrets, sortKeysDeep } from '../connectors/secrets.js';
import { isRecord } from '../core/fields.js';

const KINDS: readonly ConfKind[] = ['sources', 'sinks', 'connections'];

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
  const v: unknown = rethrowing(
    () => JSON.parse(text),
    (e) =>
      new EddyError(
        ErrorCode.ConfKey,
        `Type conversion failed:${name}.${text.trim() === '' ? 'EOF' : (e as Error).message}`,
      ),
  );
  if (!isRecord(v)) {
    throw new EddyError(ErrorCode.ConfKey, `Type conversion failed:${name}.the body must be a JSON object`);
  }
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === confKey && isRecord(v[confKey])) return v[confKey] as Props;
  return v as Props;
}

function sortedNames(names: Iterable<string>): string[] {
  return [...new Set(names)].sort();
}

function registerMetadataRoutes(http: FastifyInstance, c: Connectors): void {
  const pluginNotFound = (name: string): EddyError =>
    new EddyError(ErrorCode.NotFound, `This plugin was not found:${name}`);

  http.get<{ Querystring: { kind?: string } }>('/metadata/sources', async (req, reply) => {
    return sendJson(reply, 200, c.registry.sourceList((req.query.kind ?? '').toLowerCase()));
  });
  http.get<{ Params: { name: string } }>('/metadata/sources/:name', async (req, reply) => {
    const m = c.registry.sourceMeta(req.params.name);
    if (!m) throw pluginNotFound(req.params.name);
    return sendJson(reply, 200, m);
  });
  http.get('/metadata/sinks', async (_req, reply) => sendJson(reply, 200, c.registry.sinkList()));
  http.get<{ Params: { name: string } }>('/metadata/sinks/:name', async (req, reply) => {
    const m = c.registry.sinkMeta(req.params.name);
    if (!m) throw pluginNotFound(req.params.name);
    return sendJson(reply, 200, m);
  });
  http.get('/metadata/connections', async (_req, reply) => sendJson(reply, 200, c.registry.connectionList()));
  http.get<{ Params: { name: string } }>('/metadata/connections/:name', async (req, reply) => {
    const m = c.registry.connectionMeta(req.params.name);
    if (!m) throw pluginNotFound(req.params.name);
    return sendJson(reply, 200, m);
  });

  // the user-layer config keys, one object per type: {"sources":[{"<confKey>":"<type>",...}],"sinks":[...]};
  // eKuiper answers null rather than [] for a kind without any
  http.get('/metadata/resources', async (_req, reply) => {
    const of = (kind: ConfKind): Array<Record<string, string>> | null => {
      const out: Array<Record<string, string>> = [];
      for (const type of sortedNames(c.confKeys.userTypes(kind))) {
        const item: Record<string, string> = {};
        for (const key of Object.keys(c.confKeys.user(kind, type)).sort()) item[key] = type;
        if (Object.keys(item).length > 0) out.push(item);
      }
      return out.length > 0 ? out : null;
    };
    return sendJson(reply, 200, { sources: of('sources'), sinks: of('sinks') });
  });

  // source config keys by type, narrowed to those whose `sourceType` property names the given type
  http.get<{ Querystring: { sourceType?: string } }>('/metadata/resource', async (req, reply) => {
    const wanted = req.query.sourceType ?? '';
    const out: Record<string, Record<string, unknown>> = {};
    for (const type of sortedNames([...c.registry.sourceTypes(), ...c.confKeys.userTypes('sources')])) {
      const merged = c.confKeys.merged('sources', type);
      const keys: Record<string, unknown> = {};
      for (const [key, props] of Object.entries(merged)) {
        if (wanted === '' || props.sourceType === wanted) keys[key] = props;
      }
      if (Object.keys(keys).length > 0) out[type] = keys;
    }
    return sendJson(reply, 200, sortKeysDeep(maskSecrets(out)));
  });
}

export function registerConfKeyRoutes(http: FastifyInstance, connectors: Connectors): void {
  registerMetadataRoutes(http, connectors);
  for (const kind of KINDS) {
    http.get<{ Params: { name: string } }>(`/metadata/${kind}/yaml/:name`, async (req, reply) => {
      const { name } = req.params;
      if (!isKnownType(connectors, kind, name)) throw notFound(kind, name);
      return sendJson(reply, 200, sortKeysDeep(maskSecrets(connectors.confKeys.merged(kind, name))));
    });

    http.put<{ Params: { name: string; confKey: string } }>(
      `/metadata/${kind}/:name/confKeys/:confKey`,
      async (req, reply) => {
        const { name, confKey } = req.params;
        const props = bodyProps(req, name, confKey);
        const stored = connectors.confKeys.user(kind, name)[confKey];
        if (stored) restoreSecrets(props, stored);
        const validate = connectors.registry.propsValidator(kind, name);
        if (validate) rethrowing(() => validate(props), restated('', ErrorCode.ConfKey));
        await connectors.confKeys.put(kind, name, confKey, props);
        return sendEmpty(reply, 200);
      },
    );

    http.delete<{ Params: { name: string; confKey: string } }>(
      `/metadata/${kind}/:name/confKeys/:confKey`,
      async (req, reply) => {
        const { name, confKey } = req.params;
        if (!isKnownType(connectors, kind, name)) throw notFound(kind, name);
        await connectors.confKeys.delete(kind, name, confKey);
        return sendEmpty(reply, 200);
      },
    );
  }
}
