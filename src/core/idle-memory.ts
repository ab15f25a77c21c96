/**
 * Gives memory back after a burst. The V8 embedded in Node 20 collects garbage only while JavaScript allocates, so the
 * heap that a burst of requests or messages grew stays resident for as long as the thread then idles (an edge device
 * keeps paying for a peak it no longer has). When the old generation V8 holds has grown by a wide margin since the
 * last collection (or since the collector started) and the heap has not moved for a whole check period, one full
 * collection runs: a pause of a few milliseconds at a moment when nothing is being served, and once more at the next
 * check if it left the heap holding much more than is live. After that the old generation must grow again (a new
 * burst) before it is collected again. The young generation is left out: it stays committed at its size whatever a
 * collection frees. One collector per thread (the main thread and each rule worker have a heap of their own), however
 * many servers it runs.
 */
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const CHECK_MS = 5000;
/** growth of the old generation V8 holds, since the last collection left it, that makes a burst worth collecting */
const GROWTH_BYTES = 16 * 1024 * 1024;
/** old generation held beyond its live part after a collection that is worth the one follow-up collection */
const SLACK_BYTES = 16 * 1024 * 1024;
/** less allocation than this over a check period counts as idle */
const IDLE_BYTES = 1024 * 1024;

let users = 0;
let timer: NodeJS.Timeout | undefined;
let collect: (() => void) | null | undefined;
let previous = 0;
/** the old generation V8 held when the collector started or the last collection left it */
let heldAfter = 0;
/** the last collection left the heap holding much more than is live: the next idle check collects once more */
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

/** The heap's used part, and the old generation's (every space but the young generation): what V8 holds, what is used. */
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
  if (!idle) return;
  // what V8 counts as used includes the garbage no collection has marked yet, so the growth tells a burst, not the
  // slack; a heap that has not grown since the last collection (and its one follow-up) has nothing new to give back:
  // collecting it again at every check would cost CPU while worker threads are busy and this thread merely idles
  if (!followUp && heap.oldHeld < heldAfter + GROWTH_BYTES) return;
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
 * Starts the idle collector (once per thread: the first caller's period holds); the returned function releases this
 * caller's use of it.
 */
export function useIdleCollector(periodMs = CHECK_MS): () => void {
  users++;
  if (!timer) {
    const now = heapNow();
    previous = now.used;
    heldAfter = now.oldHeld;
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
