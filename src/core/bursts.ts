/**
 * Bursts of REST requests: thousands of streams and rules created by a client (issue 22). While one lasts, the heaps of
 * every thread grow by V8's own factor instead of the 20% past their live part that keeps the garbage of messages
 * small (core/threads.ts): held to 20%, the heaps that thousands of new rules make grow were marked again at every
 * fifth part of growth, on the main thread, each rule worker and V8's helper threads, about a sixth of the CPU of
 * creating 8,000 streams and rules (2.65 / 2.54 ms per stream + rule against 2.02 / 2.26, two pairs, load 1.8–3.4).
 * Once requests have stopped coming quickly, the 20% is back and every thread collects once at once, so that its next
 * limit is again 20% past what it holds live.
 */
import { collectNow } from './idle-memory.js';
import { growHeapsFreely } from './threads.js';

/** Requests within one second that make a burst: more than a console, a CLI or a metrics scraper ever sends. */
const BURST_REQUESTS = 100;
/** A burst is over once its last busy second is this long ago. */
const BURST_END_MS = 2000;

/** the second being counted, and its requests */
let second = 0;
let requests = 0;
/** during a burst: the end of its last busy second, and the check of its end */
let lastBusy = 0;
let burst: NodeJS.Timeout | undefined;
/** told when a burst ends, besides this thread's own collection (the rule workers') */
const ends = new Set<() => void>();

/** A REST request arrived (api/server.ts). */
export function requestArrived(now = Date.now()): void {
  if (now - second >= 1000) {
    second = now;
    requests = 0;
  }
  if (++requests < BURST_REQUESTS) return;
  lastBusy = now;
  if (burst !== undefined) return;
  growHeapsFreely(true);
  burst = setInterval(() => {
    if (Date.now() - lastBusy < BURST_END_MS) return;
    clearInterval(burst);
    burst = undefined;
    growHeapsFreely(false);
    collectNow();
    for (const fn of ends) fn();
  }, 1000);
  burst.unref();
}

/** Calls `fn` at the end of every burst (until the returned function is called). */
export function onBurstEnd(fn: () => void): () => void {
  ends.add(fn);
  return () => void ends.delete(fn);
}
