/**
 * The main thread's young generation. V8 grows it from two 1 MB semi-spaces up to 32 MB as soon as much survives a
 * scavenge — parsing the server's modules is enough — and never gives that back: 14 MB of resident memory on a thread
 * that, with rule workers, runs no rule and serves REST requests whose objects die young. The process entry
 * (`main.ts`) holds it at its initial size before the server's modules load, and lets it grow again only when the
 * server runs its rules on this thread (`basic.workers: none`, no worker pool): a pool of any size, one worker
 * included, carries the rules, and the few that stay here for their connectors (zmq) share the held size. V8 reads
 * the growth factor when it would grow a young generation, and the rule workers' own bound (`threads.ts`) still lets
 * theirs reach that bound.
 */
import { setFlagsFromString } from 'node:v8';

/** V8's own factor (its default): each growth doubles the semi-spaces. */
const DEFAULT_GROWTH = 2;

export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

export function releaseYoungGeneration(): void {
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH}`);
}
