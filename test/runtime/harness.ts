/**
 * End-to-end harness for runtime tests: a temporary home, the real connectors service (memory/mqtt/log/nop and
 * the real sink pipeline), the planner, and a `collect` sink type that records what each trigger delivers.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, prepareHome, resolveHome } from '../../src/config/index.js';
import { openStore, type KVStore } from '../../src/store/index.js';
import { Connectors } from '../../src/connectors/index.js';
import { parseDdl } from '../../src/sql/index.js';
import type { StreamCatalog, StreamDef, StreamKind } from '../../src/catalog/types.js';
import { type FunctionRegistry } from '../../src/functions/registry.js';
import * as fnModules from './functions.js';
import type { RuleOptions, SinkConnector, SinkPayload, Props } from '../../src/contracts/index.js';
import type { Clock } from '../../src/runtime/clock.js';
import { createTopologyBuilder, type RuleTopology, type RuntimeBuilder } from '../../src/runtime/topology.js';
import type { Value, ValueObject } from '../../src/values/value.js';
import { settle } from './helpers.js';
import { testSink } from '../helpers/declare.js';

/** What a `collect` sink received, per sink id: one entry per send (the rows of one trigger, or one row). */
export const collected = new Map<string, Array<ValueObject[] | ValueObject | Value>>();

class CollectSink implements SinkConnector {
  private id = '';
  private delayMs = 0;
  provision(_ctx: unknown, props: Props): void {
    this.id = String(props.id ?? '');
    this.delayMs = Number(props.delayMs ?? 0);
    if (!collected.has(this.id)) collected.set(this.id, []);
  }
  async connect(): Promise<void> {}
  async collect(_ctx: unknown, payload: SinkPayload): Promise<void> {
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    collected.get(this.id)?.push(payload.data);
  }
  async close(): Promise<void> {}
}

export interface Harness {
  readonly builder: RuntimeBuilder;
  readonly connectors: Connectors;
  readonly store: KVStore;
  readonly defs: Map<string, StreamDef>;
  /** the rules' function registry (a test may register JavaScript functions in it) */
  readonly functions: FunctionRegistry;
  /** adds a stream/table from its CREATE statement */
  ddl(sql: string): void;
  /** publishes one row on a memory topic */
  publish(topic: string, row: ValueObject): void;
  /** builds and opens a rule whose single action is a collect sink; returns the topology and its outputs */
  rule(
    id: string,
    sql: string,
    options?: Partial<RuleOptions>,
    sinkProps?: Props,
  ): Promise<{ topo: RuleTopology; out: Array<ValueObject[] | ValueObject | Value> }>;
  close(): Promise<void>;
}

export function functions(): FunctionRegistry {
  return fnModules.registry();
}

export async function createHarness(
  opts: { clock?: Clock; store?: KVStore; home?: string; sourceYaml?: Record<string, string> } = {},
): Promise<Harness> {
  const homeDir = opts.home ?? mkdtempSync(join(tmpdir(), 'eddy-rt-'));
  const home = resolveHome(homeDir);
  prepareHome(home);
  // user config keys of source types (data/sources/<type>.yaml)
  for (const [type, text] of Object.entries(opts.sourceYaml ?? {}))
    writeFileSync(join(home.data, 'sources', `${type}.yaml`), text);
  const config = loadConfig(home, {});
  const store = opts.store ?? (await openStore(config, home));
  const logger = pino({ level: 'silent' });
  const connectors = await Connectors.create({ home, config, env: {}, store, logger });
  connectors.registry.declare(testSink('collect', () => new CollectSink()));
  const defs = new Map<string, StreamDef>();
  const catalog: StreamCatalog = {
    get: (n) => defs.get(n),
    list: (k: StreamKind) => [...defs.values()].filter((d) => d.kind === k),
  };
  const registry = functions();
  const builder = createTopologyBuilder({
    catalog,
    functions: registry,
    connectors: connectors.registry,
    createSinkNode: (o) => connectors.createSinkNode(o),
    store,
    dataDir: home.data,
    logger,
    clock: opts.clock,
  });
  const topos: RuleTopology[] = [];
  return {
    builder,
    connectors,
    store,
    defs,
    functions: registry,
    ddl(sql) {
      const st = parseDdl(sql);
      if (st.kind !== 'createStream') throw new Error('not a CREATE');
      defs.set(st.name, { name: st.name, kind: st.streamKind, fields: st.fields, options: st.options, sql });
    },
    publish(topic, row) {
      connectors.memory.publish({ topic, row });
    },
    async rule(id, sql, options = {}, sinkProps = {}) {
      const ruleOptions: RuleOptions = { ...config.rule, ...options };
      const sinkId = `${id}-${Math.random().toString(36).slice(2)}`;
      const topo = builder.build(
        { id, sql, actions: [{ collect: { id: sinkId, ...sinkProps } }] },
        ruleOptions,
        logger,
      );
      await topo.open();
      topos.push(topo);
      return { topo, out: collected.get(sinkId) ?? [] };
    },
    async close() {
      for (const t of topos) await t.close();
      await settle();
      await builder.close();
      await connectors.close();
      if (!opts.store) await store.close();
      if (!opts.home) rmSync(homeDir, { recursive: true, force: true });
    },
  };
}

/** JSON view of outputs (ints as numbers) for easy comparison. */
export function plainOut(out: ReadonlyArray<unknown>): unknown {
  return JSON.parse(JSON.stringify(out, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)));
}
