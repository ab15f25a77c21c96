/**
 * A runtime evaluation error. Its message is the text eKuiper reports for the same failure
 * (e.g. `invalid operation string(32) * int64(3)`, `divided by zero`); the caller adds the stage prefix
 * (`run Select error: …`, `call func f error: …`).
 */
export class EvalError extends Error {
  override readonly name = 'EvalError';
}

let pendingStop: Error | undefined;

/**
 * Asks the rule whose evaluation is running to stop, not only to fail this record: a JavaScript function that ran
 * past its time limit (docs/runtime.md §8) would hold its thread that long for every record. Evaluation is synchronous,
 * so the node that catches the failing call's error is the one to read it ({@link takeRuleStop}).
 */
export function stopRuleAfterThis(err: Error): void {
  pendingStop = err;
}

/** The stop asked for during the evaluation that just failed, once. */
export function takeRuleStop(): Error | undefined {
  const err = pendingStop;
  pendingStop = undefined;
  return err;
}
