/**
 * Gives memory back after a burst. The V8 embedded in Node 20 collects garbage only while JavaScript allocates, so the
 * heap that a burst of requests grew stays resident for as long as the process then idles (an edge device keeps
 * paying for a peak it no longer has). When the heap has grown well past what the last full collection left and
 * has stopped moving for a whole check period, one full collection runs: a pause of a few milliseconds at a moment
 * when nothing is being served. One collector per process, however many servers it runs.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const CHECK_MS = 5000;
/** growth of the committed heap over what the last full collection left that is worth a collection */
const GROWTH_BYTES = 16 * 1024 * 1024;
/** less allocation than this over a check period counts as idle */
const IDLE_BYTES = 1024 * 1024;

let users = 0;
let timer: NodeJS.Timeout | undefined;
let collect: (() => void) | null | undefined;
let baseline = 0;
let previous = 0;
/** full collections run since the heap last came back near its baseline */
let attempts = 0;

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
  // what V8 holds is the heap's committed size: after a burst it keeps the pages even when little on them is live
  if (heap.total_heap_size < baseline) baseline = heap.total_heap_size;
  if (!idle || heap.total_heap_size - baseline < GROWTH_BYTES) return;
  const gc = collector();
  if (!gc) return;
  gc();
  const after = getHeapStatistics();
  previous = after.used_heap_size;
  // one collection may leave pages its sweeping freed still committed: the next idle check collects once more; a
  // heap still this large after that is live memory, the new level to grow from
  if (after.total_heap_size - baseline < GROWTH_BYTES) {
    attempts = 0;
  } else if (++attempts >= 2) {
    baseline = after.total_heap_size;
    attempts = 0;
  }
}

/**
 * Starts the idle collector (once per process: the first caller's period holds); the returned function releases this
 * caller's use of it.
 */
export function useIdleCollector(periodMs = CHECK_MS): () => void {
  users++;
  if (!timer) {
    const heap = getHeapStatistics();
    baseline = heap.total_heap_size;
    previous = heap.used_heap_size;
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
