/**
 * A runtime evaluation error. Its message is the text eKuiper reports for the same failure
 * (e.g. `invalid operation string(32) * int64(3)`, `divided by zero`); the caller adds the stage prefix
 * (`run Select error: …`, `call func f error: …`).
 */
export class EvalError extends Error {
  override readonly name = 'EvalError';
}
