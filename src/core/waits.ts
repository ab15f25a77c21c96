/** Bounded waits: stopping and starting must not hang on a promise that never settles. */

/** Waits for `p` to settle, at most `ms`; never rejects. Resolves true when `p` settled in time. */
export async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}
