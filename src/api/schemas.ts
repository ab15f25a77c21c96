/**
 * `/schemas/{type}` and `/schemas/{type}/{name}` (docs/rest-api.md §9). `protobuf` is the type Eddy keeps; eKuiper's other
 * type, `custom` (Go codec plugins), is known but empty: it lists nothing and refuses every registration.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { field, readJsonObject, restated, rethrowing, sendJson, sendText } from './http.js';
import {
  SchemaInvalid,
  SchemaNotFound,
  isSchemaType,
  type SchemaRecord,
  type SchemaRegistry,
  type SchemaType,
  validateSchemaRecord,
} from '../catalog/schemas.js';

type Params = { type: string; name: string };

const CUSTOM = 'custom';
const NO_CUSTOM = 'custom schemas are Go plugins, which Eddy cannot load';

export function registerSchemaRoutes(http: FastifyInstance, schemas: SchemaRegistry): void {
  http.post<{ Params: { type: string } }>('/schemas/:type', async (req, reply) => {
    if (req.params.type === CUSTOM)
      throw new EddyError(ErrorCode.Undefined, `schema create command error: ${NO_CUSTOM}`);
    const type = knownType(req.params.type);
    const rec = readRecord(req, type);
    checkBody(rec);
    await rethrowing(() => schemas.create(type, rec), restated('schema create command error: '));
    return sendText(reply, 201, `${type} schema ${rec.name} is created`);
  });

  http.get<{ Params: { type: string } }>('/schemas/:type', async (req, reply) => {
    if (req.params.type === CUSTOM) return sendJson(reply, 200, []);
    return sendJson(reply, 200, schemas.list(knownType(req.params.type)));
  });

  http.get<{ Params: Params }>('/schemas/:type/:name', async (req, reply) => {
    if (req.params.type === CUSTOM)
      throw new EddyError(ErrorCode.NotFound, `schema type ${CUSTOM}, file ${req.params.name} not found`);
    const type = knownType(req.params.type);
    const described = rethrowing(
      () => schemas.describe(type, req.params.name),
      (e) => (e instanceof SchemaNotFound ? new EddyError(ErrorCode.NotFound, e.message) : e),
    );
    return sendJson(reply, 200, described);
  });

  http.put<{ Params: Params }>('/schemas/:type/:name', async (req, reply) => {
    if (req.params.type === CUSTOM)
      throw new EddyError(ErrorCode.Undefined, `schema update command error: ${NO_CUSTOM}`);
    const type = knownType(req.params.type);
    const rec = readRecord(req, type);
    if (rec.name !== '' && rec.name !== req.params.name) {
      throw new EddyError(ErrorCode.Undefined, 'Invalid body: Type or name does not match');
    }
    rec.name = req.params.name;
    checkBody(rec);
    await rethrowing(() => schemas.upsert(type, rec), restated('schema update command error: '));
    return sendText(reply, 200, `${type} schema ${rec.name} is updated`);
  });

  http.delete<{ Params: Params }>('/schemas/:type/:name', async (req, reply) => {
    const { name } = req.params;
    if (req.params.type === CUSTOM)
      throw new EddyError(
        ErrorCode.NotFound,
        `delete ${CUSTOM} schema ${name} error: schema ${CUSTOM}.${name} not found`,
      );
    const type = knownType(req.params.type);
    await rethrowing(
      () => schemas.remove(type, name),
      (e) =>
        restated(
          `delete ${type} schema ${name} error: `,
          e instanceof SchemaNotFound ? ErrorCode.NotFound : ErrorCode.Undefined,
        )(e),
    );
    return sendText(reply, 200, `${type} schema ${name} is deleted`);
  });
}

function knownType(t: string): SchemaType {
  if (!isSchemaType(t)) throw new EddyError(ErrorCode.Undefined, `schema type ${t} not found`);
  return t;
}

function readRecord(req: FastifyRequest, type: SchemaType): SchemaRecord {
  const body = readJsonObject(req, 'Invalid body: Error decoding schema json: ');
  const str = (k: string): string => {
    const v = field(body, k);
    return typeof v === 'string' ? v : '';
  };
  return { type, name: str('name'), content: str('content'), file: str('file'), soFile: str('soFile') };
}

/** Runs the registry's validation up front so that a bad body answers `Invalid body: ...` (docs/compatibility.md D3). */
function checkBody(rec: SchemaRecord): void {
  rethrowing(
    () => validateSchemaRecord(rec),
    (e) => (e instanceof SchemaInvalid ? new EddyError(ErrorCode.Undefined, `Invalid body: ${e.message}`) : e),
  );
}
