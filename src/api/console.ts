/**
 * The built-in web console: static files of the package's `console/` folder under `/console/` (docs in README "Web
 * console"). The files hold no data, so they are served without authentication; every API call the console makes
 * carries the user's token and is checked like any other request.
 */
import { readFile } from 'node:fs/promises';
import { join, normalize, sep } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PlainTextFailure, rethrowing } from './http.js';

const notFound = (): PlainTextFailure => new PlainTextFailure(404, '404 page not found\n');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.ico': 'image/x-icon',
};

export function registerConsoleRoutes(http: FastifyInstance, dir: string): void {
  http.get('/console', async (_req, reply) => reply.code(302).header('Location', '/console/').send());
  http.get('/console/*', async (req, reply) => {
    const rel = (req.params as { '*': string })['*'] || 'index.html';
    const file = normalize(join(dir, rel));
    if (!file.startsWith(dir + sep)) throw notFound();
    const ext = file.slice(file.lastIndexOf('.'));
    const body = await rethrowing(() => readFile(file), notFound);
    return reply
      .code(200)
      .type(TYPES[ext] ?? 'application/octet-stream')
      .header('Cache-Control', 'no-cache')
      .send(body);
  });
}
