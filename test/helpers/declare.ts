/**
 * Declarations of the connectors tests make up (src/connectors/declaration.ts): a test declares them through the
 * registry exactly as a built-in or a plugin is declared, with nothing but the connector itself. They exist in the
 * main thread's registry only, so the rules using them stay there.
 */
import type { SinkConnector, SourceConnector } from '../../src/contracts/index.js';
import type {
  HostConnectionCheck,
  SinkDeclaration,
  SourceDeclaration,
  Threads,
} from '../../src/connectors/declaration.js';

const MAIN_ONLY: Threads = { worker: false, because: 'declared by a test in the main thread’s registry only' };

export function testSource(type: string, create: () => SourceConnector): SourceDeclaration {
  return {
    kind: 'source',
    type,
    create,
    defaults: null,
    meta: null,
    check: null,
    validate: null,
    threads: MAIN_ONLY,
  };
}

export function testSink(
  type: string,
  create: () => SinkConnector,
  check: HostConnectionCheck | null = null,
): SinkDeclaration {
  return { kind: 'sink', type, create, meta: null, check, validate: null, threads: MAIN_ONLY };
}
