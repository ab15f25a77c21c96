/**
 * The window types declared once (src/sql/windows.ts): each name is a window call of SQL and a graph `window` type,
 * and a SQL window and the graph window written with the same lengths plan to the same spec.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { plan } from './helpers.js';
import { parseWindow } from '../../src/plan/graph-props.js';
import { WINDOW_TYPES, windowFunctionType } from '../../src/sql/windows.js';
import type { WindowType } from '../../src/sql/ast.js';

const sizesOf = (w: { unitMs: number; length: number; interval: number; alignParam: number }) => ({
  unitMs: w.unitMs,
  length: w.length,
  interval: w.interval,
  alignParam: w.alignParam,
});

test('every window type has one declaration whose name is read back, in any case', () => {
  for (const [type, decl] of Object.entries(WINDOW_TYPES)) {
    assert.equal(windowFunctionType(decl.name), type);
    assert.equal(windowFunctionType(decl.name.toUpperCase()), type);
  }
  assert.equal(windowFunctionType('tumbling'), undefined);
  assert.equal(windowFunctionType('constructor'), undefined);
});

test('a SQL window and the graph window with the same lengths plan to the same sizes', () => {
  const cases: Array<[WindowType, string, Record<string, unknown>]> = [
    ['tumbling', 'TUMBLINGWINDOW(ss, 10)', { unit: 'ss', size: 10 }],
    ['hopping', 'HOPPINGWINDOW(ss, 10, 5)', { unit: 'ss', size: 10, interval: 5 }],
    ['sliding', 'SLIDINGWINDOW(mi, 2)', { unit: 'mi', size: 2 }],
    ['session', 'SESSIONWINDOW(ss, 20, 4)', { unit: 'ss', size: 20, interval: 4 }],
    ['count', 'COUNTWINDOW(5, 2)', { size: 5, interval: 2 }],
    ['count', 'COUNTWINDOW(5)', { size: 5 }],
  ];
  for (const [type, call, props] of cases) {
    const sql = plan(`SELECT count(*) FROM s GROUP BY ${call}`).window!;
    const graph = parseWindow({ type: WINDOW_TYPES[type].name, ...props });
    assert.equal(sql.type, type, call);
    assert.equal(graph.type, type, call);
    assert.deepEqual(sizesOf(graph), sizesOf(sql), call);
  }
});

test('the argument counts of the declaration are what the parser asks for', () => {
  for (const decl of Object.values(WINDOW_TYPES)) {
    if (!decl.timed) continue;
    const tooMany = Math.max(...decl.arities) + 1;
    const args = ['ss', ...Array.from({ length: tooMany - 1 }, () => '1')].join(', ');
    assert.throws(
      () => plan(`SELECT count(*) FROM s GROUP BY ${decl.name}(${args})`),
      new RegExp(`The arguments for ${decl.name} should be ${decl.arities.join(' or ')}\\.`),
    );
  }
});
