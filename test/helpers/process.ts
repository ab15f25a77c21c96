/**
 * Small helpers for tests that run real processes: a free port, and polling a condition with a generous deadline
 * (the deadline only bounds a failure; the test goes on as soon as the condition holds).
 */
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  deadlineMs: number,
  what: string,
  everyMs = 50,
): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}
