/**
 * The function palette of eKuiper's UI (`GET /metadata/functions`, docs/rest-api.md §16.13), generated from the
 * registry: groups in the shape of eKuiper's `etc/functions/*.json` files, `internal` for the built-ins, one group
 * per plugin providing functions, `external` for the rest (JavaScript, service and portable plugin functions).
 */
import type { FunctionRegistry } from './registry.js';
import { createBuiltinRegistry } from './builtins.js';

const same = (text: string) => ({ en_US: text, zh_CN: text });

const ABOUT = (description: string) => ({
  trial: false,
  author: { name: 'Eddy', email: '', company: '', website: '' },
  helpUrl: same('https://ekuiper.org/docs/en/v1.14/sqls/functions/overview.html'),
  description: same(description),
});

/** Where the functions that are not built-ins come from: the plugin (native or wasm) providing each. */
export interface FunctionOrigins {
  udf(name: string): { plugin: string } | undefined;
}

function functionEntry(name: string, kind: string) {
  const aggregate = kind === 'aggregate';
  return {
    name,
    example: `${name}(col1)`,
    ...(aggregate ? { aggregate: true } : {}),
    hint: same(`${kind} function ${name}`),
    args: [],
    return: { type: 'any', hint: same('result') },
    node: { category: 'function', icon: 'iconPath', label: same(name) },
  };
}

/** The function groups: `internal` (built-ins), one per plugin, and `external` (scripts, services, portables). */
export function functionCatalog(functions: FunctionRegistry, origins: FunctionOrigins): unknown[] {
  const builtins = createBuiltinRegistry();
  const groups = new Map<string, Array<ReturnType<typeof functionEntry>>>([['internal', []]]);
  const add = (group: string, entry: ReturnType<typeof functionEntry>) =>
    groups.set(group, [...(groups.get(group) ?? []), entry]);
  for (const name of functions.names().sort()) {
    const def = functions.get(name);
    if (!def) continue;
    const entry = functionEntry(def.name, def.kind);
    if (builtins.has(name)) add('internal', entry);
    else add(origins.udf(name)?.plugin ?? 'external', entry);
  }
  return [...groups].map(([name, fns]) => ({
    about: ABOUT(
      name === 'internal'
        ? 'Built-in SQL functions'
        : name === 'external'
          ? 'JavaScript, external service and portable plugin functions'
          : `Functions of plugin ${name}`,
    ),
    name,
    functions: fns,
  }));
}
