/**
 * The formats' declarations (declaration.ts): json, binary and delimited are pure codecs and run on any thread;
 * protobuf is declared by the server with its schema registry (`protobufDeclaration`, protobuf.ts: a rule worker never
 * loads protobuf.js).
 */
import type { Declaration } from '../declaration.js';
import { BinaryFormat } from './binary.js';
import { DelimitedFormat } from './delimited.js';
import { JsonFormat } from './json.js';

export const formatDeclarations: Declaration[] = [
  { kind: 'format', type: 'json', create: (opts) => new JsonFormat(opts), threads: { worker: true } },
  { kind: 'format', type: 'binary', create: (opts) => new BinaryFormat(opts), threads: { worker: true } },
  { kind: 'format', type: 'delimited', create: (opts) => new DelimitedFormat(opts), threads: { worker: true } },
];
