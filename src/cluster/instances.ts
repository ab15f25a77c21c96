/**
 * The instances of a parallel rule that run on this node (docs/cluster.md §6). The rules service builds a topology per
 * rule; for a rule with `parallelism` > 1 the cluster's builder builds one per instance placed here, each on a
 * definition naming its instance (its MQTT sources then share the topics through `$share/<rule id>/…`, its state is
 * its own), and hands them over as one topology whose metrics are their sums.
 */
import type { Logger } from 'pino';
import type { RuleDef, RuleOptions, Topology, TopologyBuilder } from '../contracts/index.js';
import { InstancesTopology } from '../runtime/instances.js';

export { InstancesTopology } from '../runtime/instances.js';

/** Builds each rule as the instances placed on this node ask. */
export class InstanceBuilder implements TopologyBuilder {
  constructor(
    private readonly inner: TopologyBuilder,
    /** the instances of a parallel rule that run on this node (none when it runs elsewhere) */
    private readonly localInstances: (rule: string) => number[],
  ) {}

  build(rule: RuleDef, options: RuleOptions, logger: Logger): Topology {
    // planned whole once, whatever runs here: the same errors (and the parallelism check) everywhere
    const whole = this.inner.build(rule, options, logger);
    if (options.parallelism <= 1) return whole;
    const here = this.localInstances(rule.id);
    if (here.length === 0) return whole;
    const count = options.parallelism;
    const parts = here.map((index) => this.inner.build({ ...rule, instance: { index, count } }, options, logger));
    return parts.length === 1 ? parts[0] : new InstancesTopology(parts);
  }
}
