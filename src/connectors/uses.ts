/**
 * The connectors and formats a rule uses, from its streams' and tables' definitions and its actions: where it may run
 * (workers/placement.ts asks each for its threads) and which connector families a rule worker loads before planning
 * it (`Connectors.prepareRule`) read the same list.
 */
import type { Props } from '../contracts/index.js';
import type { StreamDef } from '../catalog/types.js';
import { resolveSource } from '../runtime/source.js';
import { prop } from './props.js';
import type { CheckKind, Registry } from './registry.js';

export interface ConnectorUse {
  kind: CheckKind | 'format';
  type: string;
  props: Props;
}

/**
 * What reads stream or table `def`: a lookup table's lookup connector (opened by the rule's own thread), else the
 * source, and the format. Throws what `resolveSource` throws for a definition it cannot resolve.
 */
export function readerUses(def: StreamDef, r: Registry): ConnectorUse[] {
  const kind = def.kind === 'table' && def.options.KIND === 'lookup' ? 'lookup' : 'source';
  const { type, props } = resolveSource(r, def);
  return [
    { kind, type, props },
    { kind: 'format', type: String(props.format), props },
  ];
}

/** What action `type` with its own properties `raw` (and its resource's) sends with: the sink and its format. */
export function sinkUses(type: string, raw: unknown, r: Registry): ConnectorUse[] {
  const own = (raw ?? {}) as Props;
  const resourceId = prop(own, 'resourceId');
  const props = { ...r.sinkProps(type, typeof resourceId === 'string' ? resourceId : undefined), ...own };
  const format = prop(props, 'format');
  return [
    { kind: 'sink', type, props },
    { kind: 'format', type: typeof format === 'string' && format !== '' ? format : 'json', props },
  ];
}
