/**
 * Data export (docs/rest-api.md §7): every section, or what some rules need, gathered from the services that own the
 * data.
 */
import { isRecord } from '../core/fields.js';
import type { StreamDef } from '../catalog/types.js';
import type { ConfKind, ConfMap } from '../connectors/confkeys.js';
import { emptyBundle, type Bundle } from './bundle.js';
import { CONFIG_SECTIONS, EXTENSION_SECTIONS, type BundleDeps } from './ports.js';

/** Names written as calls in a rule's SQL (a superset of the functions it calls: only known ones count). */
function calledNames(sql: string): Set<string> {
  const out = new Set<string>();
  for (const m of sql.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*\(/g)) out.add(m[1]);
  return out;
}

/** Every section (docs/rest-api.md §7.1), all twelve keys present. */
export async function exportAll(deps: BundleDeps): Promise<Bundle> {
  const { catalog, rules, confKeys } = deps;
  const b = emptyBundle();
  b.streams = catalog.statements('stream');
  b.tables = catalog.statements('table');
  for (const id of rules.ids()) b.rules[id] = rules.exportText(id) ?? '';
  for (const [key, kind] of CONFIG_SECTIONS) {
    for (const type of confKeys.userTypes(kind)) {
      const map = confKeys.user(kind, type);
      if (Object.keys(map).length > 0) b[key][type] = JSON.stringify(map);
    }
  }
  for (const key of EXTENSION_SECTIONS) {
    const installer = deps.extensions?.[key];
    if (installer) b[key] = installer.installRecords();
  }
  b.Schema = { ...(await deps.schemas.records()), ...deps.customSchemas?.records() };
  b.uploads = await deps.uploads.records();
  b.scripts = deps.scripts.records();
  return b;
}

/**
 * What rules `ids` need (docs/rest-api.md §7.4): those rules (an unknown id exports as ""), the streams and tables they
 * read, the config keys named by those streams' CONF_KEY (of their effective TYPE) and the actions' resourceId,
 * every connection config, the schemas named by SCHEMAID / sink schemaId, and every upload.
 */
export async function exportRules(deps: BundleDeps, ids: readonly string[]): Promise<Bundle> {
  const { catalog, rules, confKeys } = deps;
  const b = emptyBundle();
  const wanted = new Set<string>();
  for (const id of ids) {
    const text = rules.exportText(id);
    b.rules[id] = text ?? '';
    if (text !== undefined) wanted.add(id);
  }
  const defs: StreamDef[] = [...catalog.list('stream'), ...catalog.list('table')].filter((d) =>
    rules.rulesUsing(d.name).some((r) => wanted.has(r)),
  );
  const sourceKeys = new Map<string, Set<string>>();
  const sinkKeys = new Map<string, Set<string>>();
  const schemaIds = new Set<string>();
  const add = (m: Map<string, Set<string>>, type: string, key: string) =>
    m.set(type, (m.get(type) ?? new Set()).add(key));
  for (const d of defs) {
    (d.kind === 'stream' ? b.streams : b.tables)[d.name] = d.sql;
    add(sourceKeys, (d.options.TYPE || 'mqtt').toLowerCase(), d.options.CONF_KEY || 'default');
    if (d.options.SCHEMAID)
      schemaIds.add(`${(d.options.FORMAT ?? 'json').toLowerCase()}_${d.options.SCHEMAID.split('.')[0]}`);
  }
  for (const id of wanted) {
    for (const action of rules.get(id)?.actions ?? []) {
      for (const [type, props] of Object.entries(action)) {
        if (!isRecord(props)) continue;
        const resourceId = props.resourceId;
        if (typeof resourceId === 'string' && resourceId !== '') add(sinkKeys, type, resourceId);
        const format = typeof props.format === 'string' ? props.format.toLowerCase() : 'json';
        if (typeof props.schemaId === 'string' && props.schemaId !== '' && format !== 'json') {
          schemaIds.add(`${format}_${props.schemaId.split('.')[0]}`);
        }
      }
    }
  }
  const pickKeys = (kind: ConfKind, keys: Map<string, Set<string>>, into: Record<string, string>) => {
    for (const [type, names] of keys) {
      const user = confKeys.user(kind, type);
      const picked: ConfMap = {};
      for (const n of names) {
        const hit = n in user ? n : n.toLowerCase() in user ? n.toLowerCase() : undefined;
        if (hit !== undefined) picked[hit] = user[hit];
      }
      if (Object.keys(picked).length > 0) into[type] = JSON.stringify(picked);
    }
  };
  pickKeys('sources', sourceKeys, b.sourceConfig);
  pickKeys('sinks', sinkKeys, b.sinkConfig);
  for (const type of confKeys.userTypes('connections')) {
    const map = confKeys.user('connections', type);
    if (Object.keys(map).length > 0) b.connectionConfig[type] = JSON.stringify(map);
  }
  // the extension items providing the source types of those streams, the sink types and the functions the rules call
  const sourceTypes = new Set(
    defs.flatMap((d) => [d.options.TYPE || 'mqtt', (d.options.TYPE || 'mqtt').toLowerCase()]),
  );
  const sinkTypes = new Set([...wanted].flatMap((id) => (rules.get(id)?.actions ?? []).flatMap((a) => Object.keys(a))));
  for (const key of EXTENSION_SECTIONS) {
    const installer = deps.extensions?.[key];
    if (!installer) continue;
    const records = installer.installRecords();
    const take = (owner: string | undefined) => {
      if (owner !== undefined && owner in records) b[key][owner] = records[owner];
    };
    const ownerOf = (kind: 'source' | 'sink', type: string) => {
      try {
        return installer.specOf?.(kind, type).name;
      } catch {
        return undefined;
      }
    };
    for (const t of sourceTypes) take(ownerOf('source', t));
    for (const t of sinkTypes) take(ownerOf('sink', t));
    if (!installer.describeFunction) continue;
    for (const id of wanted) {
      for (const fn of calledNames(rules.get(id)?.sql ?? '')) {
        let owner: string | undefined;
        try {
          const d = installer.describeFunction(fn);
          owner = d.serviceName ?? d.ServiceName;
        } catch {
          continue;
        }
        take(owner);
      }
    }
  }
  const schemaRecords = { ...(await deps.schemas.records()), ...deps.customSchemas?.records() };
  for (const key of schemaIds) if (key in schemaRecords) b.Schema[key] = schemaRecords[key];
  b.uploads = await deps.uploads.records();
  return b;
}
