/**
 * The state machine of one rule (docs/runtime.md §1.3, §1.5): running, stopped (manually, by an error, or unplannable),
 * waiting for / terminated by its schedule. Every transition runs through one queue per rule, so overlapping
 * start/stop/update requests and timer events apply in order; each run has a generation number and callbacks of
 * an older run are ignored.
 */
import type { Logger } from 'pino';
import type {
  NodeMetrics,
  PrintableTopo,
  RuleDef,
  RuleOptions,
  Topology,
  TraceSpan,
  TraceStrategy,
} from '../contracts/index.js';
import type { ValueObject } from '../values/value.js';
import { inRanges, parseCronSpec, parseGoDuration, rangesEnded, restartDelay, type CronSchedule } from './schedule.js';
import { settledWithin } from '../core/waits.js';
import { ruleHealth, type RuleHealth, type RunFacts } from './health.js';

export type Phase = 'stopped' | 'running' | 'waiting' | 'terminated';

export interface RuleStateDeps {
  /** the rule's own child logger */
  logger: Logger;
  /** builds a fresh topology of the current definition (restart attempts, cron firings) */
  build(def: RuleDef, options: RuleOptions, logger: Logger): Topology;
  timezone?: string;
  /** jitter source of the restart back-off */
  random?: () => number;
  /** longest wait for a topology to close before the rule moves on */
  closeTimeoutMs?: number;
  /**
   * Something the rules listings show of the rule may have changed: its name, options, status text or state, or (for
   * a topology that tells, `Topology.watch`) its nodes' connections and exceptions (rules/listing.ts).
   */
  shownChanged?: () => void;
}

/** setTimeout caps its delay at 2^31-1 ms; longer waits re-arm. */
const MAX_TIMER = 2 ** 31 - 1;
/**
 * Longest wait of a start command for the open of its rule: the answer comes once every source subscribed (an MQTT
 * SUBACK received), so what a client publishes right after it reaches the rule; a rule whose worker thread is still
 * loading gets longer.
 */
const OPEN_WAIT_MS = 10_000;
const COLD_OPEN_WAIT_MS = 30_000;

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** A rule runs on a schedule when it has `cron` + `duration`, or only `cronDatetimeRange`. */
export function isPeriodic(o: RuleOptions): boolean {
  return o.cron !== '' && o.duration !== '';
}
export function isRangeOnly(o: RuleOptions): boolean {
  return !isPeriodic(o) && (o.cronDatetimeRange?.length ?? 0) > 0;
}

/**
 * Status text of a rule whose bounded sources (a file read once) delivered everything and whose sinks settled it:
 * the rule finished by itself, nobody cancelled it (eKuiper has no text of its own for this, docs/runtime.md §1.5).
 */
export const SOURCE_ENDED_TEXT = 'finished, its source ended and every record was delivered.';

export class RuleState {
  // what the listings show is kept behind accessors that tell the listings when it changes (RuleStateDeps.shownChanged)
  private def_: RuleDef;
  private options_: RuleOptions;
  private phase_: Phase = 'stopped';
  private stopText_ = 'canceled manually.';
  private startFailed_ = 0;
  private activity_: 'starting' | 'stopping' | 'restarting' | undefined;
  lastStart = 0;
  lastStop = 0;
  /** the last error of a run (an open that failed, a fatal error) and its Unix ms (rules/health.ts) */
  lastError = '';
  lastErrorTime = 0;

  private topo: Topology | undefined;
  private opened = false;
  private runGen = 0;
  private schedGen = 0;
  private scheduled = false;
  private attempts = 0;
  private cron: CronSchedule | undefined;
  private readonly runTimers = new Set<NodeJS.Timeout>();
  private readonly schedTimers = new Set<NodeJS.Timeout>();
  private queue: Promise<void> = Promise.resolve();
  /** busy µs of topologies this rule ran before the current one (CPU usage survives restarts) */
  private retiredBusyUs = 0;
  private tracing: { strategy: TraceStrategy; emit: (span: TraceSpan) => void } | undefined;

  constructor(
    def: RuleDef,
    options: RuleOptions,
    private readonly deps: RuleStateDeps,
  ) {
    this.def_ = def;
    this.options_ = options;
  }

  get def(): RuleDef {
    return this.def_;
  }

  set def(def: RuleDef) {
    this.def_ = def;
    this.deps.shownChanged?.();
  }

  get options(): RuleOptions {
    return this.options_;
  }

  set options(options: RuleOptions) {
    this.options_ = options;
    this.deps.shownChanged?.();
  }

  get phase(): Phase {
    return this.phase_;
  }

  set phase(phase: Phase) {
    if (phase === this.phase_) return;
    this.phase_ = phase;
    this.deps.shownChanged?.();
  }

  /** reason after `Stopped: ` when phase is stopped */
  get stopText(): string {
    return this.stopText_;
  }

  set stopText(text: string) {
    if (text === this.stopText_) return;
    this.stopText_ = text;
    this.deps.shownChanged?.();
  }

  /** scheduled starts that failed (periodic rules), shown as ` Start failed count: N.` */
  get startFailed(): number {
    return this.startFailed_;
  }

  set startFailed(n: number) {
    if (n === this.startFailed_) return;
    this.startFailed_ = n;
    this.deps.shownChanged?.();
  }

  /** the run is opening, closing on a user stop, or waiting for a restart after an error (rules/health.ts) */
  get activity(): 'starting' | 'stopping' | 'restarting' | undefined {
    return this.activity_;
  }

  set activity(activity: 'starting' | 'stopping' | 'restarting' | undefined) {
    if (activity === this.activity_) return;
    this.activity_ = activity;
    this.deps.shownChanged?.();
  }

  /**
   * Whether the listings hear of every change of this rule's nodes (its topology tells them, `Topology.watch`);
   * otherwise its counters change on this thread without telling, and a listing reads its row each time.
   */
  nodesTell(): boolean {
    return this.topo === undefined || this.topo.watch !== undefined;
  }

  get logger(): Logger {
    return this.deps.logger;
  }

  /** An update may change `debug` or `logFilename`. */
  set logger(logger: Logger) {
    this.deps.logger = logger;
  }

  // ------------------------------------------------------------------------------------------ queries

  statusText(): string {
    let s: string;
    switch (this.phase) {
      case 'running':
        s = 'Running';
        break;
      case 'waiting':
        s = 'Stopped: waiting for next schedule.';
        break;
      case 'terminated':
        s = 'Stopped: schedule terminated.';
        break;
      default:
        s = `Stopped: ${this.stopText}`;
    }
    if (isPeriodic(this.options) && this.startFailed > 0) s += ` Start failed count: ${this.startFailed}.`;
    return s;
  }

  /** next cron start of a periodic rule inside its ranges, else 0 */
  nextStart(now = Date.now()): number {
    if (!this.scheduled || !this.cron || !inRanges(this.options.cronDatetimeRange, now, this.deps.timezone)) return 0;
    return this.cron.next(now) ?? 0;
  }

  /** The state beside the status text: degraded while a source or sink is not connected (rules/health.ts). */
  health(now = Date.now()): RuleHealth {
    const p = this.phase === 'running' ? this.placement() : undefined;
    const stuck = p && !p.answering ? `worker ${p.worker} is not answering its heartbeat` : undefined;
    return ruleHealth({ ...this.facts(), stuck }, this.phase === 'running' ? this.nodes() : [], now);
  }

  private facts(): RunFacts {
    const { phase, activity, stopText, lastError, lastErrorTime } = this;
    return { phase, activity, stopText, lastError, lastErrorTime };
  }

  /** metrics of the current (or last) topology, in status order */
  nodes(): readonly NodeMetrics[] {
    return this.topo?.nodes() ?? [];
  }

  /** `PUT /rules/{id}/reset_state` type 1 on the running topology (docs/rest-api.md §16.6). */
  async resetOffset(streamName: string, input: ValueObject): Promise<void> {
    const topo = this.topo;
    if (this.phase !== 'running' || !topo) throw new Error(`rule ${this.def.id} should be running when modify state`);
    if (!topo.resetOffset) throw new Error(`rule ${this.def.id} cannot reset the offset of its sources`);
    await topo.resetOffset(streamName, input);
  }

  printable(): PrintableTopo | undefined {
    return this.topo?.printable();
  }

  /** the worker thread running the rule (docs/runtime.md §1.10); undefined in-process */
  placement(): { worker: number; answering: boolean } | undefined {
    return this.topo?.placement?.();
  }

  /** CPU µs spent by this rule's nodes since it was created (monotonic across restarts) */
  busyUs(): number {
    let sum = this.retiredBusyUs;
    for (const n of this.nodes()) sum += n.busyUs;
    return sum;
  }

  // ------------------------------------------------------------------------------------------ commands

  /** A rule whose stored definition cannot be planned (restore at boot, import). */
  markPlanFailed(): void {
    this.phase = 'stopped';
    this.stopText = 'fail to create the topo.';
  }

  /** Keeps a planned topology without running it (created or updated with `triggered: false`). */
  setPlanned(topo: Topology): Promise<void> {
    return this.enqueue(async () => {
      await this.halt();
      this.setTopo(topo);
      this.phase = 'stopped';
      this.stopText = 'canceled manually.';
    });
  }

  /** Starts (or restarts) with a freshly planned topology; periodic rules enter their schedule. */
  start(topo: Topology): Promise<void> {
    return this.enqueue(async () => {
      await this.halt();
      this.attempts = 0;
      this.startFailed = 0;
      if (isPeriodic(this.options) || isRangeOnly(this.options)) this.enterSchedule(topo);
      else await this.launchAndWaitIfCold(topo);
    });
  }

  /**
   * Launches and waits (at most {@link OPEN_WAIT_MS}, {@link COLD_OPEN_WAIT_MS} when the topology's thread is still
   * starting) for the open, so that a client publishing right after `POST /rules` answered is not publishing into a
   * rule whose sources have not subscribed yet (docs/runtime.md §1.3).
   */
  private async launchAndWaitIfCold(topo: Topology): Promise<void> {
    const cold = topo.startsCold?.() === true;
    await settledWithin(this.launch(topo), cold ? COLD_OPEN_WAIT_MS : OPEN_WAIT_MS);
  }

  /** User stop: waits for the topology to close. */
  stop(): Promise<void> {
    return this.enqueue(async () => {
      const wasActive = this.phase === 'running' || this.opened;
      this.activity = 'stopping';
      try {
        await this.halt();
      } finally {
        this.activity = undefined;
      }
      this.phase = 'stopped';
      this.stopText = 'canceled manually.';
      if (wasActive || this.lastStop === 0) this.lastStop = Date.now();
    });
  }

  /** Update: swaps definition and topology, then runs it when `run`. */
  replace(def: RuleDef, options: RuleOptions, topo: Topology, run: boolean): Promise<void> {
    return this.enqueue(async () => {
      await this.halt();
      this.def = def;
      this.options = options;
      this.attempts = 0;
      this.startFailed = 0;
      if (!run) {
        this.setTopo(topo);
        this.phase = 'stopped';
        this.stopText = 'canceled manually.';
      } else if (isPeriodic(options) || isRangeOnly(options)) this.enterSchedule(topo);
      else await this.launchAndWaitIfCold(topo);
    });
  }

  /** Range-only rules: open or close with their datetime ranges (called every `rulePatrolInterval`). */
  patrol(now = Date.now()): Promise<void> {
    if (!this.scheduled || !isRangeOnly(this.options)) return Promise.resolve();
    return this.enqueue(async () => {
      if (!this.scheduled) return;
      const tz = this.deps.timezone;
      if (rangesEnded(this.options.cronDatetimeRange, now, tz)) {
        await this.halt();
        this.phase = 'terminated';
      } else if (inRanges(this.options.cronDatetimeRange, now, tz)) {
        if (this.phase !== 'running') this.startScheduledRun();
      } else if (this.phase === 'running') {
        await this.halt();
        this.scheduled = true;
        this.phase = 'waiting';
        this.lastStop = Date.now();
      }
    });
  }

  /** Waits for every queued transition (tests, shutdown). */
  idle(): Promise<void> {
    return this.queue;
  }

  // ------------------------------------------------------------------------------------------ internals

  private enqueue(fn: () => Promise<void>): Promise<void> {
    const next = this.queue.then(fn).catch((err: unknown) => {
      this.logger.error({ err }, 'rule state transition failed');
    });
    this.queue = next;
    return next;
  }

  private setTopo(topo: Topology): void {
    if (this.topo && this.topo !== topo) {
      for (const n of this.topo.nodes()) this.retiredBusyUs += n.busyUs;
      // planned on a worker and never opened: the worker may forget it
      this.topo.release?.();
    }
    this.topo = topo;
    const changed = this.deps.shownChanged;
    if (changed) {
      topo.watch?.(changed);
      changed();
    }
    // tracing stays on across restarts and updates until it is stopped
    if (this.tracing) topo.trace?.(this.tracing.strategy, this.tracing.emit);
  }

  /** Rule tracing (docs/runtime.md §1.11): on with a strategy, off with null; applies to this run and the next. */
  trace(strategy: TraceStrategy | null, emit: (span: TraceSpan) => void): void {
    this.tracing = strategy === null ? undefined : { strategy, emit };
    this.topo?.trace?.(strategy, emit);
  }

  get traceStrategy(): TraceStrategy | null {
    return this.tracing?.strategy ?? null;
  }

  private addTimer(set: Set<NodeJS.Timeout>, ms: number, fn: () => void): void {
    const t = setTimeout(
      () => {
        set.delete(t);
        fn();
      },
      Math.max(0, Math.min(ms, MAX_TIMER)),
    );
    set.add(t);
  }

  private clearTimers(set: Set<NodeJS.Timeout>): void {
    for (const t of set) clearTimeout(t);
    set.clear();
  }

  /** Ends the current run and the schedule; resolves once the topology closed (or the close timed out). */
  private async halt(): Promise<void> {
    this.schedGen++;
    this.scheduled = false;
    this.cron = undefined;
    this.clearTimers(this.schedTimers);
    await this.endRun();
  }

  /** Ends the current run only (the schedule stays armed). */
  private async endRun(): Promise<void> {
    this.runGen++;
    if (this.activity !== 'stopping') this.activity = undefined;
    this.clearTimers(this.runTimers);
    await this.closeTopo();
  }

  private async closeTopo(): Promise<void> {
    if (!this.opened || !this.topo) return;
    this.opened = false;
    const topo = this.topo;
    let timer: NodeJS.Timeout | undefined;
    const limit = this.deps.closeTimeoutMs ?? 10000;
    try {
      await Promise.race([
        topo.close(),
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            this.logger.warn('topology did not close within %d ms', limit);
            resolve();
          }, limit);
        }),
      ]);
    } catch (err) {
      this.logger.warn({ err }, 'error while closing the topology');
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  /**
   * Opens a topology; open failures and fatal errors go through the restart strategy. The returned promise settles
   * (never rejects) when the open has.
   */
  private launch(topo: Topology): Promise<void> {
    const gen = ++this.runGen;
    this.setTopo(topo);
    this.opened = true;
    this.phase = 'running';
    this.lastStart = Date.now();
    this.activity = 'starting';
    let reported = false;
    const fail = (err: unknown) => {
      if (reported) return;
      reported = true;
      void this.enqueue(() => this.onRunError(gen, asError(err)));
    };
    let opening: Promise<void> = Promise.resolve();
    try {
      topo.onFatal(fail);
      topo.onEnd?.(() => void this.enqueue(() => this.onRunEnd(gen)));
      opening = topo.open().catch(fail);
    } catch (err) {
      fail(err);
    }
    void opening.then(() => {
      if (gen === this.runGen && this.activity === 'starting') this.activity = undefined;
    });
    this.logger.info('rule started');
    return opening;
  }

  private async onRunError(gen: number, err: Error): Promise<void> {
    if (gen !== this.runGen) return;
    this.logger.error({ err: err.message }, 'rule run failed');
    this.lastError = err.message;
    this.lastErrorTime = Date.now();
    await this.closeTopo();
    const strategy = this.options.restartStrategy;
    if (this.attempts < strategy.attempts) {
      this.activity = 'restarting';
      const delay = restartDelay(strategy, this.attempts, this.deps.random);
      this.attempts++;
      this.logger.info('restarting the rule in %d ms (attempt %d of %d)', delay, this.attempts, strategy.attempts);
      this.addTimer(this.runTimers, delay, () => {
        void this.enqueue(async () => {
          if (gen !== this.runGen) return;
          let next: Topology;
          try {
            next = this.deps.build(this.def, this.options, this.logger);
          } catch (e) {
            this.runFailed(asError(e));
            return;
          }
          void this.launch(next);
        });
      });
      return;
    }
    this.runFailed(err);
  }

  /** A run whose bounded sources delivered everything: it ends without a restart (docs/runtime.md §1.3). */
  private async onRunEnd(gen: number): Promise<void> {
    if (gen !== this.runGen) return;
    this.runGen++;
    this.logger.info('rule finished: its sources delivered everything');
    await this.closeTopo();
    this.lastStop = Date.now();
    if (this.scheduled) {
      this.phase = rangesEnded(this.options.cronDatetimeRange, Date.now(), this.deps.timezone)
        ? 'terminated'
        : 'waiting';
      return;
    }
    this.phase = 'stopped';
    this.stopText = SOURCE_ENDED_TEXT;
  }

  /** A run ended by an error with no restart left. */
  private runFailed(err: Error): void {
    this.runGen++;
    this.activity = undefined;
    this.lastError = err.message;
    this.lastErrorTime = Date.now();
    this.lastStop = Date.now();
    if (this.scheduled) {
      this.startFailed++;
      this.phase = rangesEnded(this.options.cronDatetimeRange, Date.now(), this.deps.timezone)
        ? 'terminated'
        : 'waiting';
      return;
    }
    this.phase = 'stopped';
    this.stopText = `${err.message}.`;
  }

  private enterSchedule(topo: Topology): void {
    const sgen = ++this.schedGen;
    this.scheduled = true;
    this.setTopo(topo);
    this.phase = 'waiting';
    const tz = this.deps.timezone;
    const now = Date.now();
    const ranges = this.options.cronDatetimeRange;
    if (rangesEnded(ranges, now, tz)) {
      this.phase = 'terminated';
      return;
    }
    if (!isPeriodic(this.options)) {
      if (inRanges(ranges, now, tz)) void this.launch(topo);
      return;
    }
    const duration = parseGoDuration(this.options.duration) ?? 0;
    try {
      this.cron = parseCronSpec(this.options.cron, tz);
    } catch (err) {
      this.logger.error({ err }, 'invalid cron');
      this.startFailed++;
      return;
    }
    // started inside a firing window: run for what is left of it
    const prev = this.cron.next(now - duration);
    if (prev !== undefined && prev <= now && now < prev + duration && inRanges(ranges, now, tz)) {
      void this.launch(topo);
      this.armWindowEnd(sgen, prev + duration - now);
    }
    this.armCron(sgen);
  }

  private armCron(sgen: number): void {
    const next = this.cron?.next(Date.now());
    if (next === undefined) return;
    const wait = () =>
      this.addTimer(this.schedTimers, next - Date.now(), () => {
        if (sgen !== this.schedGen) return;
        if (Date.now() < next) wait();
        else void this.enqueue(() => this.fire(sgen));
      });
    wait();
  }

  private async fire(sgen: number): Promise<void> {
    if (sgen !== this.schedGen) return;
    const now = Date.now();
    const tz = this.deps.timezone;
    if (rangesEnded(this.options.cronDatetimeRange, now, tz)) {
      await this.endRun();
      this.phase = 'terminated';
      this.clearTimers(this.schedTimers);
      return;
    }
    if (inRanges(this.options.cronDatetimeRange, now, tz)) {
      if (this.opened) await this.endRun();
      this.clearTimers(this.schedTimers);
      if (this.startScheduledRun()) this.armWindowEnd(sgen, parseGoDuration(this.options.duration) ?? 0);
    }
    this.armCron(sgen);
  }

  /** Builds and opens a run of a scheduled rule; counts a failed start. */
  private startScheduledRun(): boolean {
    try {
      void this.launch(this.deps.build(this.def, this.options, this.logger));
      return true;
    } catch (err) {
      this.startFailed++;
      this.logger.error({ err: asError(err).message }, 'scheduled start failed');
      return false;
    }
  }

  private armWindowEnd(sgen: number, ms: number): void {
    this.addTimer(this.schedTimers, ms, () => {
      void this.enqueue(async () => {
        if (sgen !== this.schedGen) return;
        await this.endRun();
        this.lastStop = Date.now();
        this.phase = rangesEnded(this.options.cronDatetimeRange, Date.now(), this.deps.timezone)
          ? 'terminated'
          : 'waiting';
      });
    });
  }
}
