/**
 * Gives memory back after a burst. The V8 embedded in Node 20 collects garbage only while JavaScript allocates, so the
 * heap that a burst of requests grew stays resident for as long as the process then idles (an edge device keeps
 * paying for a peak it no longer has). When the heap V8 holds exceeds its live part by a wide margin and the live
 * part has not moved for a whole check period, one full collection runs: a pause of a few milliseconds at a moment
 * when nothing is being served, and once more at the next check if the heap stayed as large. After that the heap must
 * grow again (a new burst) before it is collected again. One collector per thread (the main thread and each rule
 * worker: each has a heap of its own), however many servers it runs.
 */
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const CHECK_MS = 5000;
/**
 * old-generation heap held beyond its live part that is worth a collection (the young generation is left out: it
 * stays committed at its size whatever a collection frees)
 */
const SLACK_BYTES = 16 * 1024 * 1024;
/** less allocation than this over a check period counts as idle */
const IDLE_BYTES = 1024 * 1024;
/** growth of the heap V8 holds, since the last collection left it, that makes a new burst worth collecting */
const REGROWTH_BYTES = 16 * 1024 * 1024;

let users = 0;
let timer: NodeJS.Timeout | undefined;
let collect: (() => void) | null | undefined;
let previous = 0;
/** the old generation V8 held after the last collection (0: none yet) */
let heldAfter = 0;
/** the last collection left the heap as large: the next idle check collects once more */
let followUp = false;

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

/** The heap's live part, and the old generation's (every space but the young generation): what V8 holds, what is live. */
function heapNow(): { used: number; oldHeld: number; oldUsed: number } {
  const heap = getHeapStatistics();
  let oldHeld = heap.total_heap_size;
  let oldUsed = heap.used_heap_size;
  for (const s of getHeapSpaceStatistics()) {
    if (s.space_name !== 'new_space' && s.space_name !== 'new_large_object_space') continue;
    oldHeld -= s.space_size;
    oldUsed -= s.space_used_size;
  }
  return { used: heap.used_heap_size, oldHeld, oldUsed };
}

function check(): void {
  const heap = heapNow();
  // idle: hardly anything allocated since the last check
  const idle = Math.abs(heap.used - previous) < IDLE_BYTES;
  previous = heap.used;
  if (!idle || heap.oldHeld - heap.oldUsed < SLACK_BYTES) return;
  // a heap that has not grown since the last collection (and its one follow-up) has nothing new to give back:
  // collecting it again at every check would cost CPU while worker threads are busy and this thread merely idles
  if (heldAfter > 0 && !followUp && heap.oldHeld < heldAfter + REGROWTH_BYTES) return;
  const gc = collector();
  if (!gc) return;
  gc();
  const after = heapNow();
  previous = after.used;
  heldAfter = after.oldHeld;
  // one collection may leave pages that its sweeping freed still committed: the next idle check collects once more
  followUp = !followUp && after.oldHeld - after.oldUsed >= SLACK_BYTES;
}

/**
 * Starts the idle collector (once per process: the first caller's period holds); the returned function releases this
 * caller's use of it.
 */
export function useIdleCollector(periodMs = CHECK_MS): () => void {
  users++;
  if (!timer) {
    previous = heapNow().used;
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
