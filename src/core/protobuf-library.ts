/**
 * protobufjs, required when a protobuf schema, format or service is first used (core/lazy.ts): a server with none
 * never loads it (about 5 MB resident on each thread that would).
 */
import type * as Protobuf from 'protobufjs';
import { lazyRequire } from './lazy.js';

export const protobufjs = lazyRequire<typeof Protobuf>('protobufjs');
