import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createHarness } from './harness.js';
import { EddyError } from '../../src/core/errors.js';
import { loadConfig, resolveHome } from '../../src/config/index.js';
import { testSource } from '../helpers/declare.js';

const logger = pino({ level: 'silent' });

test('build: unknown sink type is error 2201, unknown stream 2101, and nothing is opened', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM b1 (a BIGINT) WITH (DATASOURCE="t/b1", TYPE="memory")');
    const options = loadConfig(resolveHome(process.cwd()), {}).rule;
    assert.throws(
      () => h.builder.build({ id: 'b', sql: 'SELECT a FROM b1', actions: [{ foo: {} }] }, options, logger),
      (e: unknown) => e instanceof EddyError && e.code === 2201 && e.message === 'sink foo is not defined',
    );
    assert.throws(
      () => h.builder.build({ id: 'b', sql: 'SELECT a FROM nosuch', actions: [{ nop: {} }] }, options, logger),
      (e: unknown) => e instanceof EddyError && e.code === 2101,
    );
    assert.equal(h.builder.shared.size(), 0);
  } finally {
    await h.close();
  }
});

test('open fails cleanly when a source cannot be provisioned', async () => {
  const h = await createHarness();
  try {
    h.ddl('CREATE STREAM b2 (a BIGINT) WITH (DATASOURCE="", TYPE="memory")');
    const options = loadConfig(resolveHome(process.cwd()), {}).rule;
    const topo = h.builder.build({ id: 'b2', sql: 'SELECT a FROM b2', actions: [{ nop: {} }] }, options, logger);
    await assert.rejects(topo.open());
    // the topology is still readable after a failed start
    assert.deepEqual(topo.printable().sources, ['source_b2']);
  } finally {
    await h.close();
  }
});

test('a source failure that is not transient ends the run through onFatal, once; transient ones are error rows', async () => {
  const h = await createHarness();
  let fail: ((err: Error) => void) | undefined;
  h.connectors.registry.declare(
    testSource('flaky', () => ({
      provision() {},
      async connect(_ctx, _emit, onError) {
        fail = onError;
      },
      async close() {},
    })),
  );
  try {
    h.ddl('CREATE STREAM fl (a BIGINT) WITH (DATASOURCE="x", TYPE="flaky")');
    const { topo, out } = await h.rule('fl', 'SELECT a FROM fl');
    const fatal: string[] = [];
    topo.onFatal((e) => fatal.push(e.message));
    fail?.(Object.assign(new Error('connection lost'), { transient: true }));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(fatal, []);
    assert.deepEqual(out, [[{ error: 'connection lost' }]]);
    fail?.(new Error('gone for good'));
    fail?.(new Error('again'));
    assert.deepEqual(fatal, ['gone for good']);
    assert.equal(topo.nodes()[0].exceptions, 3);
  } finally {
    await h.close();
  }
});

test('a bounded stream source that delivered everything ends the run through onEnd', async () => {
  const h = await createHarness();
  h.connectors.registry.declare(
    testSource('once', () => ({
      provision() {},
      async connect(_ctx, emit, _onError, onEnd) {
        setImmediate(() => {
          emit({ payload: [{ a: 1n }, { a: 2n }], meta: {}, timestamp: Date.now() });
          onEnd?.();
        });
      },
      async close() {},
    })),
  );
  try {
    h.ddl('CREATE STREAM once1 (a BIGINT) WITH (DATASOURCE="x", TYPE="once")');
    const { topo, out } = await h.rule('once', 'SELECT a FROM once1');
    const ended = await new Promise<boolean>((resolve) => {
      topo.onEnd(() => resolve(true));
      setTimeout(() => resolve(false), 2000);
    });
    assert.equal(ended, true);
    assert.deepEqual(out, [[{ a: 1n }], [{ a: 2n }]], 'every event was processed before the end was reported');
  } finally {
    await h.close();
  }
});
