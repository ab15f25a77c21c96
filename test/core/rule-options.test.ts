/**
 * The rule options are declared once (src/core/rule-options.ts): the option table of docs/runtime.md §1.2 lists
 * exactly the declared options with their declared defaults and meanings, and validation reports every declared check.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  CHECK_ORDER,
  NESTED_RULE_OPTIONS,
  RESTART_CHECK_ORDER,
  RESTART_STRATEGY_OPTIONS,
  SCALAR_RULE_OPTIONS,
  builtInRuleOptions,
  everyOption,
  optionValueProblems,
  type ScalarOption,
} from '../../src/core/rule-options.js';
import { DEFAULT_RULE_OPTIONS } from '../../src/config/index.js';

const SECTION = '\u00a7';
const runtimeDoc = readFileSync(new URL('../../docs/runtime.md', import.meta.url), 'utf8');

/** The `| option | default | meaning |` rows of docs/runtime.md §1.2, by option name. */
function documentedRows(): Map<string, string> {
  const start = runtimeDoc.indexOf('### 1.2 Rule options');
  assert.ok(start >= 0, 'docs/runtime.md has its Rule options heading');
  const end = runtimeDoc.indexOf('\n### ', start + 1);
  const rows = new Map<string, string>();
  for (const line of runtimeDoc.slice(start, end).split('\n')) {
    const m = /^\| `([\w.]+)` \|(.*)$/.exec(line);
    if (m) rows.set(m[1], `| \`${m[1]}\` |${m[2]}`);
  }
  return rows;
}

/** A default as the table writes it. */
function renderDefault(v: unknown): string {
  if (v === '') return '`""`';
  if (Array.isArray(v)) return '`[]`';
  return String(v);
}

/** A meaning as the table writes it: cross-document citations without the docs/ folder, its own sections bare. */
function renderDoc(doc: string): string {
  return doc.replace(new RegExp(`docs/runtime\\.md ${SECTION}`, 'g'), SECTION).replace(/docs\/([\w-]+\.md)/g, '$1');
}

/** The table rows the declaration implies. */
function declaredRows(): Map<string, string> {
  const rows = new Map<string, string>();
  const row = (name: string, spec: { default: unknown; doc: string }): void => {
    rows.set(name, `| \`${name}\` | ${renderDefault(spec.default)} | ${renderDoc(spec.doc)} |`);
  };
  for (const [name, spec] of Object.entries(SCALAR_RULE_OPTIONS)) row(name, spec);
  for (const [name, spec] of Object.entries(RESTART_STRATEGY_OPTIONS)) row(`restartStrategy.${name}`, spec);
  row('cronDatetimeRange', { default: [], doc: NESTED_RULE_OPTIONS.cronDatetimeRange.doc });
  return rows;
}

test('docs/runtime.md §1.2 lists exactly the declared rule options, with their defaults and meanings', () => {
  const documented = documentedRows();
  const declared = declaredRows();
  const expectedTable = [...declared.values()].join('\n');
  assert.deepEqual(
    [...documented.keys()].sort(),
    [...declared.keys()].sort(),
    `the option table must list exactly the declared options; the declaration gives:\n${expectedTable}`,
  );
  for (const [name, line] of declared) {
    assert.equal(
      documented.get(name),
      line,
      `row of ${name} in docs/runtime.md §1.2; the declaration gives:\n${expectedTable}`,
    );
  }
});

test('the built-in defaults are the declared ones, and start/stop write back every declared option in decoded order', () => {
  const defaults = builtInRuleOptions();
  assert.deepEqual({ ...DEFAULT_RULE_OPTIONS, restartStrategy: { ...DEFAULT_RULE_OPTIONS.restartStrategy } }, defaults);
  assert.equal(defaults.bufferLength, 1024);
  assert.equal(defaults.restartStrategy.jitterFactor, 0.1);
  // Eddy's own options are written back only when set, so that a rule not using them keeps eKuiper's shape
  const own = Object.entries(SCALAR_RULE_OPTIONS as Record<string, ScalarOption>)
    .filter(([, spec]) => spec.own)
    .map(([name]) => name);
  assert.deepEqual(own, ['evalLimit', 'memoryLimit', 'node', 'parallelism']);
  assert.deepEqual(Object.keys(everyOption(defaults)), [
    ...Object.keys(SCALAR_RULE_OPTIONS).filter((name) => !own.includes(name)),
    'restartStrategy',
    'cronDatetimeRange',
  ]);
  assert.deepEqual(Object.keys(everyOption({ ...defaults, evalLimit: 2000, memoryLimit: 0, parallelism: 3 })), [
    ...Object.keys(SCALAR_RULE_OPTIONS).filter((name) => name !== 'node'),
    'restartStrategy',
    'cronDatetimeRange',
  ]);
  assert.equal(everyOption({ ...defaults, evalLimit: 2000 }).evalLimit, 2000);
});

test('every declared check is reported, once, in the documented order', () => {
  const checked = (fields: Record<string, ScalarOption>): string[] =>
    Object.entries(fields)
      .filter(([, spec]) => spec.check !== undefined)
      .map(([name]) => name)
      .sort();
  assert.deepEqual([...CHECK_ORDER].sort(), checked(SCALAR_RULE_OPTIONS));
  assert.deepEqual([...RESTART_CHECK_ORDER].sort(), checked(RESTART_STRATEGY_OPTIONS));

  const bad = builtInRuleOptions();
  Object.assign(bad, {
    checkpointInterval: -1,
    concurrency: -2,
    bufferLength: -3,
    lateTolerance: -4,
    qos: 3,
    evalLimit: -5,
    parallelism: 0,
  });
  Object.assign(bad.restartStrategy, { multiplier: 0, attempts: -1, delay: 0, maxDelay: 0, jitterFactor: 1 });
  assert.deepEqual(optionValueProblems(bad), [
    'checkpointInterval must be greater than or equal to 0, got -1',
    'concurrency must be greater than or equal to 0, got -2',
    'bufferLength must be greater than or equal to 0, got -3',
    'lateTolerance must be greater than or equal to 0, got -4',
    'qos must be 0, 1 or 2, got 3',
    'evalLimit must be greater than or equal to 0, got -5',
    'parallelism must be greater than or equal to 1, got 0',
    'restart multiplier must be greater than 0, got 0',
    'restart attempts must be greater than or equal to 0, got -1',
    'restart delay must be greater than 0, got 0',
    'restart maxDelay must be greater than 0, got 0',
    'restart jitterFactor must be between 0 and 1, got 1',
  ]);
  assert.deepEqual(optionValueProblems(builtInRuleOptions()), []);
});
