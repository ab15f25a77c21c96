/**
 * Asynchronous imports (docs/rest-api.md §7.5–7.6, docs/compatibility.md D12): tasks with unique ids `dataImport-<ms>-<n>`, persisted in store
 * namespace `asyncManager` so that their outcome survives restarts, with eKuiper's record shape and cooperative
 * cancellation. Tasks found unfinished at start (the server stopped under them) are marked `cancel`.
 */
import type { Logger } from 'pino';
import type { KVStore } from '../store/kv.js';
import type { ImportControl } from './service.js';

export const TASK_NS = 'asyncManager';

export type TaskStatus = 'register' | 'running' | 'finish' | 'error' | 'cancel';

export interface TaskRecord {
  id: string;
  status: TaskStatus;
  message: string;
  /** Unix seconds */
  createdTimestamp: number;
  /** Unix seconds, changed on every transition */
  updatedTimestamp: number;
}

/** What a task's work reports when it ends. */
export interface TaskOutcome {
  status: 'finish' | 'error' | 'cancel';
  message: string;
}

export class TaskNotFound extends Error {
  constructor(id: string) {
    super(`async task: ${id} not found`);
  }
}

/** How far a running import is (Eddy's own, for progress bars): items applied of the bundle's total. */
export interface TaskProgress {
  id: string;
  status: TaskStatus;
  done: number;
  total: number;
}

interface Live {
  record: TaskRecord;
  itemsDone: number;
  itemsTotal: number;
  cancelled: boolean;
  done: Promise<void>;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** How many ended tasks keep their final counts for the progress endpoint. */
const ENDED_COUNTS = 256;

export class TaskManager {
  private readonly live = new Map<string, Live>();
  /** items done and in all of ended tasks, oldest first */
  private readonly endedCounts = new Map<string, { done: number; total: number }>();
  private counter = 0;
  private closing = false;

  constructor(
    private readonly store: KVStore,
    private readonly logger: Logger,
  ) {}

  /** Marks the tasks a previous run left unfinished as cancelled. */
  async init(): Promise<void> {
    for (const [id, text] of await this.store.entries(TASK_NS)) {
      try {
        const rec = JSON.parse(text) as TaskRecord;
        if (rec.status === 'register' || rec.status === 'running') {
          rec.status = 'cancel';
          rec.message = rec.message || 'the server stopped before the task finished';
          rec.updatedTimestamp = nowSeconds();
          await this.store.set(TASK_NS, id, JSON.stringify(rec));
        }
      } catch (err) {
        this.logger.warn({ err, task: id }, 'unreadable async task record');
      }
    }
  }

  /** Registers a task and starts `work` in the background; resolves with its id once the task is recorded. */
  async start(work: (ctl: ImportControl) => Promise<TaskOutcome>): Promise<string> {
    if (this.closing) throw new Error('the server is shutting down');
    const ms = Date.now();
    const id = `dataImport-${ms}-${++this.counter}`;
    const t = Math.floor(ms / 1000);
    const record: TaskRecord = { id, status: 'register', message: '', createdTimestamp: t, updatedTimestamp: t };
    await this.store.set(TASK_NS, id, JSON.stringify(record));
    const live: Live = { record, itemsDone: 0, itemsTotal: 0, cancelled: false, done: Promise.resolve() };
    this.live.set(id, live);
    const ctl: ImportControl = {
      get cancelled() {
        return live.cancelled;
      },
      progress(done, total) {
        live.itemsDone = done;
        live.itemsTotal = total;
      },
    };
    live.done = (async () => {
      await new Promise<void>((r) => setImmediate(r));
      let outcome: TaskOutcome;
      if (live.cancelled) outcome = { status: 'cancel', message: 'the task was cancelled before it started' };
      else {
        await this.transition(live, 'running', '');
        try {
          outcome = await work(ctl);
        } catch (err) {
          this.logger.error({ err, task: id }, 'async import failed');
          outcome = { status: 'error', message: err instanceof Error ? err.message : String(err) };
        }
      }
      await this.transition(live, outcome.status, outcome.message);
      this.rememberCounts(id, live.itemsDone, live.itemsTotal);
      this.live.delete(id);
    })().catch((err) => this.logger.error({ err, task: id }, 'cannot record the end of an async task'));
    return id;
  }

  private async transition(live: Live, status: TaskStatus, message: string): Promise<void> {
    live.record = { ...live.record, status, message, updatedTimestamp: nowSeconds() };
    await this.store.set(TASK_NS, live.record.id, JSON.stringify(live.record));
  }

  async get(id: string): Promise<TaskRecord> {
    const live = this.live.get(id);
    if (live) return { ...live.record };
    const text = await this.store.get(TASK_NS, id);
    if (text === undefined) throw new TaskNotFound(id);
    return JSON.parse(text) as TaskRecord;
  }

  /** The progress of a task: live counts while it runs; once ended, its status with nothing left to do. */
  async progress(id: string): Promise<TaskProgress> {
    const live = this.live.get(id);
    if (live) return { id, status: live.record.status, done: live.itemsDone, total: live.itemsTotal };
    const rec = await this.get(id);
    // an import that ended before anyone asked still says how much it did
    const counts = this.endedCounts.get(id);
    return { id, status: rec.status, done: counts?.done ?? 0, total: counts?.total ?? 0 };
  }

  /** Keeps the final counts of the last {@link ENDED_COUNTS} tasks of this process (the store keeps eKuiper's record). */
  private rememberCounts(id: string, done: number, total: number): void {
    this.endedCounts.set(id, { done, total });
    if (this.endedCounts.size > ENDED_COUNTS) this.endedCounts.delete(this.endedCounts.keys().next().value as string);
  }

  /**
   * Asks a task to stop; the import stops between two items (a full import then restores the previous data), and
   * its final status is `cancel`. Cancelling a task that already ended changes nothing.
   */
  async cancel(id: string): Promise<TaskRecord> {
    const live = this.live.get(id);
    if (live) {
      live.cancelled = true;
      return { ...live.record };
    }
    return this.get(id);
  }

  /** Cancels the running tasks and waits for them to wind down (server shutdown). */
  async close(): Promise<void> {
    this.closing = true;
    const running = [...this.live.values()];
    for (const l of running) l.cancelled = true;
    await Promise.all(running.map((l) => l.done));
  }
}
