/** Closing a topology: every step runs whatever the earlier ones threw, so a rule releases everything it holds. */
import type { Logger } from 'pino';

export type CloseStep = () => Promise<void>;

/** Runs the steps in order and logs the first failure (a close reports no error to its caller). */
export async function closeInOrder(steps: readonly CloseStep[], logger: Logger): Promise<void> {
  let first: unknown;
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      first ??= err;
    }
  }
  if (first !== undefined) logger.warn({ err: first }, 'error while closing the rule');
}
