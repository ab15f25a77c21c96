/** Small helpers shared by the runtime tests. */
import { Tuple } from '../../src/contracts/index.js';
import type { Item } from '../../src/runtime/items.js';
import type { Receiver } from '../../src/runtime/node.js';
import type { WindowSpec } from '../../src/plan/plan.js';

/** Lets every queued drain (microtasks) and immediate run. */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Polls until `cond` holds; a generous deadline so a loaded machine only waits longer, never fails. */
export async function until(cond: () => boolean, what = 'condition', timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A receiver that records what reaches it. */
export class Collector implements Receiver {
  readonly items: Item[] = [];
  constructor(
    readonly name = 'collector',
    private readonly capacity = Infinity,
  ) {}
  accept(item: Item): boolean {
    if (this.items.length >= this.capacity) return false;
    this.items.push(item);
    return true;
  }
}

export function tuple(emitter: string, message: Record<string, unknown>, ts: number): Tuple {
  return new Tuple(emitter, message as Tuple['message'], {}, ts);
}

export function windowSpec(p: Partial<WindowSpec> & Pick<WindowSpec, 'type'>): WindowSpec {
  return {
    unitMs: 1000,
    length: 1000,
    interval: 0,
    alignParam: 1,
    filter: null,
    trigger: null,
    triggerUsesHits: false,
    ...p,
  };
}
