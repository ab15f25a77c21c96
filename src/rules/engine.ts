/**
 * What the rules service needs from the layers below it (SQL, planner, runtime), as one narrow interface. The
 * composition root builds it from the real modules; tests of the state machine may pass their own topologies.
 */
import type { RuleDef, RuleOptions, Topology, TopologyBuilder } from '../contracts/index.js';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { SqlChecker } from './definition.js';
import { parseSelect, parseStatement } from '../sql/index.js';
import { RuleTopology } from '../runtime/topology.js';
import { GraphTopology } from '../runtime/graph-topology.js';

export interface RuleEngine extends SqlChecker {
  /** plans and builds topologies (throws coded EddyErrors: 2101 unknown stream, 2201 unknown sink...) */
  readonly builder: TopologyBuilder;
  /**
   * Static validation of a rule's SQL against the catalog: resolves every stream/table of FROM/JOIN and returns
   * their names in that order. Throws the planner's coded EddyError otherwise (2101
   * `fail to get stream s9, please check if stream is created`).
   */
  validate(sql: string, options: RuleOptions): string[];
  /**
   * The streams/tables a topology built by {@link builder} reads, in FROM/JOIN order, taken from its plan so that a
   * rule is planned once; undefined when the topology does not tell (then {@link validate} is asked).
   */
  sourcesOf?(topo: Topology): string[] | undefined;
  /**
   * `POST /rules/validate` of a graph rule: its source nodes as the topology names them, planned on the main thread
   * (the {@link builder} may only place it on a worker). Throws the planner's error. Absent: the builder plans it.
   */
  validateGraph?(rule: RuleDef, options: RuleOptions): string[];
  /** the EXPLAIN text of a rule's SQL (docs/rest-api.md §4.14); throws coded EddyErrors */
  explain(sql: string, options: RuleOptions): string;
  /** drops what the runtime keeps for a deleted rule (checkpoints, sink caches) */
  cleanup(rule: RuleDef): Promise<void> | void;
}

/** The parts the composition root supplies; the SQL statement check is the SQL front end's. */
export type EngineParts = Omit<RuleEngine, 'statementKind'>;

export function createRuleEngine(parts: EngineParts): RuleEngine {
  return {
    statementKind: sqlStatementKind,
    builder: parts.builder,
    validate: (sql, options) => parts.validate(sql, options),
    sourcesOf: parts.sourcesOf ?? plannedSources,
    validateGraph: parts.validateGraph,
    explain: (sql, options) => parts.explain(sql, options),
    cleanup: (rule) => parts.cleanup(rule),
  };
}

function plannedSources(topo: Topology): string[] | undefined {
  if (topo instanceof GraphTopology) return [...topo.reads];
  return topo instanceof RuleTopology ? topo.plan.sources.map((s) => s.name) : undefined;
}

/** SELECT or another statement kind; throws the SQL front end's parser error when the text does not parse. */
export function sqlStatementKind(sql: string): 'select' | 'other' {
  return parseStatement(sql).kind === 'select' ? 'select' : 'other';
}

/**
 * Checks that `sql` is one SELECT, with the messages of eKuiper's rule trial runs (`Parse SQL … error: ….`, `SQL … is
 * not a select statement.`), which the temporary queries share.
 */
export function requireSelect(sql: string): void {
  let kind: 'select' | 'other';
  try {
    kind = sqlStatementKind(sql);
  } catch (err) {
    throw new EddyError(ErrorCode.Undefined, `Parse SQL ${sql} error: ${(err as Error).message}.`);
  }
  if (kind !== 'select') throw new EddyError(ErrorCode.Undefined, `SQL ${sql} is not a select statement.`);
}

/**
 * The stream/table names in FROM/JOIN of a rule's SQL, read from the text alone (no catalog, no function checks):
 * what a rule that cannot be planned still depends on. Empty when the text does not parse.
 */
export function sqlSourceNames(sql: string): string[] {
  try {
    const stmt = parseSelect(sql);
    return [stmt.from.name, ...stmt.joins.map((j) => j.source.name)].filter((n) => n !== '');
  } catch {
    return [];
  }
}
