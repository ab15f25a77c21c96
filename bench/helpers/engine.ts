/**
 * An in-process engine for the benchmarks that drive the topology builder directly: a temporary home with its store
 * and connectors, a catalog of the streams the benchmark defines by DDL, and the builder over them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, prepareHome, resolveHome } from '../../src/config/index.js';
import { openStore } from '../../src/store/index.js';
import { Connectors } from '../../src/connectors/index.js';
import { createBuiltinRegistry } from '../../src/functions/index.js';
import { parseDdl } from '../../src/sql/index.js';
import { createTopologyBuilder } from '../../src/runtime/topology.js';
import type { Clock } from '../../src/runtime/clock.js';
import type { StreamCatalog, StreamDef, StreamKind } from '../../src/catalog/types.js';

export interface BenchEngine {
  readonly config: ReturnType<typeof loadConfig>;
  readonly logger: pino.Logger;
  readonly connectors: Connectors;
  readonly store: Awaited<ReturnType<typeof openStore>>;
  readonly builder: ReturnType<typeof createTopologyBuilder>;
  /** another builder over the same streams and connectors whose rules read `clock` (closed with the engine) */
  builderWith(clock: Clock): ReturnType<typeof createTopologyBuilder>;
  /** the home's data folder, handed to connectors */
  readonly dataDir: string;
  /** adds the stream of a `CREATE STREAM` statement to the catalog */
  defineStream(sql: string): void;
  /** closes the builder, the connectors and the store, and removes the home */
  close(): Promise<void>;
}

export async function openBenchEngine(
  opts: { clock?: Clock; env?: NodeJS.ProcessEnv; prefix?: string } = {},
): Promise<BenchEngine> {
  const homeDir = mkdtempSync(join(tmpdir(), opts.prefix ?? 'eddy-bench-'));
  const home = resolveHome(homeDir);
  prepareHome(home);
  const env = opts.env ?? {};
  const config = loadConfig(home, env);
  const store = await openStore(config, home);
  const logger = pino({ level: 'silent' });
  const connectors = await Connectors.create({ home, config, env, store, logger });
  const defs = new Map<string, StreamDef>();
  const catalog: StreamCatalog = {
    get: (n) => defs.get(n),
    list: (k: StreamKind) => [...defs.values()].filter((d) => d.kind === k),
  };
  const functions = createBuiltinRegistry();
  const builders: Array<ReturnType<typeof createTopologyBuilder>> = [];
  const builderWith = (clock: Clock | undefined) => {
    const b = createTopologyBuilder({
      catalog,
      functions,
      connectors: connectors.registry,
      createSinkNode: (o) => connectors.createSinkNode(o),
      store,
      dataDir: home.data,
      logger,
      clock,
    });
    builders.push(b);
    return b;
  };
  const builder = builderWith(opts.clock);
  return {
    config,
    logger,
    connectors,
    store,
    builder,
    builderWith,
    dataDir: home.data,
    defineStream(sql) {
      const st = parseDdl(sql);
      if (st.kind !== 'createStream') throw new Error('not a CREATE');
      defs.set(st.name, { name: st.name, kind: st.streamKind, fields: st.fields, options: st.options, sql });
    },
    async close() {
      for (const b of builders) await b.close();
      await connectors.close();
      await store.close();
      rmSync(homeDir, { recursive: true, force: true });
    },
  };
}
