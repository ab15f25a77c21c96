/**
 * One declaration per connector (src/connectors/declaration.ts): every built-in states every field of its kind, names
 * a defaults file that ships in etc/, and is what the registry, the worker placement and the connector table of
 * docs/connectors.md read; a declaration that leaves a field out is refused, as a plugin's would be.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILTIN_DECLARATIONS } from '../../src/connectors/builtins.js';
import {
  DECLARATION_FIELDS,
  declarationProblems,
  type Declaration,
  type Threads,
} from '../../src/connectors/declaration.js';
import { startTestServer } from '../helpers/server.js';

const root = new URL('../..', import.meta.url).pathname;

test('every built-in declaration states every field of its kind, once per kind and type', () => {
  const seen = new Set<string>();
  for (const d of BUILTIN_DECLARATIONS) {
    assert.deepEqual(declarationProblems(d), [], `${d.kind} ${d.type}`);
    for (const field of DECLARATION_FIELDS[d.kind])
      assert.notEqual((d as unknown as Record<string, unknown>)[field], undefined, `${d.kind} ${d.type}.${field}`);
    const key = `${d.kind}/${d.type.toLowerCase()}`;
    assert.ok(!seen.has(key), `${key} is declared twice`);
    seen.add(key);
    // every built-in is listed under /metadata
    if ('meta' in d) assert.notEqual(d.meta, null, `${d.kind} ${d.type} has UI metadata`);
  }
});

test('the defaults file of every built-in source and lookup ships in etc/; a type both source and lookup reads one file', () => {
  const files = new Map<string, string | null>();
  for (const d of BUILTIN_DECLARATIONS) {
    if (d.kind !== 'source' && d.kind !== 'lookup') continue;
    assert.ok(d.defaults !== null, `${d.kind} ${d.type} names its defaults`);
    assert.ok(existsSync(join(root, 'etc', d.defaults)), `etc/${d.defaults}`);
    const other = files.get(d.type);
    if (other !== undefined) assert.equal(d.defaults, other, `source and lookup ${d.type} read one file`);
    files.set(d.type, d.defaults);
  }
});

/** What the registry says of a declaration without `field`. */
function expected(field: string): string {
  if (field === 'kind') return 'unknown declaration kind';
  if (field === 'type') return 'needs a type name';
  return `does not declare ${field}`;
}

test('a declaration without one of its fields is refused by the registry', async () => {
  const s = await startTestServer();
  try {
    const registry = s.app.connectors.registry;
    const whole = registry.declaration('sink', 'log')!;
    for (const field of DECLARATION_FIELDS.sink) {
      const partial: Record<string, unknown> = { ...whole, type: 'partial' };
      delete partial[field];
      assert.throws(
        () => registry.declare(partial as unknown as Declaration),
        new RegExp(`invalid connector declaration: .*${expected(field)}`),
        field,
      );
    }
    assert.throws(
      () => registry.declare({ ...whole, type: 'partial', threads: { worker: false } as unknown as Threads }),
      /threads must say why rules stay on the main thread/,
    );
    assert.equal(registry.sink('partial'), undefined);
  } finally {
    await s.dispose();
  }
});

/** A cell of the table: how a thread placement reads. */
function threadCell(t: Threads): string {
  if (t.worker === true) return 'worker';
  if (t.worker === false) return 'main';
  return 'depends';
}

/** The rows of the connector table of docs/connectors.md the declarations imply. */
function declaredRows(): string[] {
  const types = new Map<string, { source?: Declaration; lookup?: Declaration; sink?: Declaration }>();
  for (const d of BUILTIN_DECLARATIONS) {
    if (d.kind !== 'source' && d.kind !== 'lookup' && d.kind !== 'sink') continue;
    const entry = types.get(d.type) ?? {};
    entry[d.kind] = d;
    types.set(d.type, entry);
  }
  const cell = (d: Declaration | undefined): string => {
    if (!d || (d.kind !== 'source' && d.kind !== 'lookup' && d.kind !== 'sink')) return '—';
    return `${threadCell(d.threads)}${d.check ? ', check' : ''}`;
  };
  return [...types.entries()]
    .sort(([a], [b]) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1))
    .map(([type, e]) => {
      const src = e.source ?? e.lookup;
      const defaults = src && 'defaults' in src && src.defaults ? `\`etc/${src.defaults}\`` : '—';
      return `| \`${type}\` | ${cell(e.source)} | ${cell(e.lookup)} | ${cell(e.sink)} | ${defaults} |`;
    });
}

test('the connector table of docs/connectors.md is the declarations’, and docs/runtime.md §1.10 gives every reason a rule stays', async () => {
  const doc = readFileSync(join(root, 'docs/connectors.md'), 'utf8');
  const start = doc.indexOf('## Built-in connectors');
  assert.ok(start >= 0, 'docs/connectors.md has its table of built-in connectors');
  const end = doc.indexOf('\n## ', start + 1);
  const rows = doc
    .slice(start, end < 0 ? undefined : end)
    .split('\n')
    .filter((l) => l.startsWith('| `'));
  assert.deepEqual(rows, declaredRows(), 'rows of docs/connectors.md "Built-in connectors"');

  const runtime = readFileSync(join(root, 'docs/runtime.md'), 'utf8');
  // the text as it reads, whatever the line breaks
  const s10 = runtime.slice(runtime.indexOf('### 1.10'), runtime.indexOf('\n## 2.')).replace(/\s+/g, ' ');
  const s = await startTestServer();
  try {
    // the server's own declarations too (the protobuf format comes with its schema registry)
    for (const d of s.app.connectors.registry.declarations()) {
      if (!('threads' in d) || d.threads.worker === true) continue;
      assert.ok(s10.includes(d.threads.because), `docs/runtime.md §1.10 says why: ${d.threads.because}`);
    }
  } finally {
    await s.dispose();
  }
});
