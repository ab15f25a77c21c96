/**
 * Starts a real Eddy server on a fresh temporary home with ephemeral ports, for tests that talk HTTP.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type EddyServer } from '../../src/server.js';

export interface TestServer extends EddyServer {
  /** fetch relative to the REST base URL; `body` objects are sent as JSON */
  req(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; text: string; json: () => unknown; headers: Headers }>;
  /** stops the server; the home folder is kept so that a test can start again on it */
  stop(): Promise<void>;
  /** stops the server and removes its home folder */
  dispose(): Promise<void>;
  readonly homeDir: string;
}

export interface TestServerOptions {
  /** reuse an existing home (restart tests) */
  home?: string;
  /** extra KUIPER__... environment */
  env?: Record<string, string>;
  /** use the real Redis server as the metadata store, isolated by a key prefix */
  redisPrefix?: string;
  /** lifetime of rule trial runs */
  ruleTestTimeoutMs?: number;
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const homeDir = opts.home ?? mkdtempSync(join(tmpdir(), 'eddy-test-'));
  const env: Record<string, string> = {
    KUIPER__BASIC__RESTIP: '127.0.0.1',
    KUIPER__BASIC__RESTPORT: '0',
    KUIPER__BASIC__CONSOLELOG: 'false',
    KUIPER__BASIC__FILELOG: 'false',
    KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
    KUIPER__SOURCE__HTTPSERVERPORT: '0',
    // fixtures (archives, schemas, bundles) are written to the temporary folder; test/api/files.test.ts checks the
    // default, which is the home's data/ folder only
    KUIPER__BASIC__FILEACCESSROOTS: `[${tmpdir()}]`,
    ...(opts.redisPrefix ? { KUIPER__STORE__TYPE: 'redis' } : {}),
    // EDDY_TEST_WORKERS=2 runs a test file's servers with rule workers (docs/runtime.md §1.10)
    ...(process.env.EDDY_TEST_WORKERS ? { KUIPER__BASIC__WORKERS: process.env.EDDY_TEST_WORKERS } : {}),
    ...opts.env,
  };
  const server = await startServer({
    home: homeDir,
    env,
    redisPrefix: opts.redisPrefix,
    ruleTestTimeoutMs: opts.ruleTestTimeoutMs,
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await server.close();
  };
  return {
    ...server,
    homeDir,
    async req(method, path, body) {
      const init: RequestInit = { method };
      if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
      const res = await fetch(server.url + path, init);
      const text = await res.text();
      return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) as unknown };
    },
    stop,
    async dispose() {
      await stop();
      rmSync(homeDir, { recursive: true, force: true });
    },
  };
}
