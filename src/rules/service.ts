/**
 * The rule registry (docs/rest-api.md §4, docs/runtime.md §1.3): create/update/delete with planning before anything is stored,
 * start/stop/restart persisting `triggered`, restore at boot, status objects, tags, CPU usage, and the
 * `runningRulesUsing` look-up the stream catalog calls before dropping a lookup table.
 *
 * Methods throw EddyErrors whose messages carry no endpoint prefix; the REST layer adds eKuiper's prefixes.
 */
import type { Logger } from 'pino';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { RuleDef, RuleOptions, Topology, PrintableTopo, TraceStrategy } from '../contracts/index.js';
import { sortKeysDeep } from '../connectors/secrets.js';
import {
  RuleDefError,
  decodeRuleText,
  graphSources,
  maskSecrets,
  mergeOptions,
  parseRule,
  restoreSecrets,
  ruleObject,
  type ParsedRule,
} from './definition.js';
import { sqlSourceNames } from './engine.js';
import { RuleState } from './state.js';
import { parseGoDuration } from './schedule.js';
import { CpuMeter } from './cpu.js';
import type { RuleSummary } from './summary.js';
import { TraceStore } from './traces.js';
import { SortedKeyMap } from './sorted-map.js';
import type { ValueObject } from '../values/value.js';
import { RuleStatusView } from './status.js';
import type { CreateOptions, Entry, RuleListEntry, RuleMetricsSnapshot, RuleServiceDeps } from './service-types.js';
import {
  byId,
  dedupe,
  fallbackDef,
  fullOptions,
  hasTags,
  planError,
  sameRun,
  withId,
  withRestoredSecrets,
} from './service-text.js';
import { endLog, ruleLogger, type LogDestination } from '../core/rule-log.js';

export type {
  CreateOptions,
  RemoteRuleStatus,
  RuleListEntry,
  RuleMetricsSnapshot,
  RulePlacement,
  RuleServiceDeps,
} from './service-types.js';

export const RULE_NS = 'rule';

const RESTORE_WINDOW = 500; // stored rules being started at once at boot (docs/runtime.md §10.3)

export class RuleService {
  // every rule added, replaced or removed is a row of the listings to read again (rules/listing.ts)
  private readonly rules = new SortedKeyMap<Entry>((id) => this.view.touch(id));
  /** per-rule log files (`logFilename`) */
  private readonly ruleLogs = new Map<string, LogDestination>();
  /** ids being created (between the duplicate check and registration) */
  private readonly reserved = new Set<string>();
  private readonly cpu: CpuMeter;
  /** spans of traced rules (docs/runtime.md §1.11) */
  readonly traces = new TraceStore();
  private readonly patrolTimer: NodeJS.Timeout;
  private closed = false;
  /** pending from {@link expectRestore} until {@link restore} has registered every stored rule */
  private restoring: Promise<void> | undefined;
  private restored: (() => void) | undefined;

  private readonly view: RuleStatusView;

  constructor(private readonly deps: RuleServiceDeps) {
    this.view = new RuleStatusView({
      rules: this.rules,
      entry: (id) => this.entry(id),
      ids: () => this.ids(),
      runsHere: (id) => this.runsHere(id),
      placement: deps.placement,
      timezone: () => this.deps.timezone,
    });
    this.cpu = new CpuMeter(deps.cpuSampleMs ?? 5000, 30000, (visit) => {
      for (const [id, e] of this.rules) visit(id, e.state.busyUs());
    });
    const patrolMs = parseGoDuration(deps.rulePatrolInterval ?? '10s') ?? 10000;
    this.patrolTimer = setInterval(
      () => {
        for (const e of this.rules.values()) void e.state.patrol();
      },
      Math.max(100, patrolMs),
    );
    this.patrolTimer.unref();
  }

  /** `PATCH /configs` changed the zone: rules planned from now on (and status texts) use it. */
  setTimezone(zone: string): void {
    this.deps.timezone = zone;
  }

  // ------------------------------------------------------------------------------------------ definitions

  private parse(text: string, body: Record<string, unknown>, defaultId?: string, requireSameId = false): ParsedRule {
    return parseRule(body, text, {
      defaults: this.deps.defaults,
      sql: this.deps.engine,
      defaultId,
      requireSameId,
      timezone: this.deps.timezone,
    });
  }

  /**
   * Plans a definition: resolves its streams and builds a topology (throws coded EddyErrors). A rule placed on a worker
   * thread is planned there, once (docs/runtime.md §1.6): the main thread only waits for the answer.
   */
  private async plan(
    def: RuleDef,
    options: RuleOptions,
    logger: Logger,
  ): Promise<{ topo: Topology; sources: string[] }> {
    let sources: string[] = [];
    for (const action of def.actions) {
      for (const props of Object.values(action)) {
        if (typeof props !== 'object' || props === null || Array.isArray(props)) {
          throw new EddyError(
            ErrorCode.Executor,
            `expect map[string]interface{} type for the action properties, but found ${JSON.stringify(action)}`,
          );
        }
      }
    }
    try {
      // building plans the SQL (2001/2101 errors first, then 2201 sink errors): the plan gives the stream names
      const topo = this.deps.engine.builder.build(def, options, logger);
      await topo.prepare?.();
      const planned = this.deps.engine.sourcesOf?.(topo);
      if (planned) sources = planned;
      else if (def.sql !== undefined) sources = this.deps.engine.validate(def.sql, options);
      else if (def.graph) sources = graphSources(def.graph);
      return { topo, sources };
    } catch (err) {
      throw planError(err);
    }
  }

  /** Makes `dest` the rule's log file, closing the previous one. */
  private keepRuleLog(id: string, dest: LogDestination | undefined): void {
    this.closeRuleLog(id);
    if (dest) this.ruleLogs.set(id, dest);
  }

  private closeRuleLog(id: string): void {
    const dest = this.ruleLogs.get(id);
    this.ruleLogs.delete(id);
    endLog(dest);
  }

  /** A state for a new registry entry; `dest` is its log file, if any, until the entry is registered. */
  private newState(def: RuleDef, options: RuleOptions): { state: RuleState; dest?: LogDestination } {
    const { logger, dest } = ruleLogger(def.id, options, this.deps.logger, this.deps.logDir);
    const state = new RuleState(def, options, {
      logger,
      timezone: this.deps.timezone,
      closeTimeoutMs: this.deps.closeTimeoutMs,
      build: (d, o, l) => this.deps.engine.builder.build(d, o, l),
      shownChanged: () => this.view.touch(def.id),
    });
    return { state, dest };
  }

  /** Stores `text` (default: the normalised definition) and keeps it as the entry's text. */
  private async save(def: RuleDef, text: string = JSON.stringify(ruleObject(def))): Promise<void> {
    await this.deps.store.set(RULE_NS, def.id, text);
    const e = this.rules.get(def.id);
    if (e) e.text = text;
  }

  private entry(id: string): Entry {
    const e = this.rules.get(id);
    if (!e) throw new EddyError(ErrorCode.NotFound, `Rule ${id} is not found.`);
    return e;
  }

  has(id: string): boolean {
    return this.rules.has(id);
  }

  /** A path key: the rule with that id, else the only rule with that display name. */
  resolve(key: string): string | undefined {
    if (this.rules.has(key)) return key;
    let found: string | undefined;
    for (const [id, e] of this.rules) {
      if (e.state.def.name !== key) continue;
      if (found !== undefined) return undefined;
      found = id;
    }
    return found;
  }

  /** Rule ids, sorted. */
  ids(): string[] {
    return this.rules.sortedKeys();
  }

  /** The stored definition (unmasked). */
  get(id: string): RuleDef | undefined {
    return this.rules.get(id)?.state.def;
  }

  /** The merged options of a rule (cluster placement reads `node` and `parallelism`). */
  optionsOf(id: string): RuleOptions | undefined {
    return this.rules.get(id)?.state.options;
  }

  /** The streams and tables a rule reads, as of its last planning. */
  readsOf(id: string): readonly string[] {
    return this.rules.get(id)?.sources ?? [];
  }

  /** The sink types of each action of a rule, by action index (the names of its failure caches). */
  actionTypesOf(id: string): string[][] {
    return (this.rules.get(id)?.state.def.actions ?? []).map((a) => Object.keys(a));
  }

  /** The stored JSON text of a rule (unmasked): what bundles export. */
  exportText(id: string): string | undefined {
    return this.rules.get(id)?.text;
  }

  /**
   * `GET /rules/{id}`: the stored text as is (docs/rest-api.md §4.4). Text that may hold a secret (it names `password`,
   * `token` or `url`) is parsed, masked and re-serialised with sorted keys instead: masking wins over verbatim text.
   */
  describe(id: string): string {
    const text = this.entry(id).text;
    if (!/password|token|url/i.test(text)) return text;
    try {
      return JSON.stringify(sortKeysDeep(maskSecrets(JSON.parse(text) as unknown)));
    } catch {
      return JSON.stringify(sortKeysDeep(maskSecrets(ruleObject(this.entry(id).state.def))));
    }
  }

  /** Ids of the rules whose SQL reads stream or table `name` (export collects their dependencies). */
  rulesUsing(name: string): string[] {
    const out: string[] = [];
    for (const [id, e] of this.rules) if (e.sources.includes(name)) out.push(id);
    return out.sort(byId);
  }

  /** Ids of the running rules reading `name`: the catalog refuses to drop a lookup table while non-empty. */
  runningRulesUsing(name: string): string[] {
    return this.rulesUsing(name).filter((id) =>
      this.runsHere(id)
        ? this.rules.get(id)!.state.phase === 'running'
        : this.deps.placement?.elsewhere(id)?.status.startsWith('Running') === true,
    );
  }

  /**
   * `POST /rules` (docs/rest-api.md §4.2). `text` is the body as received. Throws 1000 `invalid rule json: ...`,
   * 1000 `rule <id> already exists`, or the planner's coded error. Resolves with the id.
   */
  async create(text: string, opts: CreateOptions = {}): Promise<string> {
    if (this.closed) throw new EddyError(ErrorCode.Rule, 'the rule service is shutting down');
    let parsed: ParsedRule;
    let stored: string;
    try {
      const body = decodeRuleText(text);
      stored = withRestoredSecrets(text, body, () => restoreSecrets(body, undefined, this.deps.sinkConfKey));
      parsed = this.parse(text, body, opts.defaultId);
    } catch (err) {
      if (err instanceof RuleDefError) throw new EddyError(ErrorCode.Undefined, `invalid rule json: ${err.detail}`);
      throw err;
    }
    const { def, options } = parsed;
    const id = def.id;
    stored = withId(stored, id);
    if (this.rules.has(id) || this.reserved.has(id))
      throw new EddyError(ErrorCode.Undefined, `rule ${id} already exists`);
    this.reserved.add(id);
    let dest: LogDestination | undefined;
    try {
      const made = this.newState(def, options);
      const state = made.state;
      dest = made.dest;
      let planned: { topo: Topology; sources: string[] } | undefined;
      try {
        planned = await this.plan(def, options, state.logger);
      } catch (err) {
        if (!opts.keepUnplannable) throw err;
        state.logger.warn({ err: (err as Error).message }, 'rule cannot be planned');
      }
      const added = await this.deps.store.setIfAbsent(RULE_NS, id, stored);
      if (!added) {
        planned?.topo.release?.();
        throw new EddyError(ErrorCode.Undefined, `rule ${id} already exists`);
      }
      this.keepRuleLog(id, dest);
      await this.register(state, planned, stored);
      this.deps.placement?.changed(id);
      return id;
    } catch (err) {
      if (!this.rules.has(id)) endLog(dest);
      throw err;
    } finally {
      this.reserved.delete(id);
    }
  }

  /** Adds a rule to the registry; resolves once its start (or planned stop) is in effect, not when it opened. */
  private async register(
    state: RuleState,
    planned: { topo: Topology; sources: string[] } | undefined,
    text: string,
  ): Promise<void> {
    const def = state.def;
    this.rules.set(def.id, { state, text, sources: planned?.sources ?? this.sourcesOf(def, state.options) });
    // shutting down: keep the entry (the store has it) but start nothing
    if (this.closed) return;
    this.cpu.track(def.id, state.busyUs());
    if (!planned) state.markPlanFailed();
    else if (def.triggered !== false && this.runsHere(def.id)) await state.start(planned.topo);
    else await state.setPlanned(planned.topo);
  }

  /** Whether this node runs the rule: always on a single node; in a cluster, where its lease is held. */
  private runsHere(id: string): boolean {
    return this.deps.placement?.runsHere(id) ?? true;
  }

  /**
   * Best-effort stream names of a definition that could not be planned; when even validation fails (a function of a
   * plugin that is missing, say), the names its SQL text reads: a partial export still carries them.
   */
  private sourcesOf(def: RuleDef, options: RuleOptions): string[] {
    if (def.sql !== undefined) {
      try {
        return this.deps.engine.validate(def.sql, options);
      } catch {
        return sqlSourceNames(def.sql);
      }
    }
    return def.graph ? graphSources(def.graph) : [];
  }

  /**
   * `PUT /rules/{id}` (docs/rest-api.md §4.5). Errors: 404 `Rule not found: Rule <id> is not found.`, 400
   * `Invalid body: ...`, `Update rule error: Invalid rule json: ...`, `Update rule error: <planner detail>`.
   * The old run continues when the new definition cannot be planned.
   */
  async update(id: string, text: string): Promise<void> {
    const e = this.rules.get(id);
    if (!e) throw new EddyError(ErrorCode.NotFound, `Rule not found: Rule ${id} is not found.`);
    try {
      JSON.parse(text);
    } catch (err) {
      throw new EddyError(ErrorCode.Undefined, `Invalid body: ${text.trim() === '' ? 'EOF' : (err as Error).message}`);
    }
    let body: Record<string, unknown>;
    try {
      body = decodeRuleText(text);
    } catch (err) {
      throw new EddyError(ErrorCode.Undefined, `Update rule error: Invalid rule json: ${(err as RuleDefError).detail}`);
    }
    const stored = withRestoredSecrets(text, body, () =>
      restoreSecrets(body, e.state.def.actions, this.deps.sinkConfKey),
    );
    let parsed: ParsedRule;
    try {
      parsed = this.parse(text, body, id, true);
    } catch (err) {
      if (err instanceof RuleDefError)
        throw new EddyError(ErrorCode.Undefined, `Update rule error: Invalid rule json: ${err.detail}`);
      throw err;
    }
    const { def, options } = parsed;
    if (def.tags === undefined && e.state.def.tags !== undefined) def.tags = e.state.def.tags;
    const old = e.state.options;
    const fresh =
      old.debug !== options.debug || old.logFilename !== options.logFilename
        ? ruleLogger(def.id, options, this.deps.logger, this.deps.logDir)
        : undefined;
    let planned: { topo: Topology; sources: string[] };
    try {
      planned = await this.plan(def, options, fresh?.logger ?? e.state.logger);
    } catch (err) {
      endLog(fresh?.dest);
      throw planError(err).withPrefix('Update rule error');
    }
    // a body without tags keeps the old ones: then the stored text must carry them
    await this.save(
      def,
      def.tags !== undefined && !hasTags(body) ? JSON.stringify(ruleObject(def)) : withId(stored, id),
    );
    e.sources = planned.sources;
    if (fresh) {
      e.state.logger = fresh.logger;
      this.keepRuleLog(id, fresh.dest);
    }
    await e.state.replace(def, options, planned.topo, def.triggered !== false && this.runsHere(id));
    this.deps.placement?.changed(id);
  }

  /** `POST /rules/{id}/trace/start` and `…/stop` (docs/runtime.md §1.11): null stops. */
  trace(id: string, strategy: TraceStrategy | null): void {
    this.entry(id).state.trace(strategy, (span) => this.traces.add(span));
  }

  /** `DELETE /rules/{id}`: stops, forgets, and cleans checkpoints and caches. */
  async delete(id: string): Promise<void> {
    const e = this.entry(id);
    this.rules.delete(id);
    this.cpu.forget(id);
    this.traces.forget(id);
    await e.state.stop();
    this.closeRuleLog(id);
    await this.deps.store.delete(RULE_NS, id);
    try {
      await this.deps.engine.cleanup(e.state.def);
    } catch (err) {
      e.state.logger.warn({ err }, 'cleaning the rule state failed');
    }
    this.deps.placement?.changed(id);
  }

  /** start = restart: persist `triggered: true`, re-plan, (re)start. A failed re-plan leaves the old run alone. */
  async start(id: string): Promise<void> {
    const e = this.entry(id);
    const def = { ...e.state.def, triggered: true, options: fullOptions(e.state.options) };
    e.state.def = def;
    await this.save(def);
    const planned = await this.plan(def, e.state.options, e.state.logger);
    e.sources = planned.sources;
    if (this.runsHere(id)) await e.state.start(planned.topo);
    else await e.state.setPlanned(planned.topo);
  }

  /**
   * `PUT /rules/{id}/reset_state` type 1 (docs/rest-api.md §16.6): the running rule's source of `streamName` reads on
   * from `input`. Throws 1000 errors with eKuiper's texts.
   */
  async resetOffset(id: string, streamName: string, input: ValueObject): Promise<void> {
    const e = this.entry(id);
    try {
      await e.state.resetOffset(streamName, input);
    } catch (err) {
      throw new EddyError(ErrorCode.Undefined, err instanceof Error ? err.message : String(err));
    }
  }

  restart(id: string): Promise<void> {
    return this.start(id);
  }

  /** Stops and waits for the topology to close; persists `triggered: false`. */
  async stop(id: string): Promise<void> {
    const e = this.entry(id);
    await e.state.stop();
    const def = { ...e.state.def, triggered: false, options: fullOptions(e.state.options) };
    e.state.def = def;
    await this.save(def);
  }

  // ------------------------------------------------------------------------------------------ status

  list(): RuleListEntry[] {
    return this.view.list();
  }

  statusText(id: string): string {
    return this.view.statusText(id);
  }

  /** `GET /rules/{id}/status` (docs/rest-api.md §4.10, Project shape). */
  status(id: string): Record<string, unknown> {
    return this.view.status(id);
  }

  /** A rule's status in a few numbers (`GET /eddy/rules`, the console's list). */
  summary(id: string): RuleSummary {
    return this.view.summary(id);
  }

  /** Every rule's run state and node metrics (the Prometheus exporter, docs/rest-api.md §16.8). */
  metricsSnapshot(): RuleMetricsSnapshot[] {
    return this.view.metricsSnapshot();
  }

  /** `GET /rules/status/all` (docs/rest-api.md §4.13). */
  statusAll(): Record<string, { status: string; last_exception: string; exceptions_total: number }> {
    return this.view.statusAll();
  }

  // `GET /rules` and `GET /rules/status/all` as UTF-8 JSON, kept between listings and patched (rules/listing.ts)
  listJson(): Buffer {
    return this.view.listJson();
  }
  statusAllJson(): Buffer {
    return this.view.statusAllJson();
  }

  /** `GET /rules/{id}/topo`: available once planned; 1001 for a rule that could not be planned. */
  topo(id: string): PrintableTopo {
    const p = this.entry(id).state.printable();
    if (!p)
      throw new EddyError(
        ErrorCode.General,
        `Fail to get rule ${id}'s topo, make sure the rule has been started before`,
      );
    return p;
  }

  /** `GET /rules/{id}/explain`. */
  explain(id: string): string {
    const { def, options } = this.entry(id).state;
    if (def.sql === undefined) throw new EddyError(ErrorCode.Undefined, 'only support explain sql now');
    return this.deps.engine.explain(def.sql, options);
  }

  /**
   * `POST /rules/validate`: the definition checks and, for SQL rules, the existence of the streams read.
   * Throws RuleDefError (422 `invalid rule json: ...`) or the validation error (422 with its message).
   */
  validate(text: string, body: Record<string, unknown>): { sources: string[]; valid: true } {
    const { def, options } = this.parse(text, body);
    if (def.sql === undefined) {
      // a graph is planned (nothing opened); the sources are its source nodes as the topology names them
      try {
        const engine = this.deps.engine;
        if (engine.validateGraph) return { sources: engine.validateGraph(def, options), valid: true };
        const topo = engine.builder.build(def, options, this.deps.logger);
        return { sources: topo.printable().sources, valid: true };
      } catch (err) {
        throw new EddyError(ErrorCode.Plan, `invalid rule graph: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    try {
      return { sources: this.deps.engine.validate(def.sql, options), valid: true };
    } catch (err) {
      // the validator names a missing stream as eKuiper's validate endpoint does
      const m =
        err instanceof Error ? /^fail to get stream (.*), please check if stream is created$/.exec(err.message) : null;
      if (m) throw new EddyError(ErrorCode.Plan, `${m[1]} is not found`);
      throw err;
    }
  }

  /** `GET /rules/usage/cpu`: CPU ms of every rule over the last 30 s. */
  cpuUsage(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const id of this.ids()) {
      const remote = this.runsHere(id) ? undefined : this.deps.placement?.elsewhere(id);
      out[id] = remote ? remote.cpuMs : this.cpu.usageMs(id, this.rules.get(id)!.state.busyUs());
    }
    return out;
  }

  // ------------------------------------------------------------------------------------------ tags

  async setTags(id: string, tags: string[]): Promise<void> {
    await this.changeTags(id, () => dedupe(tags));
  }

  async addTags(id: string, tags: string[]): Promise<void> {
    await this.changeTags(id, (old) => dedupe([...old, ...tags]));
  }

  async removeTags(id: string, tags: string[]): Promise<void> {
    const drop = new Set(tags);
    await this.changeTags(id, (old) => old.filter((t) => !drop.has(t)));
  }

  private async changeTags(id: string, fn: (old: string[]) => string[]): Promise<void> {
    const e = this.entry(id);
    const def = { ...e.state.def, tags: fn(e.state.def.tags ?? []) };
    e.state.def = def;
    await this.save(def);
  }

  /** Ids of the rules having every tag given (all rules for an empty list), sorted. */
  matchTags(tags: string[]): string[] {
    return this.ids().filter((id) => {
      const own = new Set(this.rules.get(id)!.state.def.tags ?? []);
      return tags.every((t) => own.has(t));
    });
  }

  // ------------------------------------------------------------------------------------------ boot and shutdown

  /**
   * Announces a {@link restore} to come (the server calls it before the REST API listens): until the stored rules
   * are registered, {@link whenRestored} holds requests that address rules, so none sees a stored rule missing.
   */
  expectRestore(): void {
    if (this.restoring || this.closed) return;
    this.restoring = new Promise((resolve) => (this.restored = resolve));
  }

  /** Resolves once the announced restore is done (at once when none is pending). */
  whenRestored(): Promise<void> {
    return this.restoring ?? Promise.resolve();
  }

  private restoreDone(): void {
    this.restored?.();
    this.restored = undefined;
    this.restoring = undefined;
  }

  /**
   * Restores every stored rule (docs/runtime.md §10.3 step 6): triggered rules start, the others stay stopped, and rules
   * that cannot be planned are kept as `Stopped: fail to create the topo.`.
   */
  async restore(): Promise<void> {
    try {
      await this.restoreAll();
    } finally {
      this.restoreDone();
    }
  }

  private async restoreAll(): Promise<void> {
    const entries = await this.deps.store.entries(RULE_NS);
    let lastYield = Date.now();
    // up to RESTORE_WINDOW rules at a time, the next one as soon as one is started: one by one, every rule waited
    // behind the first ones' worker thread loading, and in batches each batch waited for its slowest rule while the
    // main thread, which could be parsing the next rules, sat idle
    const starting = new Set<Promise<void>>();
    for (const [key, text] of entries) {
      // planning is synchronous: without a turn of the event loop now and then, restoring many rules would keep the
      // server from answering anything, `/ping` included, until the last one is started
      if (Date.now() - lastYield >= 10) {
        await new Promise<void>((r) => setImmediate(r));
        lastYield = Date.now();
      }
      if (this.closed) break;
      if (this.rules.has(key)) continue;
      // one rule's failure (logged) does not keep the others from being restored
      const started: Promise<void> = this.addStored(key, text).then(
        () => void starting.delete(started),
        (err: unknown) => {
          starting.delete(started);
          this.deps.logger.error({ rule: key, err }, 'the stored rule could not be restored');
        },
      );
      starting.add(started);
      if (starting.size >= RESTORE_WINDOW) await Promise.race(starting);
    }
    await Promise.all(starting);
  }

  /** A stored rule's text parsed, or undefined (logged) when it no longer parses. */
  private parseStored(id: string, text: string): ParsedRule | undefined {
    try {
      const parsed = this.parse(text, decodeRuleText(text), id);
      if (parsed.def.id !== id) parsed.def.id = id;
      return parsed;
    } catch (err) {
      this.deps.logger.error({ rule: id, err: (err as Error).message }, 'stored rule is invalid');
      return undefined;
    }
  }

  /** Plans a definition, or logs why it cannot be and answers undefined (the rule then shows `fail to create the topo`). */
  private async tryPlan(
    def: RuleDef,
    options: RuleOptions,
    logger: Logger,
  ): Promise<{ topo: Topology; sources: string[] } | undefined> {
    try {
      return await this.plan(def, options, logger);
    } catch (err) {
      logger.error({ err: (err as Error).message }, 'fail to create the topo');
      return undefined;
    }
  }

  /**
   * Registers a stored rule the registry does not have yet, as at boot (docs/runtime.md §10.3 step 6): triggered rules
   * start, the others stay stopped, and rules that no longer parse or cannot be planned are kept as
   * `Stopped: fail to create the topo.`.
   */
  private async addStored(key: string, text: string): Promise<void> {
    const parsed = this.parseStored(key, text);
    if (!parsed) {
      const { state, dest } = this.newState(fallbackDef(key, text), mergeOptions(this.deps.defaults, {}));
      this.keepRuleLog(key, dest);
      this.rules.set(key, { state, text, sources: [] });
      this.cpu.track(key, state.busyUs());
      state.markPlanFailed();
      return;
    }
    const { def, options } = parsed;
    const { state, dest } = this.newState(def, options);
    this.keepRuleLog(key, dest);
    await this.register(state, await this.tryPlan(def, options, state.logger), text);
  }

  // ------------------------------------------------------------------------------------------ cluster (docs/cluster.md)

  /**
   * This node started or stopped running rule `id` (it took or gave up a lease, docs/cluster.md §3): the rule is
   * planned again and runs here when its definition says so, or stops here. The stored definition is not touched.
   */
  async reopen(id: string): Promise<void> {
    await this.whenRestored();
    const e = this.rules.get(id);
    if (!e || this.closed) return;
    const { def, options } = e.state;
    const planned = await this.tryPlan(def, options, e.state.logger);
    if (!planned) {
      await e.state.stop();
      e.state.markPlanFailed();
      return;
    }
    e.sources = planned.sources;
    if (def.triggered !== false && this.runsHere(id)) await e.state.start(planned.topo);
    else await e.state.setPlanned(planned.topo);
  }

  /**
   * A rule definition another node of the cluster stored (created, updated, started, stopped, tagged) or deleted
   * (`text` undefined): the registry follows without writing the store, and a run here follows the definition.
   * Called by the one handler of remote changes (cluster/apply.ts); applying the same text twice changes nothing.
   */
  async applyStored(id: string, text: string | undefined): Promise<void> {
    await this.whenRestored();
    if (this.closed) return;
    const e = this.rules.get(id);
    if (text === undefined) {
      if (!e) return;
      // the node that ran it cleans what it kept (checkpoints, caches, broker sessions), as a local delete would
      const ranHere = this.runsHere(id);
      this.rules.delete(id);
      this.cpu.forget(id);
      await e.state.stop();
      this.closeRuleLog(id);
      if (ranHere) {
        try {
          await this.deps.engine.cleanup(e.state.def);
        } catch (err) {
          e.state.logger.warn({ err }, 'cleaning the rule state failed');
        }
      }
      return;
    }
    if (e?.text === text) return;
    if (!e) {
      await this.addStored(id, text);
      return;
    }
    const { def, options } = this.parseStored(id, text) ?? {
      def: fallbackDef(id, text),
      options: mergeOptions(this.deps.defaults, {}),
    };
    // a change of tags alone leaves the run alone
    if (sameRun(e.state.def, def)) {
      e.state.def = def;
      e.text = text;
      return;
    }
    e.text = text;
    const planned = await this.tryPlan(def, options, e.state.logger);
    if (!planned) {
      e.state.def = def;
      e.state.options = options;
      await e.state.stop();
      e.state.markPlanFailed();
      return;
    }
    e.sources = planned.sources;
    await e.state.replace(def, options, planned.topo, def.triggered !== false && this.runsHere(id));
  }

  /** Shutdown: closes every run without touching the stored `triggered` flags. */
  async close(): Promise<void> {
    this.closed = true;
    this.restoreDone();
    clearInterval(this.patrolTimer);
    this.cpu.close();
    await Promise.all([...this.rules.values()].map((e) => e.state.stop()));
    for (const id of [...this.ruleLogs.keys()]) this.closeRuleLog(id);
  }
}
