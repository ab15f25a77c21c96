/**
 * No dead exports: every name a file of `src/` exports is used somewhere — in its own file (a type that appears in an
 * exported signature), or by another file of `src/`, `test/`, `bench/` or `scripts/`. The check is by word: a name
 * written nowhere else cannot be imported anywhere.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;

function filesUnder(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) filesUnder(full, out);
    else if (/\.(ts|mjs|js)$/.test(name)) out.push(full);
  }
  return out;
}

const DECLARED =
  /^export (?:declare )?(?:async )?(?:abstract )?(?:function\*?|const|let|class|interface|type|enum) ([A-Za-z_$][\w$]*)/gm;
const WORD = /[A-Za-z_$][\w$]*/g;

test('every export of src/ is used somewhere', () => {
  const files = ['src', 'test', 'bench', 'scripts'].flatMap((d) => filesUnder(join(root, d)));
  const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
  // word → how many files write it, and how often each file does
  const filesWriting = new Map<string, number>();
  const counts = new Map<string, Map<string, number>>();
  for (const [file, t] of text) {
    const mine = new Map<string, number>();
    for (const [w] of t.matchAll(WORD)) mine.set(w, (mine.get(w) ?? 0) + 1);
    counts.set(file, mine);
    for (const w of mine.keys()) filesWriting.set(w, (filesWriting.get(w) ?? 0) + 1);
  }
  const dead: string[] = [];
  for (const [file, t] of text) {
    if (!file.startsWith(join(root, 'src'))) continue;
    for (const [, name] of t.matchAll(DECLARED)) {
      const elsewhere = (filesWriting.get(name!) ?? 0) > 1;
      const inOwnFile = (counts.get(file)!.get(name!) ?? 0) > 1;
      if (!elsewhere && !inOwnFile) dead.push(`${relative(root, file)}: ${name}`);
    }
  }
  assert.deepEqual(dead, [], 'exports no file uses (remove them)');
});
