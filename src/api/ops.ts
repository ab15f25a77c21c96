/**
 * `GET /eddy/server` (Eddy's own, not in eKuiper): what the console's server panel and the CLI need and eKuiper's `GET /`
 * does not say — process CPU since the previous call, memory, load, and the data server's address (the CLI's
 * `query` reads its rows from a websocket endpoint there). `POST /eddy/sql/check` parses one statement and says
 * where a syntax error is (line and column), which eKuiper's messages do not, for editors that underline it.
 */
import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import { rawBody, sendJson } from './http.js';
import { unexpectedErrorCount } from './server.js';
import { parseStatement, SqlSyntaxError } from '../sql/index.js';
import { EDDY_VERSION } from './root.js';
import { summarize, type RuleSummary } from '../rules/summary.js';

export interface ServerInfoDeps {
  startedAt: number;
  dataServer: { host: string; configuredPort: number; port(): number | undefined };
  ruleCount(): number;
  /** every rule: id, name and status text (`GET /rules`) */
  ruleList(): Array<{ id: string; name: string; status: string }>;
  /** a rule's totals (records in and out, exceptions) */
  ruleSummary(id: string): RuleSummary;
  /** cluster mode: this node's id (docs/cluster.md §5) */
  nodeId?(): string;
}

export function registerOpsRoutes(http: FastifyInstance, deps: ServerInfoDeps): void {
  let lastCpu = process.cpuUsage();
  let lastAt = process.hrtime.bigint();
  http.get('/eddy/server', async (_req, reply) => {
    const cpu = process.cpuUsage();
    const now = process.hrtime.bigint();
    const wallUs = Number(now - lastAt) / 1000;
    const usedUs = cpu.user - lastCpu.user + (cpu.system - lastCpu.system);
    lastCpu = cpu;
    lastAt = now;
    const mem = process.memoryUsage();
    return sendJson(reply, 200, {
      version: EDDY_VERSION,
      node: process.version,
      upTimeSeconds: Math.floor((Date.now() - deps.startedAt) / 1000),
      // percent of one core over the interval since the previous request
      cpuPercent: wallUs > 0 ? Math.round((usedUs / wallUs) * 1000) / 10 : 0,
      cores: os.cpus().length,
      loadAverage: os.loadavg(),
      memory: {
        rss: mem.rss,
        heapUsed: mem.heapUsed,
        heapTotal: mem.heapTotal,
        external: mem.external,
        arrayBuffers: mem.arrayBuffers,
        systemTotal: os.totalmem(),
        systemFree: os.freemem(),
      },
      rules: deps.ruleCount(),
      // requests answered 500 since the start: each one a bug, logged with its stack
      restUnexpectedErrors: unexpectedErrorCount(http),
      ...(deps.nodeId ? { clusterNode: deps.nodeId() } : {}),
      dataServer: {
        host: deps.dataServer.host,
        port: deps.dataServer.port() ?? deps.dataServer.configuredPort,
        listening: deps.dataServer.port() !== undefined,
      },
    });
  });

  // one page of rules with their live totals: the console's rules list polls this every second
  http.get('/eddy/rules', async (req, reply) => {
    const q = req.query as Record<string, string | undefined>;
    const filter = (q.filter ?? '').toLowerCase();
    const all = deps
      .ruleList()
      .filter((r) => filter === '' || r.id.toLowerCase().includes(filter) || r.name.toLowerCase().includes(filter));
    const offset = Math.max(0, Number(q.offset) || 0);
    const limit = Math.min(1000, Math.max(1, Number(q.limit) || 50));
    const page = all.slice(offset, offset + limit).map((r) => {
      try {
        return deps.ruleSummary(r.id);
      } catch {
        // deleted between the listing and now
        return summarize(r, {});
      }
    });
    return sendJson(reply, 200, { total: all.length, offset, rules: page });
  });

  http.post('/eddy/sql/check', async (req, reply) => {
    let sql = rawBody(req);
    try {
      const body: unknown = JSON.parse(sql);
      if (body && typeof body === 'object' && typeof (body as { sql?: unknown }).sql === 'string')
        sql = (body as { sql: string }).sql;
    } catch {
      // a plain-text body is the statement itself
    }
    try {
      const stmt = parseStatement(sql);
      return sendJson(reply, 200, { ok: true, kind: stmt.kind });
    } catch (e) {
      if (e instanceof SqlSyntaxError) {
        return sendJson(reply, 200, { ok: false, message: e.message, line: e.line, column: e.column });
      }
      return sendJson(reply, 200, {
        ok: false,
        message: e instanceof Error ? e.message : String(e),
        line: 1,
        column: 1,
      });
    }
  });
}
