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
/** growth over the heap the last full collection left that is worth a collection */
const GROWTH_BYTES = 32 * 1024 * 1024;
/** less allocation than this over a check period counts as idle */
const IDLE_BYTES = 1024 * 1024;

let users = 0;
let timer: NodeJS.Timeout | undefined;
let collect: (() => void) | null | undefined;
let baseline = 0;
let previous = 0;

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
  const used = getHeapStatistics().used_heap_size;
  const idle = Math.abs(used - previous) < IDLE_BYTES;
  previous = used;
  if (used < baseline) baseline = used;
  if (!idle || used - baseline < GROWTH_BYTES) return;
  const gc = collector();
  if (!gc) return;
  gc();
  baseline = previous = getHeapStatistics().used_heap_size;
}

/**
 * Starts the idle collector (once per process: the first caller's period holds); the returned function releases this
 * caller's use of it.
 */
export function useIdleCollector(periodMs = CHECK_MS): () => void {
  users++;
  if (!timer) {
    baseline = previous = getHeapStatistics().used_heap_size;
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
