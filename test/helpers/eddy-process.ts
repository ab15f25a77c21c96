/**
 * The real server as a child process on a given home (`EDDY_HOME`), for tests that kill it (`kill -9`) and start it
 * again on the same home.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
/** the repository (this file also runs compiled, from dist/test/helpers, for bench/faults) */
const root = resolve(here, here.includes('/dist/') ? '../../..' : '../..');

export interface EddyProcess {
  readonly url: string;
  readonly pid: number;
  req(method: string, path: string, body?: unknown): Promise<{ status: number; text: string; json: () => unknown }>;
  /** SIGKILL: no clean shutdown of any kind */
  kill9(): Promise<void>;
  /** SIGTERM and wait for the exit */
  stop(): Promise<void>;
}

export async function startEddyProcess(home: string, env: Record<string, string> = {}): Promise<EddyProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      EDDY_HOME: home,
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__CONSOLELOG: 'false',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
      ...env,
      ...(process.env.EDDY_FAULTS_LOG ? { KUIPER__BASIC__CONSOLELOG: 'true' } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4000)));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`eddy did not start: ${stderr}`)), 60_000);
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /serving the REST API on (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exit.then(() => {
      clearTimeout(timer);
      reject(new Error(`eddy exited at start: ${stderr}`));
    });
  });
  child.stdout?.resume();
  if (process.env.EDDY_FAULTS_LOG) {
    const { appendFileSync } = await import('node:fs');
    const file = process.env.EDDY_FAULTS_LOG;
    child.stdout?.on('data', (b: Buffer) => appendFileSync(file, b));
    child.stderr?.on('data', (b: Buffer) => appendFileSync(file, b));
  }
  return {
    url,
    pid: child.pid ?? 0,
    async req(method, path, body) {
      const init: RequestInit = { method };
      if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
      const res = await fetch(url + path, init);
      const text = await res.text();
      return { status: res.status, text, json: () => JSON.parse(text) as unknown };
    },
    async kill9() {
      if (!exited) child.kill('SIGKILL');
      await exit;
    },
    async stop() {
      if (!exited) child.kill('SIGTERM');
      await exit;
    },
  };
}
