import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite.js';
import { RuleService } from '../../src/rules/service.js';
import { DEFAULTS, TestEngine, silent, until } from './fixtures.js';

const body = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, sql: 'SELECT * FROM s1', actions: [{ log: {} }], ...extra });

test('the listings kept as text follow every change: new, renamed, stopped, failing and deleted rules', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-listing-'));
  const store = new SqliteStore(join(dir, 'kv.db'));
  const engine = new TestEngine();
  const svc = new RuleService({ store, logger: silent, defaults: DEFAULTS, engine, cpuSampleMs: 50 });
  // the text must always be what serialising the listing objects gives
  const same = () => {
    assert.equal(svc.listJson(), JSON.stringify(svc.list()));
    assert.equal(svc.statusAllJson(), JSON.stringify(svc.statusAll()));
  };
  try {
    same();
    for (const id of ['r3', 'r1', 'r2']) await svc.create(body(id));
    same();
    assert.deepEqual(
      (JSON.parse(svc.listJson()) as Array<{ id: string }>).map((r) => r.id),
      ['r1', 'r2', 'r3'],
    );
    await svc.stop('r2');
    same();
    assert.match(svc.listJson(), /"id":"r2","name":"r2","status":"Stopped: canceled manually\."/);
    await svc.update('r3', body('r3', { name: 'third' }));
    await until(() => svc.statusText('r3') === 'Running', 10_000, 'r3 running again');
    same();
    assert.match(svc.listJson(), /"id":"r3","name":"third"/);
    // a run-time failure: the row of r1 shows the error, though nothing was created or deleted
    const r1 = engine.builderScript.built[1]; // built in creation order: r3, r1, r2
    r1.metrics[0].exceptions = 1;
    r1.metrics[0].lastException = 'broken pipe';
    r1.metrics[0].lastExceptionTime = Date.now();
    same();
    assert.equal(
      (JSON.parse(svc.statusAllJson()) as Record<string, { exceptions_total: number }>).r1.exceptions_total,
      1,
    );
    await svc.delete('r1');
    same();
    assert.doesNotMatch(svc.listJson(), /"r1"/);
  } finally {
    await svc.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
