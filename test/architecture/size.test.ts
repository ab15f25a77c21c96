/**
 * Holds `src/` to rooms a reader can take in (ARCHITECTURE.md, "Conventions"): no folder with more than 25 files, no
 * file over 800 lines except the tables, lexers and parsers named below, each with the reason it is one piece.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const src = join(root, 'src');

const MAX_FILES_PER_FOLDER = 25;
const MAX_LINES = 800;

/** Files allowed over {@link MAX_LINES}, with the reason each is one piece. */
const EXEMPT: Readonly<Record<string, string>> = {
  'src/template/funcs.ts': 'a table: the template functions (Go builtins and the sprig library), one entry each',
  'src/values/datetime.ts':
    "a lexer and parser: Go's and eKuiper's date layouts compiled to one token list that both formats and parses",
};

function folders(dir: string, out: string[] = []): string[] {
  out.push(dir);
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) folders(full, out);
  }
  return out;
}

const filesIn = (dir: string): string[] =>
  readdirSync(dir)
    .map((name) => join(dir, name))
    .filter((full) => statSync(full).isFile());

test(`no folder of src/ holds more than ${MAX_FILES_PER_FOLDER} files`, () => {
  const crowded = folders(src)
    .map((dir) => ({ dir: relative(root, dir), files: filesIn(dir).length }))
    .filter((f) => f.files > MAX_FILES_PER_FOLDER)
    .map((f) => `${f.dir}: ${f.files} files`);
  assert.deepEqual(crowded, [], 'folders over the limit');
});

test(`no file of src/ is over ${MAX_LINES} lines but the named tables, lexers and parsers`, () => {
  const long: string[] = [];
  const exemptSizes = new Map<string, number>();
  for (const dir of folders(src)) {
    for (const file of filesIn(dir)) {
      const rel = relative(root, file);
      const lines = readFileSync(file, 'utf8').split('\n').length;
      if (rel in EXEMPT) exemptSizes.set(rel, lines);
      else if (lines > MAX_LINES) long.push(`${rel}: ${lines} lines`);
    }
  }
  assert.deepEqual(long, [], 'files over the limit');
  // an exemption outlives its reason once the file is gone or short again
  const stale = Object.keys(EXEMPT).filter((rel) => (exemptSizes.get(rel) ?? 0) <= MAX_LINES);
  assert.deepEqual(stale, [], 'exemptions no longer needed (remove them)');
});
