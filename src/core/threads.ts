/**
 * Worker threads on modules of `src/`, compiled or not. Compiled (`npm start` runs `dist/server/`, an installed package)
 * the entry is a `.js` module and starts as it is. Under the TypeScript loader (tests, development) the entry is a
 * `.ts` module, which Node 20 cannot load in a worker by itself: it applies neither the parent's loader hooks nor an
 * `--import` to a worker's entry. The worker then first registers the loader and imports its entry from there — one
 * expression of glue, the only code a worker evaluates from a string.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The URL of the module `name` (no extension) beside module `from` (an `import.meta.url`), as this build names it. */
export function siblingModule(from: string, name: string): URL {
  return new URL(`./${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from);
}

/**
 * The young generation of a worker thread's heap, MB. V8's default lets each thread grow it to 48 MB under a high
 * allocation rate and keep it: 300 rules on one shared MQTT stream at 500 msg/s peaked at 307 MB of RSS with two rule
 * workers, 262 MB with this limit, at the same CPU per message (bench/server-scale.ts, 2026-11-28).
 */
const WORKER_YOUNG_MB = 16;

/** Starts a worker thread whose entry is module `entry`. */
export function startWorker(entry: URL, options: WorkerOptions = {}): Worker {
  options = { ...options, resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB, ...options.resourceLimits } };
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, options);
  const loader = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const glue = `import(${loader}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
  return new Worker(glue, { ...options, eval: true });
}
