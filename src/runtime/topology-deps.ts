/** What every topology builder (SQL and graph rules) needs from the server; kept apart so both can import it. */
import type { Logger } from 'pino';
import type { StreamCatalog } from '../catalog/types.js';
import type { KVStore } from '../store/kv.js';
import type { FunctionRegistry } from '../functions/registry.js';
import type { QueryPlan } from '../plan/plan.js';
import type { ConnectorRegistry, RuleOptions, SinkNode, SinkNodeOptions } from '../contracts/index.js';
import type { Clock } from './clock.js';

/** What the runtime needs from the rest of the server. */
export interface TopologyDeps {
  readonly catalog: StreamCatalog;
  readonly functions: FunctionRegistry;
  readonly connectors: ConnectorRegistry;
  /** the connectors layer's sink node factory (buffer, transforms, encoding, cache) */
  readonly createSinkNode: (opts: SinkNodeOptions) => SinkNode;
  /** metadata store: checkpoints live in namespace `checkpoint:<ruleId>` */
  readonly store: KVStore;
  /** the home's data folder, handed to connectors */
  readonly dataDir: string;
  /** server logger (shared source instances and lookup tables log through children of it) */
  readonly logger: Logger;
  /** time source (tests inject a ManualClock); default: wall clock */
  readonly clock?: Clock;
  /** plans a rule; default: planQuery (plan/planner.ts) over catalog and functions */
  readonly planner?: (sql: string, options: RuleOptions) => QueryPlan;
}
