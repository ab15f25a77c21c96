/**
 * Tasks that must not overlap run one at a time, in the order they were given: a task starts once the previous one
 * settled, whether it succeeded or failed, and its own outcome goes to its caller only.
 */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  run<T>(task: () => T | PromiseLike<T>): Promise<T> {
    this.waiting++;
    const result = this.tail.then(task, task);
    const done = (): void => {
      this.waiting--;
    };
    this.tail = result.then(done, done);
    return result;
  }

  /** Resolves once every task given so far has settled. */
  settled(): Promise<void> {
    return this.tail.then(() => undefined);
  }

  /** Whether a task runs or waits. */
  get busy(): boolean {
    return this.waiting > 0;
  }
}
