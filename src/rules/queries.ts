/**
 * Ad-hoc queries (`/eddy/queries`, docs/rest-api.md §16.18; `eddy query`, docs/cli.md §3): a SELECT run as a temporary
 * rule of its own kind whose only sink is a websocket endpoint `/eddy/query/<id>` on the data server. A query is never
 * stored, so it is not in `GET /rules`, exports or metrics and does not survive a restart. It starts when its first
 * reader connects and is removed when its last reader disconnects, when no reader came within `firstReaderMs`, when
 * it fails or its sources end, or on `DELETE`: a shell that is killed cannot leave a rule running.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { EddyError, ErrorCode } from '../core/errors.js';
import type { RuleOptions } from '../contracts/index.js';
import type { RuleTopology, RuntimeBuilder } from '../runtime/topology.js';
import { mergeOptions } from './definition.js';
import { requireSelect } from './engine.js';
import type { TrialEndpoints } from './trial.js';

export interface QueryEndpoints extends TrialEndpoints {
  /** tells `watcher` the number of connected readers whenever one connects or leaves */
  watch(path: string, watcher: (clients: number) => void): () => void;
  /** sends a frame to every reader */
  broadcast(path: string, data: string): number;
}

export interface QueryDeps {
  runtime: RuntimeBuilder;
  endpoints: QueryEndpoints;
  /** the server's `rule:` option defaults */
  defaults: RuleOptions;
  logger: Logger;
  /** how long a new query waits for its first reader (default 30 s) */
  firstReaderMs?: number;
  /** queries at once (default 64) */
  maxQueries?: number;
}

export interface QueryInfo {
  id: string;
  sql: string;
  /** the websocket path on the data server */
  path: string;
  readers: number;
  running: boolean;
  createdAt: number;
}

interface Query {
  info: QueryInfo;
  topo: RuleTopology;
  opened?: Promise<void>;
  hadReader: boolean;
  timer?: NodeJS.Timeout;
  unwatch?: () => void;
}

const HOLDER = 'eddy-query';

export class QueryService {
  private readonly queries = new Map<string, Query>();
  private closed = false;

  constructor(private readonly deps: QueryDeps) {}

  /** Plans the query (its errors answer at once) and opens its endpoint; the query runs once a reader connects. */
  async create(sql: unknown): Promise<{ id: string; path: string; port: number }> {
    if (this.closed) throw new EddyError(ErrorCode.Undefined, 'the server is shutting down');
    if (typeof sql !== 'string' || sql.trim() === '') throw new EddyError(ErrorCode.Undefined, 'missing sql');
    requireSelect(sql);
    const max = this.deps.maxQueries ?? 64;
    if (this.queries.size >= max) throw new EddyError(ErrorCode.Undefined, `at most ${max} queries run at once`);
    const id = `q${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;
    const path = `/eddy/query/${id}`;
    const options = mergeOptions(this.deps.defaults, { sendError: false });
    const rule = { id: `$query_${id}`, sql, actions: [{ websocket: { path, sendSingle: true } }], triggered: true };
    const topo = this.deps.runtime.build(rule, options, this.deps.logger.child({ query: id }));
    const q: Query = {
      info: { id, sql, path, readers: 0, running: false, createdAt: Date.now() },
      topo,
      hadReader: false,
    };
    await this.deps.endpoints.acquire(path, HOLDER);
    this.queries.set(id, q);
    q.unwatch = this.deps.endpoints.watch(path, (n) => this.readers(q, n));
    topo.onFatal((err) => this.end(q, `the query stopped: ${err.message}`));
    topo.onEnd?.(() => this.end(q, 'the query ended: its sources ended'));
    q.timer = setTimeout(() => void this.remove(id), this.deps.firstReaderMs ?? 30_000);
    q.timer.unref();
    return { id, path, port: this.deps.endpoints.port ?? 0 };
  }

  list(): QueryInfo[] {
    return [...this.queries.values()].map((q) => ({ ...q.info }));
  }

  has(id: string): boolean {
    return this.queries.has(id);
  }

  /** Stops and forgets a query (answers the same whether it existed or not). */
  async delete(id: string): Promise<void> {
    await this.remove(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const id of [...this.queries.keys()]) await this.remove(id);
  }

  private readers(q: Query, n: number): void {
    q.info.readers = n;
    if (n > 0 && !q.hadReader) {
      q.hadReader = true;
      if (q.timer) clearTimeout(q.timer);
      q.info.running = true;
      q.opened = q.topo.open().catch((err: unknown) => {
        this.end(q, `the query cannot start: ${err instanceof Error ? err.message : String(err)}`);
      });
    } else if (n === 0 && q.hadReader) {
      void this.remove(q.info.id);
    }
  }

  /** Tells the readers why the query ends (one `{"error": …}` frame), then removes it. */
  private end(q: Query, why: string): void {
    if (this.queries.get(q.info.id) !== q) return;
    this.deps.endpoints.broadcast(q.info.path, JSON.stringify({ error: why }));
    void this.remove(q.info.id);
  }

  private async remove(id: string): Promise<void> {
    const q = this.queries.get(id);
    if (!q) return;
    this.queries.delete(id);
    if (q.timer) clearTimeout(q.timer);
    q.unwatch?.();
    await q.opened;
    await q.topo.close().catch((err: unknown) => this.deps.logger.warn({ query: id, err }, 'closing a query failed'));
    await this.deps.endpoints.release(q.info.path, HOLDER);
  }
}
