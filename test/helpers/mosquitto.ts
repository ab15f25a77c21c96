/**
 * A Mosquitto broker owned by one test: its own port and configuration, so that a test may keep sessions for
 * clients that are away (kill -9, connection cuts) without touching the shared broker on 1883.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitFor } from './process.js';

export interface TestBroker {
  readonly port: number;
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts `mosquitto` on a free loopback port. `max_queued_messages` is raised: the default keeps only 1,000 messages
 * per offline or saturated session, which a broker outage of a few seconds at a few thousand messages per second
 * exceeds (the broker would drop them, not Eddy).
 */
export async function startBroker(maxQueued = 1_000_000): Promise<TestBroker> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'eddy-mosquitto-'));
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      `max_queued_messages ${maxQueued}`,
      'persistence false',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('mosquitto', ['-c', conf], { stdio: 'ignore' });
  let exited = false;
  child.on('exit', () => (exited = true));
  await waitFor(
    () =>
      new Promise<boolean>((resolve) => {
        if (exited) throw new Error('mosquitto exited at start');
        const s = connect(port, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      }),
    10_000,
    'mosquitto to listen',
  );
  return {
    port,
    url: `tcp://127.0.0.1:${port}`,
    async stop() {
      if (!exited) {
        const gone = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
