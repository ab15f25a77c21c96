/**
 * Gives memory back after a burst. The V8 embedded in Node 20 collects garbage only while JavaScript allocates, so the
 * heap that a burst of requests grew stays resident for as long as the process then idles (an edge device keeps
 * paying for a peak it no longer has). When the heap V8 holds exceeds its live part by a wide margin and the live
 * part has not moved for a whole check period, one full collection runs: a pause of a few milliseconds at a moment
 * when nothing is being served. One collector per process, however many servers it runs.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const CHECK_MS = 5000;
/** committed heap beyond the live heap that is worth a collection (V8's young generation alone may hold 32 MB) */
const SLACK_BYTES = 24 * 1024 * 1024;
/** less allocation than this over a check period counts as idle */
const IDLE_BYTES = 1024 * 1024;
/** longest back-off, in check periods, after collections that did not give the memory back */
const MAX_BACKOFF = 64;

let users = 0;
let timer: NodeJS.Timeout | undefined;
let collect: (() => void) | null | undefined;
let previous = 0;
/** checks still to skip, and the skip after the next collection that leaves the heap as large */
let skip = 0;
let backoff = 0;

function collector(): (() => void) | null {
  if (collect === undefined) {
    try {
      // the flag only exposes `gc` to contexts created after it, never to the application's own global
      setFlagsFromString('--expose-gc');
      const fn: unknown = runInNewContext('gc');
      collect = typeof fn === 'function' ? (fn as () => void) : null;
    } catch {
      collect = null;
    }
  }
  return collect;
}

function check(): void {
  const heap = getHeapStatistics();
  // idle: hardly anything allocated since the last check
  const idle = Math.abs(heap.used_heap_size - previous) < IDLE_BYTES;
  previous = heap.used_heap_size;
  if (skip > 0) {
    skip--;
    return;
  }
  if (!idle || heap.total_heap_size - heap.used_heap_size < SLACK_BYTES) return;
  const gc = collector();
  if (!gc) return;
  gc();
  const after = getHeapStatistics();
  previous = after.used_heap_size;
  // one collection may leave pages that its sweeping freed still committed: the next idle check collects again;
  // when collections keep leaving the heap as large, they space out (1, 2, 4 … checks)
  if (after.total_heap_size - after.used_heap_size < SLACK_BYTES) {
    backoff = 0;
  } else {
    skip = backoff;
    backoff = Math.min(MAX_BACKOFF, Math.max(1, backoff * 2));
  }
}

/**
 * Starts the idle collector (once per process: the first caller's period holds); the returned function releases this
 * caller's use of it.
 */
export function useIdleCollector(periodMs = CHECK_MS): () => void {
  users++;
  if (!timer) {
    previous = getHeapStatistics().used_heap_size;
    timer = setInterval(check, periodMs);
    timer.unref();
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--users === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}
