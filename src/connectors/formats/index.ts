/**
 * The formats' declarations (declaration.ts): json, binary and delimited are pure codecs and run on any thread;
 * protobuf reads the schemas registered under `/schemas/protobuf` and is declared by whoever knows where they are: the
 * server with its schema registry, a rule worker with a read-only view of the same folders (`protobufDeclaration`).
 * protobuf.js is imported when a rule first uses the format: a worker without protobuf rules never loads it.
 */
import { lazyModule } from '../../core/lazy.js';
import type { SchemaFiles } from '../../catalog/schema-files.js';
import type { Declaration, FormatDeclaration } from '../declaration.js';
import { BinaryFormat } from './binary.js';
import { DelimitedFormat } from './delimited.js';
import { JsonFormat } from './json.js';

export const formatDeclarations: Declaration[] = [
  { kind: 'format', type: 'json', create: (opts) => new JsonFormat(opts), threads: { worker: true } },
  { kind: 'format', type: 'binary', create: (opts) => new BinaryFormat(opts), threads: { worker: true } },
  { kind: 'format', type: 'delimited', create: (opts) => new DelimitedFormat(opts), threads: { worker: true } },
];

/**
 * The protobuf format over the schemas `schemas` answers once loaded (docs/runtime.md §7). Every thread reads the
 * schema files itself, and a rule opened after a schema changed parses it again (catalog/schema-files.ts).
 */
export function protobufDeclaration(schemas: () => Promise<SchemaFiles>): FormatDeclaration {
  const impl = lazyModule('the protobuf format', async () => {
    const [format, files] = await Promise.all([import('./protobuf.js'), schemas()]);
    return { ProtobufFormat: format.ProtobufFormat, files };
  });
  return {
    kind: 'format',
    type: 'protobuf',
    load: impl.load,
    create: (opts) => new (impl.get().ProtobufFormat)(impl.get().files, opts),
    threads: { worker: true },
  };
}
