/**
 * The scripts service over the real SQLite store and the built-in function registry: registration as SQL functions,
 * clashes, updates and deletes as running call sites see them, persistence, and the bundle items.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore, type KVStore } from '../../src/store/index.js';
import { createBuiltinRegistry, createFuncContext, type FunctionDef } from '../../src/functions/index.js';
import { ScriptService, decodeScript, type ScriptRecord } from '../../src/extensions/scripts.js';
import { EddyError } from '../../src/core/errors.js';

async function withStore(fn: (store: KVStore, dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-scripts-'));
  const store = new SqliteStore(join(dir, 'kv.db'));
  try {
    await fn(store, dir);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const ctx = createFuncContext();
const rec = (id: string, script: string, isAgg = false, description = ''): ScriptRecord => ({
  id,
  description,
  script,
  isAgg,
});

/** Runs a call site the way the compiler does: one instance per site. */
function site(def: FunctionDef | undefined): FunctionDef {
  assert.ok(def, 'the function is registered');
  return def.instantiate ? def.instantiate() : def;
}

async function rejects(p: Promise<unknown>, code: number, message: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof EddyError, String(e));
    assert.equal(e.message, message);
    assert.equal(e.code, code);
    return true;
  });
}

test('a script becomes a scalar or aggregate SQL function; each call site owns its engine', async () => {
  await withStore(async (store) => {
    const functions = createBuiltinRegistry();
    const svc = new ScriptService({ store, functions });
    await svc.create(rec('f2c', 'function f2c(f) { return (f - 32) * 5 / 9; }', false, 'fahrenheit to celsius'));
    await svc.create(
      rec('spread', 'function spread(xs) { return Math.max.apply(null, xs) - Math.min.apply(null, xs); }', true),
    );
    await svc.create(rec('tick', 'var n = 0; function tick() { return ++n; }'));
    assert.equal(functions.kindOf('f2c'), 'scalar');
    assert.equal(functions.kindOf('F2C'), 'scalar', 'SQL function names are case-insensitive');
    assert.equal(functions.kindOf('spread'), 'aggregate');
    assert.equal(functions.validateCall('f2c', []), undefined, 'no creation-time argument checks, like eKuiper');
    assert.equal(site(functions.get('f2c')).exec!([212n], ctx), 100n);
    assert.equal(site(functions.get('spread')).aggregate!([[3n, 9n, 4n]], ctx), 6n);
    const a = site(functions.get('tick'));
    const b = site(functions.get('tick'));
    assert.deepEqual([a.exec!([], ctx), a.exec!([], ctx), b.exec!([], ctx)], [1n, 2n, 1n]);
    assert.deepEqual(svc.ids(), ['f2c', 'spread', 'tick']);
    assert.deepEqual(svc.get('f2c'), {
      id: 'f2c',
      description: 'fahrenheit to celsius',
      script: 'function f2c(f) { return (f - 32) * 5 / 9; }',
      isAgg: false,
    });
    assert.equal(svc.get('nope'), undefined);
  });
});

test('refused scripts: load failures, clashes with built-ins and other scripts, duplicates; nothing is kept', async () => {
  await withStore(async (store) => {
    const functions = createBuiltinRegistry();
    const svc = new ScriptService({ store, functions, timeoutMs: 500 });
    await svc.create(rec('Area', 'function Area(w, h) { return w * h; }'));
    await rejects(svc.create(rec('g', 'function f() {}')), 1000, 'cannot find function "g" in script');
    await rejects(
      svc.create(rec('g', 'function g() {} throw new RangeError("early")')),
      1000,
      'failed to interprete script: RangeError: early',
    );
    await rejects(
      svc.create(rec('g', 'for (;;) {} function g() {}')),
      1000,
      'failed to interprete script: script execution timed out after 500ms',
    );
    await rejects(
      svc.create(rec('abs', 'function abs(x) { return x; }')),
      1000,
      'function abs is a built-in function and cannot be redefined by a javascript function',
    );
    await rejects(
      svc.upsert(rec('Concat', 'function Concat(x) { return x; }')),
      1000,
      'function Concat is a built-in function and cannot be redefined by a javascript function',
    );
    await rejects(
      svc.create(rec('area', 'function area(w, h) { return w * h; }')),
      1000,
      'function area conflicts with javascript function Area (function names are case-insensitive)',
    );
    await rejects(svc.create(rec('Area', 'function Area() { return 0; }')), 1000, 'Item Area already exists');
    assert.deepEqual(svc.ids(), ['Area']);
    assert.deepEqual(await store.keys('script'), ['Area']);
    assert.equal(functions.get('abs')?.kind, 'scalar', 'the built-in is untouched');
    assert.equal(site(functions.get('area')).exec!([2n, 3n], ctx), 6n, 'the first script is untouched');
  });
});

test('update and delete: new call sites see the change, existing ones keep their engine', async () => {
  await withStore(async (store) => {
    const functions = createBuiltinRegistry();
    const svc = new ScriptService({ store, functions });
    await svc.create(rec('v', 'function v() { return 1; }'));
    const before = site(functions.get('v'));
    await svc.upsert(rec('v', 'function v() { return [2]; }', false, 'second'));
    assert.deepEqual(site(functions.get('v')).exec!([], ctx), [2n]);
    assert.equal(before.exec!([], ctx), 1n, 'a compiled call site keeps the old script');
    await svc.upsert(rec('v', 'function v(xs) { return xs.length; }', true));
    assert.equal(functions.kindOf('v'), 'aggregate', 'isAgg can change with an update');

    await svc.delete('v');
    assert.equal(functions.has('v'), false);
    assert.equal(functions.validateCall('v', []), 'function v not found');
    assert.equal(before.exec!([], ctx), 1n, 'and keeps it after a delete');
    assert.deepEqual(await store.keys('script'), []);
    await rejects(svc.delete('v'), 1002, 'v is not found');
    await svc.upsert(rec('w', 'function w() { return "new"; }'));
    assert.equal(site(functions.get('w')).exec!([], ctx), 'new', 'upsert creates');
  });
});

test('stored scripts are registered again at start; one that no longer loads is listed but not callable', async () => {
  await withStore(async (store) => {
    const first = new ScriptService({ store, functions: createBuiltinRegistry() });
    await first.create(rec('twice', 'function twice(x) { return x * 2; }', false, 'doubles'));
    await first.create(
      rec('total', 'function total(xs) { var s = 0; xs.forEach(function (x) { s += x; }); return s; }', true),
    );
    await store.set(
      'script',
      'broken',
      JSON.stringify({ id: 'broken', description: '', script: 'function nope() {}', isAgg: false }),
    );
    await store.set('script', 'garbage', '{not json');

    const functions = createBuiltinRegistry();
    const again = new ScriptService({ store, functions });
    await again.load();
    assert.deepEqual(again.ids(), ['twice', 'total', 'broken']);
    assert.deepEqual(again.get('twice'), {
      id: 'twice',
      description: 'doubles',
      script: 'function twice(x) { return x * 2; }',
      isAgg: false,
    });
    assert.equal(site(functions.get('twice')).exec!([21n], ctx), 42n);
    assert.equal(site(functions.get('total')).aggregate!([[1n, 2.5]], ctx), 3.5);
    assert.equal(functions.has('broken'), false);
    await again.delete('broken');
    assert.deepEqual(again.ids(), ['twice', 'total']);
  });
});

test('bundle items: export texts, checks with eKuiper texts, upsert by key, remove all', async () => {
  await withStore(async (store) => {
    const functions = createBuiltinRegistry();
    const svc = new ScriptService({ store, functions });
    await svc.create(rec('a', 'function a() { return 1; }', false, 'first'));
    assert.deepEqual(svc.records(), {
      a: '{"id":"a","description":"first","script":"function a() { return 1; }","isAgg":false}',
    });

    const checkError = (key: string, text: string): string => {
      try {
        svc.check(key, text);
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    };
    assert.equal(checkError('b', '{"script":"function b() {}"}'), '', 'the id defaults to the key');
    assert.match(checkError('b', '{"script":'), /^fail to unmarshal the script b: /);
    assert.equal(checkError('b', '{"id":"c","script":"function c() {}"}'), 'the script id c does not match the key b');
    assert.equal(checkError('b', '{"id":"b","script":"function x() {}"}'), 'cannot find function "b" in script');
    assert.equal(
      checkError('b', '{"id":"b","isAgg":"yes"}'),
      'fail to unmarshal the script b: json: cannot unmarshal string into Go struct field Script.isAgg of type bool',
    );
    assert.deepEqual(svc.ids(), ['a'], 'checks change nothing');

    await svc.upsertText('b', '{"script":"function b(xs) { return xs.length; }","isAgg":true}');
    await svc.upsertText('a', '{"id":"a","script":"function a() { return 2; }"}');
    assert.equal(site(functions.get('a')).exec!([], ctx), 2n);
    assert.equal(functions.kindOf('b'), 'aggregate');
    await svc.removeAll();
    assert.deepEqual(svc.ids(), []);
    assert.deepEqual(await store.keys('script'), []);
    assert.equal(functions.has('a') || functions.has('b'), false);
  });
});

test('request bodies decode like Go: case-insensitive fields, null leaves a field empty, wrong types are refused', () => {
  assert.deepEqual(decodeScript({ ID: 'x', Script: 's', isagg: true, extra: 1 }), {
    id: 'x',
    description: '',
    script: 's',
    isAgg: true,
  });
  assert.deepEqual(decodeScript(null), { id: '', description: '', script: '', isAgg: false });
  assert.deepEqual(decodeScript({ id: null, description: null }), {
    id: '',
    description: '',
    script: '',
    isAgg: false,
  });
  assert.throws(() => decodeScript([1]), { message: 'json: cannot unmarshal array into Go value of type js.Script' });
  assert.throws(() => decodeScript('x'), { message: 'json: cannot unmarshal string into Go value of type js.Script' });
  assert.throws(() => decodeScript({ description: 5 }), {
    message: 'json: cannot unmarshal number into Go struct field Script.description of type string',
  });
});
