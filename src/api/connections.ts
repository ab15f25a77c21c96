/**
 * Connection checks and websocket endpoints (docs/rest-api.md §6, docs/runtime.md §4):
 * `POST /metadata/{sinks|sources|lookups}/connection/{type}` probes a connector with the posted properties;
 * `POST|GET|DELETE /connection/websocket` manages websocket endpoints on the HTTP data server.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { rawBody, restated, rethrowing, sendEmpty, sendText } from './http.js';
import type { Connectors } from '../connectors/index.js';
import type { CheckKind } from '../connectors/registry.js';
import type { Props } from '../contracts/index.js';
import type { KVStore } from '../store/kv.js';
import { restoreSecrets } from '../connectors/secrets.js';
import { prop } from '../connectors/props.js';
import { isRecord } from '../core/fields.js';

function parseObject(text: string, prefix: string): Record<string, unknown> {
  const v: unknown = rethrowing(
    () => JSON.parse(text),
    (e) => new EddyError(ErrorCode.Undefined, `${prefix}${text.trim() === '' ? 'EOF' : (e as Error).message}`),
  );
  if (!isRecord(v)) throw new EddyError(ErrorCode.Undefined, `${prefix}the body must be a JSON object`);
  return v;
}

/** The body of a request, read from the raw stream for methods fastify does not parse (GET). */
async function bodyText(req: FastifyRequest): Promise<string> {
  if (req.body !== undefined && req.body !== null) return rawBody(req);
  if (req.raw.readableEnded) return '';
  const chunks: Buffer[] = [];
  for await (const c of req.raw) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function typeExists(c: Connectors, kind: CheckKind, type: string): boolean {
  if (kind === 'sink') return !!c.registry.sink(type);
  if (kind === 'lookup') return !!c.registry.lookup(type);
  return !!c.registry.source(type);
}

/** Puts stored secrets back into a masked check body (`resourceId`, or a rule's action for sinks). */
async function restoreCheckSecrets(
  c: Connectors,
  store: KVStore,
  kind: CheckKind,
  type: string,
  props: Props,
): Promise<void> {
  const resourceId = prop(props, 'resourceId');
  if (typeof resourceId === 'string' && resourceId !== '') {
    const stored = c.confKeys.user(kind === 'sink' ? 'sinks' : 'sources', type)[resourceId];
    if (stored) restoreSecrets(props, stored);
  }
  const ruleId = prop(props, 'ruleId');
  const index = prop(props, 'index');
  if (kind === 'sink' && typeof ruleId === 'string' && typeof index === 'number') {
    const text = await store.get('rule', ruleId);
    if (!text) return;
    try {
      const rule = JSON.parse(text) as { actions?: Array<Record<string, unknown>> };
      const action = rule.actions?.[index]?.[type];
      if (isRecord(action)) restoreSecrets(props, action);
    } catch {
      // a stored rule that is not JSON has nothing to restore from
    }
  }
}

export function registerConnectionRoutes(http: FastifyInstance, connectors: Connectors, store: KVStore): void {
  const checks: Array<[string, CheckKind]> = [
    ['sinks', 'sink'],
    ['sources', 'source'],
    ['lookups', 'lookup'],
  ];
  for (const [segment, kind] of checks) {
    http.post<{ Params: { type: string } }>(`/metadata/${segment}/connection/:type`, async (req, reply) => {
      const { type } = req.params;
      const props = parseObject(rawBody(req), '') as Props;
      if (kind !== 'sink') {
        const ds = props.DATASOURCE;
        if (ds !== undefined && typeof ds !== 'string') {
          throw new EddyError(ErrorCode.Undefined, 'DATASOURCE must be a string');
        }
      }
      await restoreCheckSecrets(connectors, store, kind, type, props);
      const check = connectors.registry.connectionCheck(kind, type);
      if (!check) {
        if (!typeExists(connectors, kind, type))
          throw new EddyError(ErrorCode.Undefined, `${kind} type ${type} not found`);
        throw new EddyError(ErrorCode.Undefined, `${kind} ${type} doesn't support ping connection`);
      }
      // a failed probe is always a 400, whatever status the connector's error carried
      await rethrowing(
        () => check(props),
        (err) => (err instanceof EddyError ? new EddyError(err.code, err.message) : restated('')(err)),
      );
      return sendEmpty(reply, 200);
    });
  }

  const endpointOf = async (req: FastifyRequest): Promise<string> => {
    const body = parseObject(await bodyText(req), 'Invalid body: ');
    const ep = body.endpoint;
    if (typeof ep !== 'string' || ep === '')
      throw new EddyError(ErrorCode.Undefined, 'Invalid body: endpoint should be defined');
    return ep;
  };

  http.post('/connection/websocket', async (req, reply) => {
    const ep = await endpointOf(req);
    await rethrowing(() => connectors.wsEndpoints.acquire(ep, 'api'), restated(''));
    return sendEmpty(reply, 200);
  });
  http.get('/connection/websocket', async (req, reply) => {
    const ep = await endpointOf(req);
    return sendText(reply, 200, connectors.wsEndpoints.has(ep) ? 'true' : 'false');
  });
  http.delete('/connection/websocket', async (req, reply) => {
    const ep = await endpointOf(req);
    await connectors.wsEndpoints.release(ep, 'api');
    return sendEmpty(reply, 200);
  });
}
