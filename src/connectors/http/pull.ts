/** Registers the httppull source and lookup table, which share one puller (httppull-source.ts). */
import type { Registry } from '../registry.js';
import { HttpPullSource } from './pull-source.js';
import { HttpPullLookup } from './pull-lookup.js';

export function registerHttpPull(registry: Registry): void {
  registry.registerSource('httppull', () => new HttpPullSource(registry));
  registry.registerLookup('httppull', () => new HttpPullLookup());
}
