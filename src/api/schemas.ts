/**
 * `/schemas/{type}` and `/schemas/{type}/{name}` (docs/rest-api.md §9). `protobuf` schemas are kept by the schema
 * registry; `custom` schemas are format plugins (an archive named by `soFile`, docs/plugins.md §1) kept by the
 * native plugin manager and read by `FORMAT="custom" SCHEMAID="<name>[.<message>]"`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EddyError, ErrorCode } from '../core/errors.js';
import { field, readJsonObject, restated, rethrowing, sendJson, sendText } from './http.js';
import {
  SchemaInvalid,
  isSchemaType,
  type SchemaRecord,
  type SchemaRegistry,
  validateSchemaRecord,
} from '../catalog/schemas.js';
import { SchemaNotFound, type SchemaType } from '../catalog/schema-files.js';

type Params = { type: string; name: string };

const CUSTOM = 'custom';

/** What the routes need of the native plugin manager for custom schemas. */
export interface CustomSchemas {
  names(type: 'formats'): string[];
  customSchema(name: string): { name: string; soFile: string } | undefined;
  createFormat(name: string, file: string): Promise<void>;
  deleteFormat(name: string): Promise<void>;
}

function customRecord(req: FastifyRequest): { name: string; soFile: string } {
  const body = readJsonObject(req, 'Invalid body: Error decoding schema json: ');
  const str = (k: string): string => {
    const v = field(body, k);
    return typeof v === 'string' ? v : '';
  };
  if (str('name') === '') throw new EddyError(ErrorCode.Undefined, 'Invalid body: name is required');
  if (str('soFile') === '')
    throw new EddyError(ErrorCode.Undefined, 'Invalid body: soFile (the URL of the format plugin archive) is required');
  return { name: str('name'), soFile: str('soFile') };
}

export function registerSchemaRoutes(http: FastifyInstance, schemas: SchemaRegistry, custom: CustomSchemas): void {
  http.post<{ Params: { type: string } }>('/schemas/:type', async (req, reply) => {
    if (req.params.type === CUSTOM) {
      const rec = customRecord(req);
      await rethrowing(() => custom.createFormat(rec.name, rec.soFile), restated('schema create command error: '));
      return sendText(reply, 201, `${CUSTOM} schema ${rec.name} is created`);
    }
    const type = knownType(req.params.type);
    const rec = readRecord(req, type);
    checkBody(rec);
    await rethrowing(() => schemas.create(type, rec), restated('schema create command error: '));
    return sendText(reply, 201, `${type} schema ${rec.name} is created`);
  });

  http.get<{ Params: { type: string } }>('/schemas/:type', async (req, reply) => {
    if (req.params.type === CUSTOM) return sendJson(reply, 200, custom.names('formats').sort());
    return sendJson(reply, 200, schemas.list(knownType(req.params.type)));
  });

  http.get<{ Params: Params }>('/schemas/:type/:name', async (req, reply) => {
    if (req.params.type === CUSTOM) {
      const rec = custom.customSchema(req.params.name);
      if (!rec) throw new EddyError(ErrorCode.NotFound, `schema type ${CUSTOM}, file ${req.params.name} not found`);
      return sendJson(reply, 200, { type: CUSTOM, name: rec.name, content: '', file: '', soFile: rec.soFile });
    }
    const type = knownType(req.params.type);
    const described = rethrowing(
      () => schemas.describe(type, req.params.name),
      (e) => (e instanceof SchemaNotFound ? new EddyError(ErrorCode.NotFound, e.message) : e),
    );
    return sendJson(reply, 200, described);
  });

  http.put<{ Params: Params }>('/schemas/:type/:name', async (req, reply) => {
    if (req.params.type === CUSTOM)
      throw new EddyError(
        ErrorCode.Undefined,
        'schema update command error: a custom schema is a format plugin: delete it, restart, and create it again',
      );
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
    if (req.params.type === CUSTOM) {
      if (!custom.customSchema(name))
        throw new EddyError(
          ErrorCode.NotFound,
          `delete ${CUSTOM} schema ${name} error: schema ${CUSTOM}.${name} not found`,
        );
      await rethrowing(() => custom.deleteFormat(name), restated(`delete ${CUSTOM} schema ${name} error: `));
      return sendText(reply, 200, `${CUSTOM} schema ${name} is deleted; it is unloaded at the next restart`);
    }
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
