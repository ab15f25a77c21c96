/**
 * Worker threads on modules of `src/`, compiled or not. Compiled (`npm start` runs `dist/server/`, an installed package)
 * the entry is a `.js` module and starts as it is. Under the TypeScript loader (tests, development) the entry is a
 * `.ts` module, which Node 20 cannot load in a worker by itself: it applies neither the parent's loader hooks nor an
 * `--import` to a worker's entry. The worker then first registers the loader and imports its entry from there — one
 * expression of glue, the only code a worker evaluates from a string.
 */
import { setFlagsFromString } from 'node:v8';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The URL of the module `name` (no extension) beside module `from` (an `import.meta.url`), as this build names it. */
export function siblingModule(from: string, name: string): URL {
  return new URL(`./${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from);
}

/**
 * The young generation of a worker thread's heap, MB. V8's default lets each thread grow it to 48 MB under a high
 * allocation rate and keep it: 300 rules on one shared MQTT stream at 500 msg/s peaked at 307 MB of RSS with two rule
 * workers, 262 MB with 16 MB, 213 MB with 8 MB (bench/server-scale.ts, 2026-11-28). The rules' objects die young or
 * live as long as the rule: a smaller young generation costs no measurable CPU per message (`npm run bench -- mqtt`).
 */
const WORKER_YOUNG_MB = 8;

/**
 * How far a heap's old generation may grow past what its last full collection left live before the next one, percent.
 * V8's own factor reaches 4× on a heap that is quick to mark: a rule worker's 20 MB of live objects (code, plans,
 * sources) then let the garbage that messages promote pile up to 50 MB before a collection, per worker. A full
 * collection of such a heap takes a few milliseconds. Process-wide (a V8 flag), set before the first worker starts.
 */
const OLD_GENERATION_GROWTH_PERCENT = 20;

let heapTuned = false;

/** Starts a worker thread whose entry is module `entry`. */
export function startWorker(entry: URL, options: WorkerOptions = {}): Worker {
  if (!heapTuned) {
    heapTuned = true;
    setFlagsFromString(`--heap-growing-percent=${OLD_GENERATION_GROWTH_PERCENT}`);
  }
  options = { ...options, resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB, ...options.resourceLimits } };
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, options);
  const loader = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const glue = `import(${loader}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(glue, { ...options, eval: true });
}
