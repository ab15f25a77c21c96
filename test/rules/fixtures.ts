/**
 * A topology whose behaviour a test decides (opens, fails to open, fails later), for the rule state machine tests.
 * The real builder is exercised by the HTTP tests.
 */
import pino from 'pino';
import {
  NodeMetrics,
  type PrintableTopo,
  type RuleDef,
  type RuleOptions,
  type Topology,
} from '../../src/contracts/index.js';
import { mergeOptions } from '../../src/rules/definition.js';
import { sqlStatementKind } from '../../src/rules/engine.js';
import { parseSelect } from '../../src/sql/index.js';
import { EddyError } from '../../src/core/errors.js';
import { DEFAULT_RULE_OPTIONS } from '../../src/config/index.js';

export const silent = pino({ level: 'silent' });

export const DEFAULTS: RuleOptions = { ...DEFAULT_RULE_OPTIONS, cronDatetimeRange: [] };

export function options(partial: Partial<RuleOptions> = {}): RuleOptions {
  return mergeOptions(DEFAULTS, partial);
}

export type OpenBehaviour = 'ok' | Error;

export class TestTopology implements Topology {
  opened = false;
  closed = false;
  private fatal: ((err: Error) => void) | undefined;
  readonly metrics = [new NodeMetrics('source_s1'), new NodeMetrics('op_2_project'), new NodeMetrics('sink_log_0')];
  constructor(private readonly behaviour: OpenBehaviour = 'ok') {}
  async open(): Promise<void> {
    if (this.behaviour !== 'ok') throw this.behaviour;
    this.opened = true;
  }
  async close(): Promise<void> {
    this.closed = true;
  }
  onFatal(cb: (err: Error) => void): void {
    this.fatal = cb;
  }
  private ended: (() => void) | undefined;
  onEnd(cb: () => void): void {
    this.ended = cb;
  }
  /** simulates bounded sources that delivered everything */
  endNow(): void {
    this.ended?.();
  }
  /** simulates a run-time failure (source lost...) */
  failNow(err: Error): void {
    this.fatal?.(err);
  }
  nodes(): readonly NodeMetrics[] {
    return this.metrics;
  }
  printable(): PrintableTopo {
    return { sources: ['source_s1'], edges: { source_s1: ['op_2_project'], op_2_project: ['sink_log_0'] } };
  }
}

/** Builds TestTopologies following a script of behaviours (the last one repeats); records every build. */
export class ScriptedBuilder {
  readonly built: TestTopology[] = [];
  constructor(private readonly script: Array<OpenBehaviour | 'throw'> = ['ok']) {}
  build = (_def: RuleDef, _o: RuleOptions): TestTopology => {
    const b = this.script[Math.min(this.built.length, this.script.length - 1)];
    if (b === 'throw') {
      this.built.push(new TestTopology(new Error('unused')));
      throw new Error('cannot plan');
    }
    const t = new TestTopology(b);
    this.built.push(t);
    return t;
  };
}

export async function until(cond: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A rule engine over the real SQL parser and a set of existing stream names, building TestTopologies; sink types
 * other than log/mqtt/memory/nop are unknown. Used to test the registry without the runtime.
 */
export class TestEngine {
  readonly streams = new Set<string>(['s1', 's2']);
  readonly cleaned: string[] = [];
  readonly builderScript = new ScriptedBuilder();
  statementKind = sqlStatementKind;
  validate = (sql: string): string[] => {
    const stmt = parseSelect(sql);
    const names = [stmt.from.name, ...stmt.joins.map((j) => j.source.name)];
    for (const n of names)
      if (!this.streams.has(n)) throw new EddyError(2101, `fail to get stream ${n}, please check if stream is created`);
    return names;
  };
  explain = (sql: string): string => `{"type":"ProjectPlan","info":"${sql}","id":0,"children":null}\n\n`;
  cleanup = (rule: RuleDef): void => {
    this.cleaned.push(rule.id);
  };
  builder = {
    build: (def: RuleDef, o: RuleOptions): Topology => {
      if (def.sql) this.validate(def.sql);
      for (const a of def.actions) {
        for (const type of Object.keys(a)) {
          if (!['log', 'mqtt', 'memory', 'nop'].includes(type))
            throw new EddyError(2201, `sink ${type} is not defined`);
        }
      }
      return this.builderScript.build(def, o);
    },
  };
}
