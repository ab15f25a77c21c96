import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RuleState } from '../../src/rules/state.js';
import { restartDelay } from '../../src/rules/schedule.js';
import type { RuleDef, RuleOptions } from '../../src/contracts/index.js';
import { ScriptedBuilder, type TestTopology, options, silent, until } from './fixtures.js';

const def: RuleDef = { id: 'r1', sql: 'SELECT * FROM s1', actions: [{ log: {} }] };

function stateWith(o: RuleOptions, builder: ScriptedBuilder): RuleState {
  return new RuleState(def, o, { logger: silent, build: builder.build, random: () => 0.5, closeTimeoutMs: 1000 });
}

test('start reports Running at once; stop closes the topology and says canceled manually', async () => {
  const b = new ScriptedBuilder();
  const s = stateWith(options(), b);
  assert.equal(s.statusText(), 'Stopped: canceled manually.');
  const topo = b.build(def, options());
  await s.start(topo);
  assert.equal(s.statusText(), 'Running');
  assert.ok(s.lastStart > 0);
  await until(() => topo.opened, 10_000, 'open');
  await s.stop();
  assert.equal(topo.closed, true);
  assert.equal(s.statusText(), 'Stopped: canceled manually.');
  assert.ok(s.lastStop >= s.lastStart);
  assert.deepEqual(s.printable()?.sources, ['source_s1'], 'the topology stays printable after stop');
});

test('an open failure with no restart attempts stops the rule with the error text', async () => {
  const b = new ScriptedBuilder([new Error('found error when connecting for tcp://b:1883: network unreachable')]);
  const s = stateWith(options(), b);
  await s.start(b.build(def, options()));
  await until(() => s.phase === 'stopped', 10_000, 'stopped');
  assert.equal(s.statusText(), 'Stopped: found error when connecting for tcp://b:1883: network unreachable.');
  assert.equal(b.built.length, 1);
});

test('a run whose bounded sources finished stops without a restart', async () => {
  const b = new ScriptedBuilder();
  const o = options({ restartStrategy: { attempts: 3, delay: 10, multiplier: 2, maxDelay: 40, jitterFactor: 0.1 } });
  const s = stateWith(o, b);
  const topo = b.build(def, o);
  await s.start(topo);
  await until(() => topo.opened, 10_000, 'open');
  topo.endNow();
  await until(() => s.phase === 'stopped', 10_000, 'stopped');
  assert.equal(topo.closed, true);
  // the rule finished by itself: the status says so rather than blaming a user
  assert.equal(s.statusText(), 'Stopped: finished, its source ended and every record was delivered.');
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(b.built.length, 1, 'no restart after a clean end');
});

test('the restart strategy retries `attempts` times with fresh topologies, then stops with the last error', async () => {
  const b = new ScriptedBuilder([new Error('boom')]);
  const o = options({ restartStrategy: { attempts: 2, delay: 10, multiplier: 2, maxDelay: 40, jitterFactor: 0.1 } });
  const s = stateWith(o, b);
  await s.start(b.build(def, o));
  assert.equal(s.statusText(), 'Running', 'still running while restarts are pending');
  await until(() => s.phase === 'stopped', 10_000, 'stopped');
  assert.equal(b.built.length, 3, 'first run + 2 restarts');
  assert.equal(s.statusText(), 'Stopped: boom.');
  for (const t of b.built) assert.equal(t.closed, true, 'each failed run is closed');
});

test('a restart that succeeds keeps the rule running; a later fatal error restarts it again', async () => {
  const b = new ScriptedBuilder([new Error('first fails'), 'ok']);
  const o = options({ restartStrategy: { attempts: 3, delay: 10, multiplier: 1, maxDelay: 10, jitterFactor: 0.5 } });
  const s = stateWith(o, b);
  await s.start(b.build(def, o));
  await until(() => b.built.length === 2 && b.built[1].opened, 10_000, 'second run open');
  assert.equal(s.statusText(), 'Running');
  b.built[1].failNow(new Error('source lost'));
  await until(() => b.built.length === 3 && b.built[2].opened, 10_000, 'third run open');
  assert.equal(b.built[1].closed, true);
  assert.equal(s.statusText(), 'Running');
  await s.stop();
});

test('stop during a pending restart cancels it', async () => {
  const b = new ScriptedBuilder([new Error('boom')]);
  const o = options({ restartStrategy: { attempts: 5, delay: 200, multiplier: 1, maxDelay: 200, jitterFactor: 0.1 } });
  const s = stateWith(o, b);
  await s.start(b.build(def, o));
  await until(() => b.built[0].closed, 10_000, 'first run closed');
  await s.stop();
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(b.built.length, 1, 'no restart after stop');
  assert.equal(s.statusText(), 'Stopped: canceled manually.');
});

test('restart delays grow by the multiplier, are capped at maxDelay and jittered within the factor', () => {
  const r = { attempts: 10, delay: 1000, multiplier: 2, maxDelay: 30000, jitterFactor: 0.1 };
  const mid = () => 0.5;
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5, 6].map((n) => restartDelay(r, n, mid)),
    [1000, 2000, 4000, 8000, 16000, 30000, 30000],
  );
  assert.equal(
    restartDelay(r, 0, () => 0),
    900,
  );
  assert.equal(
    restartDelay(r, 0, () => 0.999999),
    1100,
  );
  assert.ok(restartDelay(r, 10, () => 0.999999) <= 30000, 'never above maxDelay');
});

test('update replaces the topology; triggered false keeps the new plan stopped', async () => {
  const b = new ScriptedBuilder();
  const s = stateWith(options(), b);
  const first = b.build(def, options());
  await s.start(first);
  const second = b.build(def, options());
  await s.replace({ ...def, sql: 'SELECT a FROM s1' }, options(), second, true);
  assert.equal(first.closed, true);
  await until(() => second.opened, 10_000, 'second open');
  assert.equal(s.def.sql, 'SELECT a FROM s1');
  const third = b.build(def, options());
  await s.replace(def, options(), third, false);
  assert.equal(second.closed, true);
  assert.equal(third.opened, false);
  assert.equal(s.statusText(), 'Stopped: canceled manually.');
});

test('periodic rule: runs for `duration` at each cron firing, then waits for the next one', async () => {
  const b = new ScriptedBuilder();
  const o = options({ cron: '@every 1s', duration: '300ms' });
  const s = stateWith(o, b);
  await s.start(b.build(def, o));
  // like Go's @every, a firing window may already be open at start (catch-up)
  assert.match(s.statusText(), /^(Stopped: waiting for next schedule\.|Running)$/);
  assert.ok(s.nextStart() > Date.now() - 10, 'nextStartTimestamp set');
  await until(() => s.phase === 'waiting', 10_000, 'waiting');
  // a firing builds a fresh topology; polling the phase could miss a 300 ms window on a stalled event loop
  const beforeFiring = b.built.length;
  await until(() => b.built.length > beforeFiring, 10_000, 'cron firing');
  await until(() => s.phase === 'waiting', 10_000, 'end of window');
  assert.equal(b.built[beforeFiring].closed, true, 'the run is closed at the end of its window');
  assert.equal(s.statusText(), 'Stopped: waiting for next schedule.');
  const runs = b.built.length;
  await until(() => b.built.length > runs, 10_000, 'second firing');
  await s.stop();
  assert.equal(s.statusText(), 'Stopped: canceled manually.');
  assert.equal(s.nextStart(), 0);
  const after = b.built.length;
  await new Promise((r) => setTimeout(r, 1200));
  assert.equal(b.built.length, after, 'stop removes the schedule');
});

test('periodic rule started inside a firing window runs at once (catch-up)', async () => {
  const b = new ScriptedBuilder();
  // fires every second and each run lasts 10 s: "now" is always inside a window
  const o = options({ cron: '* * * * * *', duration: '10s' });
  const s = stateWith(o, b);
  await s.start(b.build(def, o));
  assert.equal(s.statusText(), 'Running');
  await s.stop();
});

test('failed scheduled starts are counted in the status text', async () => {
  const b = new ScriptedBuilder(['ok', 'throw']);
  const o = options({ cron: '@every 1s', duration: '200ms' });
  const s = stateWith(o, b);
  await s.start(b.build(def, o));
  await until(() => s.startFailed >= 1, 10_000, 'a failed firing');
  assert.match(s.statusText(), /^Stopped: waiting for next schedule\. Start failed count: \d+\.$/);
  await s.stop();
});

test('datetime ranges: past ranges terminate the schedule, future ones wait, the patrol opens them', async () => {
  const b = new ScriptedBuilder();
  const past = options({ cronDatetimeRange: [{ beginTimestamp: 1000, endTimestamp: 2000 }] });
  const s1 = stateWith(past, b);
  await s1.start(b.build(def, past));
  assert.equal(s1.statusText(), 'Stopped: schedule terminated.');

  const now = Date.now();
  const future = options({ cronDatetimeRange: [{ beginTimestamp: now + 60000, endTimestamp: now + 120000 }] });
  const s2 = stateWith(future, b);
  await s2.start(b.build(def, future));
  assert.equal(s2.statusText(), 'Stopped: waiting for next schedule.');
  await s2.patrol(now + 90000);
  assert.equal(s2.statusText(), 'Running');
  await s2.patrol(now + 100000000);
  assert.equal(s2.statusText(), 'Stopped: schedule terminated.');

  const open = options({ cronDatetimeRange: [{ beginTimestamp: now - 1000, endTimestamp: now + 60000 }] });
  const s3 = stateWith(open, b);
  await s3.start(b.build(def, open));
  assert.equal(s3.statusText(), 'Running');
  await s3.stop();
});

test('busy time survives restarts (CPU usage)', async () => {
  const b = new ScriptedBuilder();
  const s = stateWith(options(), b);
  const t1 = b.build(def, options()) as TestTopology;
  await s.start(t1);
  t1.metrics[1].busyUs = 5000;
  const t2 = b.build(def, options()) as TestTopology;
  await s.start(t2);
  t2.metrics[0].busyUs = 1000;
  assert.equal(s.busyUs(), 6000);
  await s.stop();
});
