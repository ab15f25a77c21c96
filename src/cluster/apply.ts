/**
 * The one place where a change another node made is applied to this node (docs/cluster.md §2). The cluster store
 * hands every change of the shared metadata it did not make itself here, in the order the backend reports them; each
 * namespace that some service keeps in memory names the method that makes that service follow the stored value. The
 * other namespaces (import status, async tasks, broker sessions…) are read from the store when needed, so they need
 * nothing here.
 */
import type { Logger } from 'pino';
import { STREAM_NS, type Catalog } from '../catalog/catalog.js';
import { UPLOADS_NS, type UploadsService } from '../catalog/uploads.js';
import { SCHEMA_NS, type SchemaRegistry } from '../catalog/schemas.js';
import { CONF_KEYS_NS, type ConfKeys } from '../connectors/confkeys.js';
import { SCRIPT_NS, type ScriptService } from '../extensions/scripts.js';
import { RULE_NS, type RuleService } from '../rules/service.js';
import type { RemoteChangeHandler } from './store.js';

/** The services that keep shared metadata in memory. */
export interface RemoteTargets {
  catalog: Catalog;
  rules: RuleService;
  confKeys: ConfKeys;
  uploads: UploadsService;
  schemas: SchemaRegistry;
  scripts: ScriptService;
  logger: Logger;
  /** called after a rule changed (the placement looks again) */
  rulesChanged(): void;
}

export function remoteChangeApplier(t: RemoteTargets): RemoteChangeHandler {
  const byNamespace: Record<string, (key: string, value: string | undefined) => Promise<void> | void> = {
    [STREAM_NS]: (key, value) => t.catalog.applyStored(key, value),
    [RULE_NS]: async (key, value) => {
      await t.rules.applyStored(key, value);
      t.rulesChanged();
    },
    [CONF_KEYS_NS]: (key, value) => t.confKeys.applyStored(key, value),
    [UPLOADS_NS]: (key, value) => t.uploads.applyStored(key, value),
    [SCHEMA_NS]: (key, value) => t.schemas.applyStored(key, value),
    [SCRIPT_NS]: (key, value) => t.scripts.applyStored(key, value),
  };
  return async (ns, key, value) => {
    const apply = byNamespace[ns];
    if (!apply) return;
    try {
      await apply(key, value);
    } catch (err) {
      t.logger.warn({ err, ns, key }, 'a change made on another node could not be applied here');
    }
  };
}
