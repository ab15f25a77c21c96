/** What the command-line tests share: the `eddy` command spawned as a user runs it, against a server's REST port. */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
export const bin = join(root, 'bin/eddy.mjs');

/** Compiles the server once, so that the spawns of a test file do not race to build it. */
export function buildOnce(): void {
  const r = spawnSync(process.execPath, [join(root, 'scripts/build-server.mjs')], { stdio: 'inherit' });
  assert.equal(r.status, 0);
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `eddy --port <the server's> …args` to its end. */
export function eddy(s: { url: string }, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const port = new URL(s.url).port;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, '--port', port, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
