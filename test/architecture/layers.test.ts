/**
 * Holds the code to the layer table in ARCHITECTURE.md: every import between folders of `src/` must be one the
 * table allows, every allowance must be used by some import (the table lists exactly the pairs the code has), and no
 * file may reach itself through its imports. The table is read from ARCHITECTURE.md, so the
 * document and the code cannot drift apart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import ts from 'typescript';

const root = new URL('../..', import.meta.url).pathname;
const src = join(root, 'src');

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) sourceFiles(full, out);
    else if (name.endsWith('.ts')) out.push(full);
  }
  return out;
}

/** The folder of `src/` a file belongs to; files directly under `src/` form the composition root `(root)`. */
function layerOf(file: string): string {
  const rel = relative(src, file).split('/');
  return rel.length > 1 ? rel[0]! : '(root)';
}

/** Relative imports of a file resolved to `.ts` paths (static, re-exports and dynamic `import()`). */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => normalize(join(dirname(file), name)).replace(/\.js$/, '.ts'));
}

/** Parses the "Layers" table of ARCHITECTURE.md: `| \`folder/\` | owns | may import |`. */
function layerTable(): Map<string, Set<string>> {
  const text = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8');
  const section = text.split(/^## /m).find((s) => s.startsWith('Layers'));
  assert.ok(section, 'ARCHITECTURE.md has a "## Layers" section');
  const table = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const m = /^`([a-z()]+)\/?`$/.exec(cells[1] ?? '');
    if (!m) continue;
    const allowed = new Set([...(cells[3] ?? '').matchAll(/`([a-z()]+)\/?`/g)].map((x) => x[1]!));
    table.set(m[1]!, allowed);
  }
  return table;
}

test('every import between folders of src/ is one the layer table of ARCHITECTURE.md allows', () => {
  const table = layerTable();
  const files = sourceFiles(src);
  const unknown = new Set<string>();
  const violations: string[] = [];
  for (const file of files) {
    const from = layerOf(file);
    if (!table.has(from)) unknown.add(from);
    for (const target of importsOf(file)) {
      const to = layerOf(target);
      if (to === from) continue;
      if (!table.get(from)?.has(to))
        violations.push(`${relative(root, file)} imports ${relative(root, target)} (${from} → ${to})`);
    }
  }
  assert.deepEqual([...unknown], [], 'every folder of src/ has a row in the layer table');
  assert.deepEqual(violations, [], 'imports against the layer table');
});

test('every allowance of the layer table is used by some import, so the table says what the code does', () => {
  const table = layerTable();
  const used = new Map<string, Set<string>>();
  for (const file of sourceFiles(src)) {
    const from = layerOf(file);
    for (const target of importsOf(file)) {
      const to = layerOf(target);
      if (to === from) continue;
      if (!used.has(from)) used.set(from, new Set());
      used.get(from)!.add(to);
    }
  }
  const unused: string[] = [];
  for (const [from, allowed] of table) {
    for (const to of allowed) if (!used.get(from)?.has(to)) unused.push(`${from} → ${to}`);
  }
  assert.deepEqual(unused, [], 'allowances of the layer table no import uses (remove them from ARCHITECTURE.md)');
});

test('the layer table itself has no cycle, so "below" means something', () => {
  const table = layerTable();
  const state = new Map<string, 'open' | 'done'>();
  const visit = (layer: string, path: string[]): void => {
    if (state.get(layer) === 'done') return;
    assert.notEqual(state.get(layer), 'open', `layer cycle: ${[...path, layer].join(' → ')}`);
    state.set(layer, 'open');
    for (const next of table.get(layer) ?? []) visit(next, [...path, layer]);
    state.set(layer, 'done');
  };
  for (const layer of table.keys()) visit(layer, []);
});

test('no source file reaches itself through its imports', () => {
  const files = sourceFiles(src);
  const graph = new Map(files.map((f) => [f, importsOf(f).filter((t) => t.startsWith(src))]));
  // Tarjan's strongly connected components: any component of more than one file is a cycle.
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const strong = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        comp.push(relative(root, w));
      } while (w !== v);
      if (comp.length > 1) cycles.push(comp.sort());
    }
  };
  for (const f of files) if (!idx.has(f)) strong(f);
  assert.deepEqual(cycles, [], 'import cycles');
});
