import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import { sendEmpty, sendJson } from './http.js';

export const EDDY_VERSION = '1.14.7-eddy.0.1.0';

/** `GET /` (server information) and `GET /ping` (liveness), docs/rest-api.md §16.1–16.2. */
export function registerRootRoutes(http: FastifyInstance, startedAt: number): void {
  const info = () => {
    const mem = process.memoryUsage();
    return {
      version: EDDY_VERSION,
      os: process.platform,
      arch: process.arch === 'x64' ? 'amd64' : process.arch,
      upTimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
      memoryUsed: String(mem.rss),
      memoryTotal: String(os.totalmem()),
    };
  };
  http.get('/', async (_req, reply) => sendJson(reply, 200, info()));
  http.post('/', async (_req, reply) => sendJson(reply, 200, info()));
  http.get('/ping', async (_req, reply) => sendEmpty(reply, 200));
}
