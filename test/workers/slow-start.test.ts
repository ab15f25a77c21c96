/**
 * A worker slow to start is no rule failure (docs/runtime.md §1.10): the time limit of a request to a worker counts
 * from when the worker has loaded. A pool whose request limit (200 ms) is far shorter than a worker's load (modules,
 * connector registry) plans and opens its first rule there, and the rule delivers; the node names the status shows
 * come from the worker's plan.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { WorkerPool } from '../../src/workers/pool.js';
import { builtInRuleOptions } from '../../src/core/rule-options.js';

test('a rule placed on a worker still loading is planned and opened there once it has loaded; it delivers', async () => {
  // the server runs no pool of its own: the test's pool is the only one
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: 'none' } });
  const pool = new WorkerPool({
    size: 1,
    home: s.homeDir,
    env: { ...process.env, KUIPER__BASIC__CONSOLELOG: 'false', KUIPER__BASIC__FILELOG: 'false' },
    store: s.app.store,
    catalog: s.app.catalog,
    functions: s.app.functions,
    local: s.app.runtime,
    connectors: s.app.connectors.registry,
    logger: s.app.logger,
    requestTimeoutMs: 200,
  });
  try {
    const r = await s.req('POST', '/streams', {
      sql: 'CREATE STREAM slowstart () WITH (TYPE="random", DATASOURCE="x")',
    });
    assert.equal(r.status, 201, r.text);
    const topo = pool.build(
      { id: 'slowstart', sql: 'SELECT count FROM slowstart', actions: [{ nop: {} }] },
      builtInRuleOptions(),
      s.app.logger,
    );
    assert.equal(topo.placement?.()?.worker, 0, 'the rule is placed on the worker');
    await topo.prepare?.();
    await topo.open();
    // planned by the worker: the names of its nodes came back from there
    const names = topo.nodes().map((n) => n.name);
    assert.equal(names[0], 'source_slowstart');
    assert.ok(
      names.some((n) => n.startsWith('sink_nop')),
      names.join(', '),
    );
    assert.deepEqual(topo.printable().sources, ['source_slowstart']);
    const end = Date.now() + 30_000;
    while (!(topo.nodes().at(-1)!.recordsIn > 0)) {
      assert.ok(Date.now() < end, 'rows reach the sink');
      await new Promise((res) => setTimeout(res, 100));
    }
    await topo.close();
  } finally {
    await pool.close();
    await s.dispose();
  }
});
