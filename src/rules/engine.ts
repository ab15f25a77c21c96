/**
 * What the rules service needs from the layers below it (SQL, planner, runtime), as one narrow interface. The
 * composition root builds it from the real modules; tests of the state machine may pass their own topologies.
 */
import type { TopologyBuilder } from '../runtime/contracts.js';
import type { SqlChecker } from './definition.js';
import { parseStatement } from '../sql/index.js';

export interface RuleEngine extends SqlChecker {
  /** plans and builds topologies (throws coded EddyErrors: 2101 unknown stream, 2201 unknown sink...) */
  readonly builder: TopologyBuilder;
  /**
   * Static validation of a rule's SQL against the catalog: resolves every stream/table of FROM/JOIN and returns
   * their names in that order. Throws an EddyError (e.g. `s9 is not found`) otherwise.
   */
  validate(sql: string): string[];
  /** the EXPLAIN text of a rule's SQL (rest-api.md §4.14); throws coded EddyErrors */
  explain(sql: string): string;
  /** drops what the runtime keeps for a deleted rule (checkpoints, sink caches) */
  cleanup(ruleId: string): Promise<void> | void;
}

/** SELECT or another statement kind; throws the SQL front end's parser error when the text does not parse. */
export function sqlStatementKind(sql: string): 'select' | 'other' {
  return parseStatement(sql).kind === 'select' ? 'select' : 'other';
}
