/**
 * The formats' declarations (declaration.ts): json, binary and delimited are pure codecs and run on any thread;
 * protobuf is declared by the server with its schema registry (`protobufDeclaration`).
 */
import type { SchemaRegistry } from '../../catalog/schemas.js';
import type { Declaration, FormatDeclaration } from '../declaration.js';
import { BinaryFormat } from './binary.js';
import { DelimitedFormat } from './delimited.js';
import { JsonFormat } from './json.js';
import { protobufFormatFactory } from './protobuf.js';

export const formatDeclarations: Declaration[] = [
  { kind: 'format', type: 'json', create: (opts) => new JsonFormat(opts), threads: { worker: true } },
  { kind: 'format', type: 'binary', create: (opts) => new BinaryFormat(opts), threads: { worker: true } },
  { kind: 'format', type: 'delimited', create: (opts) => new DelimitedFormat(opts), threads: { worker: true } },
];

/** The protobuf format, decoding with the schemas registered under `/schemas/protobuf` (docs/runtime.md §7). */
export function protobufDeclaration(schemas: SchemaRegistry): FormatDeclaration {
  return {
    kind: 'format',
    type: 'protobuf',
    create: protobufFormatFactory(schemas),
    threads: { worker: false, because: 'the protobuf schemas are registered on the main thread' },
  };
}
