import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite.js';
import { RuleService, RULE_NS } from '../../src/rules/service.js';
import { EddyError } from '../../src/core/errors.js';
import { DEFAULTS, TestEngine, silent, until } from './fixtures.js';

async function withService(
  fn: (svc: RuleService, engine: TestEngine, store: SqliteStore, reopen: () => RuleService) => Promise<void>,
) {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-rules-'));
  const store = new SqliteStore(join(dir, 'kv.db'));
  const engine = new TestEngine();
  const services: RuleService[] = [];
  const make = () => {
    const s = new RuleService({ store, logger: silent, defaults: DEFAULTS, engine, cpuSampleMs: 50 });
    services.push(s);
    return s;
  };
  try {
    await fn(make(), engine, store, make);
  } finally {
    for (const s of services) await s.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const body = (o: Record<string, unknown>) => JSON.stringify({ sql: 'SELECT * FROM s1', actions: [{ log: {} }], ...o });

async function rejects(p: Promise<unknown> | (() => unknown), code: number, message: string | RegExp) {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    assert.ok(e instanceof EddyError, String(e));
    assert.equal(e.code, code, e.message);
    if (typeof message === 'string') assert.equal(e.message, message);
    else assert.match(e.message, message);
    return;
  }
  assert.fail('expected an error');
}

test('create plans before storing: bad definitions, duplicates, unknown streams and sinks store nothing', async () => {
  await withService(async (svc, _engine, store) => {
    await rejects(svc.create('{"id":'), 1000, /^invalid rule json: Parse rule \{"id": error : .+\.$/);
    await rejects(svc.create(body({})), 1000, 'invalid rule json: Missing rule id.');
    await rejects(
      svc.create(body({ id: 'r1', sql: 'SELECT * FROM nosuch' })),
      2101,
      'fail to get stream nosuch, please check if stream is created',
    );
    await rejects(svc.create(body({ id: 'r1', actions: [{ foo: {} }] })), 2201, 'sink foo is not defined');
    assert.deepEqual(await store.keys(RULE_NS), []);
    assert.equal(await svc.create(body({ id: 'r1' })), 'r1');
    await rejects(svc.create(body({ id: 'r1' })), 1000, 'rule r1 already exists');
    assert.deepEqual(await store.keys(RULE_NS), ['r1']);
  });
});

test('list is sorted by id with name defaulting to the id; describe masks secrets', async () => {
  await withService(async (svc) => {
    await svc.create(body({ id: 'b', name: 'Hot rooms', triggered: false }));
    await svc.create(body({ id: 'a', actions: [{ mqtt: { server: 'tcp://x:1883', password: 'pw' } }] }));
    assert.deepEqual(svc.list(), [
      { id: 'a', name: 'a', status: 'Running', state: 'running' },
      { id: 'b', name: 'Hot rooms', status: 'Stopped: canceled manually.', state: 'stopped' },
    ]);
    // text naming a secret is masked and re-serialised with sorted keys (docs/rest-api.md §4.4)
    assert.equal(
      svc.describe('a'),
      '{"actions":[{"mqtt":{"password":"******","server":"tcp://x:1883"}}],"id":"a","sql":"SELECT * FROM s1"}',
    );
    assert.match(svc.exportText('a')!, /"password":"pw"/, 'export keeps the secret');
  });
});

test('update keeps the old run when the new definition cannot be planned, restores masked secrets otherwise', async () => {
  await withService(async (svc, engine) => {
    await svc.create(body({ id: 'r1', actions: [{ mqtt: { server: 'tcp://x:1883', password: 'pw' } }] }));
    const first = engine.builderScript.built[0];
    await rejects(
      svc.update('r1', body({ id: 'r1', sql: 'SELECT * FROM nosuch' })),
      2101,
      'Update rule error: fail to get stream nosuch, please check if stream is created',
    );
    assert.equal(svc.get('r1')!.sql, 'SELECT * FROM s1');
    assert.equal(first.closed, false, 'old run untouched');
    await rejects(svc.update('r1', '{'), 1000, /^Invalid body: /);
    await rejects(
      svc.update('r1', body({ id: 'r2' })),
      1000,
      'Update rule error: Invalid rule json: RuleId is not consistent with rule id.',
    );
    await rejects(
      svc.update('r1', JSON.stringify({ id: 'r1', sql: 'SELECT * FROM s1' })),
      1000,
      'Update rule error: Invalid rule json: Missing rule actions.',
    );
    await rejects(svc.update('nope', body({})), 1002, 'Rule not found: Rule nope is not found.');
    const described = JSON.parse(svc.describe('r1')) as Record<string, unknown>;
    await svc.update('r1', JSON.stringify({ ...described, sql: 'SELECT * FROM s2' }));
    assert.equal(first.closed, true, 'old run stopped');
    assert.deepEqual(svc.get('r1')!.actions, [{ mqtt: { server: 'tcp://x:1883', password: 'pw' } }]);
    assert.equal(svc.statusText('r1'), 'Running');
    assert.deepEqual(svc.rulesUsing('s2'), ['r1']);
    assert.deepEqual(svc.rulesUsing('s1'), []);
  });
});

test('an update of a stopped rule starts it unless the body says triggered false', async () => {
  await withService(async (svc) => {
    await svc.create(body({ id: 'r1', triggered: false }));
    await svc.update('r1', body({ triggered: false }));
    assert.equal(svc.statusText('r1'), 'Stopped: canceled manually.');
    await svc.update('r1', body({}));
    assert.equal(svc.statusText('r1'), 'Running');
  });
});

test('start/stop persist triggered; status objects have the documented shapes', async () => {
  await withService(async (svc, _e, store) => {
    await svc.create(body({ id: 'r1' }));
    await svc.stop('r1');
    assert.deepEqual(svc.status('r1'), {
      message: 'Stopped: canceled manually.',
      status: 'stopped',
      state: 'stopped',
      lastError: '',
      lastErrorTime: 0,
    });
    assert.equal(JSON.parse((await store.get(RULE_NS, 'r1'))!).triggered, false);
    await svc.start('r1');
    assert.equal(JSON.parse((await store.get(RULE_NS, 'r1'))!).triggered, true);
    const st = svc.status('r1');
    const keys = Object.keys(st);
    assert.deepEqual(keys.slice(0, 4), ['status', 'lastStartTimestamp', 'lastStopTimestamp', 'nextStartTimestamp']);
    assert.equal(st.status, 'running');
    assert.ok((st.lastStartTimestamp as number) > 0 && (st.lastStopTimestamp as number) > 0);
    assert.deepEqual(keys.slice(4, 14), [
      'source_s1_0_records_in_total',
      'source_s1_0_records_out_total',
      'source_s1_0_messages_processed_total',
      'source_s1_0_process_latency_us',
      'source_s1_0_process_latency_ms',
      'source_s1_0_buffer_length',
      'source_s1_0_last_invocation',
      'source_s1_0_exceptions_total',
      'source_s1_0_last_exception',
      'source_s1_0_last_exception_time',
    ]);
    assert.equal(st.source_s1_0_last_invocation, '0001-01-01T00:00:00');
    // eKuiper's keys, then Eddy's rule state and the connections of the source and the sink
    assert.equal(keys.length, 4 + 3 * 10 + 3 + 2);
    assert.deepEqual(keys.slice(34, 37), ['state', 'lastError', 'lastErrorTime']);
    assert.deepEqual(svc.statusAll(), { r1: { status: 'Running', last_exception: '', exceptions_total: 0 } });
    await rejects(() => svc.start('nope'), 1002, 'Rule nope is not found.');
  });
});

test('status/all reports the node with the latest exception', async () => {
  await withService(async (svc, engine) => {
    await svc.create(body({ id: 'r1' }));
    const [src, op, sink] = engine.builderScript.built[0].metrics;
    src.exceptions = 2;
    src.lastException = 'old';
    src.lastExceptionTime = 100;
    sink.exceptions = 5;
    sink.lastException = 'newest';
    sink.lastExceptionTime = 200;
    void op;
    assert.deepEqual(svc.statusAll().r1, { status: 'Running', last_exception: 'newest', exceptions_total: 5 });
  });
});

test('delete stops the run, forgets the rule and cleans its runtime state', async () => {
  await withService(async (svc, engine, store) => {
    await svc.create(body({ id: 'r1' }));
    await svc.delete('r1');
    assert.equal(engine.builderScript.built[0].closed, true);
    assert.deepEqual(engine.cleaned, ['r1']);
    assert.equal(svc.has('r1'), false);
    assert.deepEqual(await store.keys(RULE_NS), []);
  });
});

test('tags: replace, append without duplicates, remove, match all given tags', async () => {
  await withService(async (svc) => {
    await svc.create(body({ id: 'r1' }));
    await svc.create(body({ id: 'r2' }));
    await svc.setTags('r1', ['a', 'b']);
    await svc.addTags('r1', ['b', 'c']);
    await svc.setTags('r2', ['a']);
    assert.deepEqual(svc.get('r1')!.tags, ['a', 'b', 'c']);
    assert.deepEqual(svc.matchTags(['a']), ['r1', 'r2']);
    assert.deepEqual(svc.matchTags(['a', 'c']), ['r1']);
    assert.deepEqual(svc.matchTags([]), ['r1', 'r2']);
    await svc.removeTags('r1', ['a']);
    assert.deepEqual(svc.matchTags(['a']), ['r2']);
    assert.equal(svc.statusText('r1'), 'Running', 'tags do not restart the rule');
  });
});

test('restore: triggered rules run again, stopped ones stay stopped, unplannable ones are kept', async () => {
  await withService(async (svc, engine, store, reopen) => {
    await svc.create(body({ id: 'run' }));
    await svc.create(body({ id: 'stopped' }));
    await svc.stop('stopped');
    await svc.create(body({ id: 'gone', sql: 'SELECT * FROM s2' }));
    await store.set(RULE_NS, 'noid', JSON.stringify({ sql: 'SELECT * FROM s1', actions: [{ log: {} }] }));
    await svc.close();
    engine.streams.delete('s2');
    const again = reopen();
    await again.restore();
    assert.deepEqual(again.list(), [
      { id: 'gone', name: 'gone', status: 'Stopped: fail to create the topo.', state: 'stoppedByError' },
      { id: 'noid', name: 'noid', status: 'Running', state: 'running' },
      { id: 'run', name: 'run', status: 'Running', state: 'running' },
      { id: 'stopped', name: 'stopped', status: 'Stopped: canceled manually.', state: 'stopped' },
    ]);
    await rejects(
      () => again.topo('gone'),
      1001,
      "Fail to get rule gone's topo, make sure the rule has been started before",
    );
    assert.deepEqual(again.topo('stopped').sources, ['source_s1'], 'a stopped rule has a topology');
  });
});

test('keepUnplannable (imports) stores a rule that cannot be planned', async () => {
  await withService(async (svc) => {
    await svc.create(body({ id: 'r1', sql: 'SELECT * FROM nosuch' }), { keepUnplannable: true });
    assert.equal(svc.statusText('r1'), 'Stopped: fail to create the topo.');
  });
});

test('validate and explain', async () => {
  await withService(async (svc) => {
    const text = body({ id: 'v', sql: 'SELECT * FROM s1 INNER JOIN s2 ON s1.a = s2.a' });
    assert.deepEqual(svc.validate(text, JSON.parse(text)), { sources: ['s1', 's2'], valid: true });
    await svc
      .create(body({ id: 'g', sql: undefined, actions: [], graph: { nodes: { a: {} }, topo: { sources: ['a'] } } }))
      .catch(() => undefined);
    await svc.create(body({ id: 'e' }));
    assert.match(svc.explain('e'), /ProjectPlan/);
  });
});

test('CPU usage: every rule listed with integer ms over the window', async () => {
  await withService(async (svc, engine) => {
    await svc.create(body({ id: 'r1' }));
    await svc.create(body({ id: 'r2', triggered: false }));
    engine.builderScript.built[0].metrics[1].busyUs = 250_000;
    await until(() => svc.cpuUsage().r1 === 250, 10_000, 'usage');
    assert.deepEqual(svc.cpuUsage(), { r1: 250, r2: 0 });
  });
});

test('a rule with logFilename logs into its own file in the log folder', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-rules-log-'));
  const store = new SqliteStore(join(dir, 'kv.db'));
  const svc = new RuleService({ store, logger: silent, defaults: DEFAULTS, engine: new TestEngine(), logDir: dir });
  try {
    await svc.create(body({ id: 'r1', options: { logFilename: 'r1.log' } }));
    await svc.stop('r1');
    await svc.delete('r1');
    await until(
      () => existsSync(join(dir, 'r1.log')) && readFileSync(join(dir, 'r1.log'), 'utf8').includes('rule started'),
      10_000,
      'log line',
    );
  } finally {
    await svc.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a rule is planned once per create, start and update: the stream names come from the built topology', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-rules-once-'));
  const store = new SqliteStore(join(dir, 'kv.db'));
  const engine = new TestEngine();
  let builds = 0;
  let validations = 0;
  let building = false;
  const build = engine.builder.build;
  engine.builder = {
    build: (def, o) => {
      builds++;
      building = true;
      try {
        return build(def, o);
      } finally {
        building = false;
      }
    },
  };
  const validate = engine.validate;
  const counted = Object.assign(engine, {
    // the test builder checks the SQL itself; only checks outside a build are a second planning pass
    validate: (sql: string) => {
      if (!building) validations++;
      return validate(sql);
    },
    // what the real engine reads from the plan of a RuleTopology
    sourcesOf: () => ['s1'],
  });
  const svc = new RuleService({ store, logger: silent, defaults: DEFAULTS, engine: counted });
  try {
    await svc.create(body({ id: 'r1' }));
    assert.equal(builds, 1);
    await svc.start('r1');
    assert.equal(builds, 2);
    await svc.update('r1', body({ id: 'r1', triggered: false }));
    assert.equal(builds, 3);
    assert.equal(validations, 0, 'no second planning pass for the stream names');
    assert.deepEqual(svc.rulesUsing('s1'), ['r1']);
  } finally {
    await svc.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
