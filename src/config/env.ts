/**
 * eKuiper-style environment overrides (docs/rest-api.md §17.3): `<FILE>__<KEY>__<SUBKEY>=value` sets a key of the YAML
 * file whose upper-cased base name is FILE. Keys match case-insensitively; missing sections are created.
 */
export type ConfigTree = Record<string, unknown>;

/** Types a value the way eKuiper does: integer, then boolean, then float, else string; `[a,b]` is a list. */
export function typeEnvValue(raw: string): unknown {
  const s = raw.trim();
  if (s.startsWith('[') && s.endsWith(']')) {
    const inner = s.slice(1, -1).trim();
    return inner === '' ? [] : inner.split(',').map((p) => typeEnvValue(p));
  }
  if (/^[+-]?\d+$/.test(s)) return Number(s);
  const lower = s.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return Number(s);
  return raw;
}

function isTree(v: unknown): v is ConfigTree {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Applies every `PREFIX__...` variable of `env` to `tree` in place and returns it. */
export function applyEnvOverrides(tree: ConfigTree, prefix: string, env: NodeJS.ProcessEnv = process.env): ConfigTree {
  const head = `${prefix.toUpperCase()}__`;
  for (const [name, raw] of Object.entries(env)) {
    if (raw === undefined || !name.toUpperCase().startsWith(head)) continue;
    const path = name
      .slice(head.length)
      .split('__')
      .filter((p) => p !== '');
    if (path.length === 0) continue;
    let node: ConfigTree = tree;
    for (let i = 0; i < path.length; i++) {
      const wanted = path[i].toLowerCase();
      const existing = Object.keys(node).find((k) => k.toLowerCase() === wanted);
      const key = existing ?? path[i].toLowerCase();
      if (i === path.length - 1) {
        node[key] = typeEnvValue(raw);
      } else {
        if (!isTree(node[key])) node[key] = {};
        node = node[key] as ConfigTree;
      }
    }
  }
  return tree;
}
